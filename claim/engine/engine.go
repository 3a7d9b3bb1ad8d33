package engine

import (
	"context"
	"time"
)

// Engine is one database engine's side of a Store: its transaction frame,
// its reads outside a write, its change signal, the meaning of its
// driver's errors. A Store gets its engine once, opened for the workspace
// (package claim/engines), and never asks which one it has: where engines
// differ, the engine's method says so.
//
// Two engines implement it: claim/sqlite (bd v0.27-v0.50: one writer at a
// time behind a kernel queue of bd-claim's writers and BEGIN IMMEDIATE) and
// claim/dolt (bd v1.3.x: a server-wide named lock or the embedded engine's
// own, optimistic commits, a Dolt commit after the SQL commit). The
// conformance suite (claim/conformance) holds them to one behaviour.
type Engine interface {
	// Flavor is what the workspace's bd is, for the rules.
	Flavor() Flavor
	// Update runs fn in one write transaction of the engine's frame, at
	// the place ahead in the engine's queue of writers (a claim-next's,
	// from Ahead; zero for none), tried again whole while the engine finds
	// the try worth repeating, each try at the clock read anew. An engine
	// may stop waiting for its turn when ctx ends (nothing is written
	// then, and the error is ctx's); once its transaction has begun, a
	// write runs to its end whatever becomes of ctx.
	Update(ctx context.Context, ahead Ahead, fn func(Tx) error) error
	// Ahead reads, before the write lock, the first candidates of a
	// claim-next of spec, and takes a place in the queue of writers for
	// its turn (a zero Ahead when the engine does not read ahead).
	Ahead(ctx context.Context, spec Spec) (Ahead, error)
	// Look runs fn outside any transaction: a dry run, an explanation,
	// another read that needs no snapshot.
	Look(ctx context.Context, fn func(Tx) error) error
	// Snapshot runs fn in one read transaction, without the write lock:
	// stats reads every figure in it.
	Snapshot(ctx context.Context, fn func(Tx) error) error
	// Watch opens the database's change signal: a value that is new after
	// another connection's commit and stays the same while nothing is
	// written ("" when it cannot be read); stop closes what it opened.
	Watch(ctx context.Context) (signal func() string, stop func(), err error)
	// Code reads an error of the engine's driver: bd-claim's code for it
	// and what to do; ok false for an error it does not know.
	Code(err error) (c Code, what string, ok bool)
	Close() error
}

// Config is what an engine is opened with: the Store's options, with
// their defaults.
type Config struct {
	// BusyTimeout is how long a writer waits for the other writers
	// (negative: not at all; 0: the engine's default, which it documents).
	BusyTimeout time.Duration
	Retry       Retry            // the tries of a write transaction that found the database busy
	Now         func() time.Time // the clock, read at the start of every transaction
	Policy      Policy           // the failure policy
}

// Ahead is what a claim-next read before its turn (Engine.Ahead): its
// first candidates, and its place in the engine's queue of writers.
type Ahead struct {
	IDs   []string // the first candidates, in claim order
	Place any      // the engine's place in its queue, from which Update takes the turn
	Leave func()   // gives the place up, for a claim that ends before its turn (nil for none)
}

