// Package claim is bd-claim's domain: it atomically claims one ready issue
// of a Beads workspace for an agent, so that no two successful claims
// return the same issue, and writes the claim as the workspace's bd would.
// It holds the public API (Store, Request, Result, Error and its codes,
// Settings, Policy), the readiness rules (ReadySpec: their names, reasons
// and order) and the decisions of the claim lifecycle (release, backoff,
// abandonment, leases and fencing, capacity, waiting, close). It never asks
// which database engine it talks to: an engine (package claim/engine's
// Engine, opened by package claim/engines) says where engines differ.
//
//	ws, err := workspace.Find(workspace.Locate{Start: ".", Getenv: os.Getenv})
//	store, err := engines.Open(ctx, ws, claim.Options{})
//	res, err := store.Claim(ctx, claim.Request{Agent: "worker-1"})
package claim

import (
	"sync"
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// Options configure a Store.
type Options struct {
	// BusyTimeout is how long a writer waits for the other writers: 0
	// means the engine's default (SQLite: 5s per try; Dolt: as long as the
	// writers ahead make progress), a negative value not at all.
	BusyTimeout time.Duration
	// Retry bounds the tries after busy timeouts (default 3 tries, 25ms)
	// where the engine retries them (SQLite); a Dolt engine waits for its
	// turn instead (BusyTimeout) and retries a transaction that lost a
	// conflict up to 50 times on its own.
	Retry Retry
	// Now is the clock (default time.Now), read at the start of every
	// transaction.
	Now func() time.Time
	// Policy is the failure policy (default DefaultPolicy).
	Policy *Policy
	// LookEvery is how often a claim with Request.Wait looks again when
	// the database's change signal has not moved (default 2s): what
	// changes with the clock alone (a lease, a backoff or a defer_until
	// ending) is seen this late at most.
	LookEvery time.Duration
}

// Retry bounds how often a write transaction is tried again after it found
// the database busy: Attempts tries in all, the pause after the first
// Backoff, doubled each time up to 1s, with ±50% jitter.
type Retry = engine.Retry

// Config is what an engine is opened with for these options, their
// defaults filled in (package claim/engines opens the workspace's engine
// with it).
func (o Options) Config() engine.Config {
	c := engine.Config{BusyTimeout: o.BusyTimeout, Retry: o.Retry, Now: o.Now, Policy: DefaultPolicy}
	if c.Retry.Attempts < 1 {
		c.Retry = Retry{Attempts: 3, Backoff: 25 * time.Millisecond}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if o.Policy != nil {
		c.Policy = *o.Policy
	}
	return c
}

// Store claims issues in one Beads database. Open it once (claim/engines
// Open), claim many times; it is safe for concurrent use.
type Store struct {
	Workspace Workspace
	eng       engine.Engine
	flavor    engine.Flavor
	policy    Policy
	now       func() time.Time // the clock, for what is read outside a transaction (Engine.Ahead)
	lookEvery time.Duration    // Options.LookEvery
	writing   sync.Mutex       // held for a write transaction
}

// New is a Store on the workspace ws, whose database e has opened with
// o.Config(). A program opens one with claim/engines.Open, which picks the
// engine.
func New(ws Workspace, e engine.Engine, o Options) *Store {
	c := o.Config()
	s := &Store{Workspace: ws, eng: e, flavor: e.Flavor(), policy: c.Policy, now: c.Now, lookEvery: o.LookEvery}
	if s.lookEvery <= 0 {
		s.lookEvery = defaultLookEvery
	}
	return s
}

// Version is the bd release whose writes the Store reproduces: the one
// that last wrote a SQLite workspace, the supported bd v1.3 release on
// Dolt.
func (s *Store) Version() Version { return s.flavor.Version }

// BdJSONEnvelope says whether the workspace's bd wraps what it prints with
// --json in {"data": ..., "schema_version": 1} when the environment has
// BD_JSON_ENVELOPE=1 (bd v1.3 does, the SQLite releases do not): what
// prints Result.BdJSON as bd would follows it.
func (s *Store) BdJSONEnvelope() bool { return s.flavor.JSONEnvelope }

// ScopesByDirectory says whether the workspace's bd ready, run without a
// label flag, scopes its list to the label that config directory.labels
// gives its directory (Settings.DirectoryLabel): bd v0.31.0 and later do.
// A claim-next without a label filter is scoped alike only then.
func (s *Store) ScopesByDirectory() bool { return s.flavor.DirectoryLabels }

// Version is a bd release, major.minor.patch.
type Version = engine.Version

// ParseVersion reads "0.49.6" (a leading v and a suffix after - or space are ignored).
func ParseVersion(v string) (Version, bool) { return engine.ParseVersion(v) }

// Close releases the database.
func (s *Store) Close() error { return s.eng.Close() }

// Issue is a claimed (or, in a dry run, claimable) issue as the JSON
// contract shows it.
type Issue = engine.Issue

// Lease is a claim's lease: the claim may be taken over once Until passes.
type Lease = engine.Lease

// Holder is an agent holding an issue under one claim.
type Holder = engine.Holder

// Sort is the order in which ready issues are handed out.
type Sort = engine.Sort

// The sort policies. SortPriority is bd-claim's default; SortHybrid and
// SortOldest reproduce `bd ready --sort hybrid|oldest`.
const (
	SortPriority = engine.SortPriority // priority ASC, created_at ASC, id ASC
	SortHybrid   = engine.SortHybrid   // issues created in the last 48h by priority, then older ones by age
	SortOldest   = engine.SortOldest   // created_at ASC, id ASC
)

// Policy is the workspace-wide failure policy: how long an issue waits
// after a failed attempt, and when it is abandoned. Every agent of a
// workspace should run with the same policy (put it in .beads/config.yaml).
type Policy = engine.Policy

// DefaultPolicy is seed 004's policy: 1m, doubling, at most 1h, abandoned
// after 5 failures, labelled claim:abandoned.
var DefaultPolicy = engine.DefaultPolicy

// EventCounts are the lifecycle events of a period.
type EventCounts = engine.EventCounts