// Tx is one operation of a Store on the engine's database, at one instant:
// a write transaction (Engine.Update), or a read (Look, Snapshot). Each
// method is a move of the claim lifecycle as the workspace's bd writes it,
// or a read that a decision of package claim needs.
type Tx interface {
	// Now is the instant the operation acts at.
	Now() time.Time
	// State reads issue id's status, holder and current claim;
	// ISSUE_NOT_FOUND when there is no such issue.
	State(id string) (State, error)
	// Lookalikes reads what resolves a partial issue id: the workspace's
	// issue prefix ("" without one) and the ids that contain part (a
	// bounded number).
	Lookalikes(part string) (prefix string, ids []string, err error)
	// Held lists every in_progress issue with its claim, by holder then id.
	Held() ([]State, error)
	// HeldCount counts the in_progress issues agent holds.
	HeldCount(agent string) (int64, error)
	// CustomTypes lists the workspace's own issue types as its bd reads
	// them from the database, unparsed: each a comma-separated list or a
	// JSON array.
	CustomTypes() ([]string, error)
	// Eligible reads what the workspace's bd lets a claim by id take
	// beyond an open issue assigned to nobody or to the claiming agent, as
	// that bd reads it from the workspace's configuration; zero where it
	// takes nothing more.
	Eligible() (Eligible, error)
	// Next reads the issue a claim-next of spec takes: the first
	// claimable of head (the candidates read ahead), else of spec, in
	// claim order; nil when none is. An in_progress issue (a takeover)
	// comes with its claim (Row.Claim).
	Next(spec Spec, head []string) (*Row, error)
	// Find reads issue id when spec admits it, as Next reads it; nil when
	// spec refuses it.
	Find(spec Spec, id string) (*Row, error)
	// Verdicts evaluates every rule of spec for issue id, in order.
	Verdicts(spec Spec, id string) ([]bool, error)
	// Failures reads issue id's failure history as the policy judges it
	// (none for an id the failure policy does not count: a Dolt wisp).
	Failures(id string) (FailureHistory, error)
	// Read loads issue id for a write.
	Read(id string) (*Row, error)
	// BdJSON is issue id, as it is now, as the workspace's bd prints it
	// in the list its own claim prints with --json: `bd ready --claim
	// --json`'s (a claim-next) or `bd update ID --claim --json`'s (byID),
	// in bd's key order and form, compact. Where the two differ and what
	// each holds is the engine's bd's (the SQLite releases print their
	// update's for both).
	BdJSON(id string, byID bool) ([]byte, error)
	// Take writes claim c as the workspace's bd writes one: a takeover
	// ends the expired claim first (EndClaim); a claim the agent holds
	// already has its lease renewed (Renew) when c asks for it, and
	// nothing else written.
	Take(c Claim) (Taken, error)
	// Unclaim writes agent's release of r as the workspace's bd records a
	// release, with the protocol's note (ReleaseComment: a failed attempt,
	// and the reason) where bd's footprint has room; r is left as written.
	Unclaim(r *Row, agent string, failed bool, reason string) error
	// EndClaim ends the claim of r by holder, with bd-claim's note: r is
	// open and unassigned after it, as it now is.
	EndClaim(r *Row, actor, holder, note string) error
	// Closable refuses (NOT_CLAIMABLE) the close of issue id that the
	// engine's bd close refuses; nil when bd would close it. A workspace
	// whose bd's close bd-claim does not write is refused
	// (SCHEMA_INCOMPATIBLE).
	Closable(id string) error
	// Close writes actor's close of r with reason as `bd close ID
	// --reason` writes it, and whatever that bd recomputes for the issues
	// the close unblocks. r is left as written.
	Close(r *Row, actor, reason string) error
	// Renew extends agent's lease of issue id (claim c) by d, else by the
	// lease's own length.
	Renew(id, agent string, c State, d time.Duration) (*Lease, error)
	// Label adds or removes a label of r as bd's label command does, and
	// records the change; nothing when there is nothing to change.
	Label(r *Row, actor, label string, add bool) error
	// Comment adds a comment on r as `bd comments add` does.
	Comment(r *Row, author, text string) error
	// ResetMark records a reset: failed attempts before it stop counting.
	ResetMark(r *Row, actor, comment string) error
	// Figures reads the counts of stats: spec is built for a new agent
	// without filters.
	Figures(spec Spec, since time.Time) (Figures, error)
	// Explain counts what each rule of spec excludes.
	Explain(spec Spec) (Explained, error)
}

// Claim is a claim for Tx.Take to write.
type Claim struct {
	Row   *Row
	Agent string
	ByID  bool          // an --id claim (bd update --claim), else claim-next (bd ready --claim)
	Lease time.Duration // the lease asked for; 0 for none
	// Held is the agent's claim of Row when it holds it already (an --id
	// re-claim, or the issue a --resume returns): nothing is written but
	// its lease, renewed as Tx.Renew renews it (by Lease, else by its own
	// length) when Renew is set.
	Held  *State
	Renew bool
	// Ended is the note of the end of Row's expired claim (Row.Claim),
	// which Take ends first (Tx.EndClaim, Agent its actor); "" when Row
	// has no claim to end.
	Ended string
}

// Eligible is what a claim by id may take beyond an open issue assigned
// to nobody or to the claiming agent (Tx.Eligible).
type Eligible struct {
	// Statuses are the statuses other than open that it takes an issue
	// from (bd v1.3: the custom statuses of category active).
	Statuses []string
	// Pools are the assignees that stand for a group, any of whose
	// members may take an issue assigned to one (bd v1.3: claim.pools).
	Pools []string
}

// Taken is what Tx.Take wrote: the claim's id, and the lease it wrote (nil
// for none: a re-claim that asks for no lease keeps the one it has).
type Taken struct {
	ClaimID int64
	Lease   *Lease
}

// Figures are the counts of stats.
type Figures struct {
	Open, Blocked   int
	ReadyByPriority [Priorities]int
	Takeovers       int // in_progress issues among the ready ones
	BdReady         int // what bd ready -u lists
	// Failing are the open issues with failed attempts or the abandoned
	// label, by id.
	Failing []Failing
	Events  EventCounts // since the time asked for
}

// Failing is an issue's failure history.
type Failing struct {
	ID string
	FailureHistory
}

// EventCounts are the lifecycle events of a period.
type EventCounts struct {
	Claims   int `json:"claims"`   // claim events (bd's own claims included)
	Releases int `json:"releases"` // bd-claim release
	Failures int `json:"failures"` // bd-claim release --failed
	Reclaims int `json:"reclaims"` // expired leases taken over or reaped
	Closes   int `json:"closes"`   // closed events (bd's own closes included)
}

// Explained are the counts of an explanation (Spec.Explain): the open
// issues, those the status rule admits (open plus takeovers), the
// claimable ones, and per rule but the status (Spec.Rules[1:]) the open
// issues it excludes.
type Explained struct {
	Open, Admitted, Claimable int
	Excluded                  []int
}
