// Package dolt is bd-claim's engine for Beads Dolt workspaces (bd v1.3.x)
// in each of bd's modes: a dolt sql-server (server mode, over the MySQL
// protocol), bd's proxy (proxied-server mode) and the embedded engine
// (embedded mode, in the embedded build only: build tags embedded and
// gms_pure_go). It opens and checks the database (schema, project),
// takes turns with other writers (a server-wide named lock, or the
// embedded engine's own), writes each move of the claim lifecycle as bd
// v1.3.0 writes it, makes the Dolt commit bd makes, and maps the server's
// errors to bd-claim's codes. Its queries are sqlc's, in package db/dolt
// (from sql/dolt/queries).
package dolt

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/go-sql-driver/mysql"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/db"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// A Dolt workspace (bd v1.3.x in server mode) is the same claim over
// another engine: the issues row moves with a compare-and-swap on row_lock
// (Dolt has no row locks; its optimistic commit fails the second of two
// conflicting transactions with error 1213, and the whole transaction is
// tried again), bd's leases table holds the lease, the claimed event has
// bd's content-derived id, and after the SQL commit a Dolt commit records
// the issues change as bd makes it.

// doltSchema is the main-series migration of the bd release whose Dolt
// schema is vendored (sql/dolt/bd-v1.3.0.sql).
const doltSchema = 66

// doltLease is bd's fixed lease (issueops.DefaultLeaseTTL): what a claim
// without --lease gets, as `bd update --claim` writes it.
const doltLease = 5 * time.Minute

// doltStyle is what differs in what the bd of a link's mode writes: its
// Dolt commits (who authors them, what they stage, the messages that
// differ between modes; the others are the same in every mode: bd: claim
// ready ID, bd: update ID), whether an event's old_value JSON lists the
// issue's labels, and how its claims' --json reads the issue.
type doltStyle struct {
	doltCommitter // a claim's commits, and a label change's
	// swept is who makes the commits of a release (bd unclaim) and of a
	// write that only ended expired claims (bd reclaim): in embedded mode,
	// bd's auto-commit after the command, which sweeps the working set
	// in; in the others, the same as the claim's.
	swept doltCommitter
	// label is a label change's message (bd label add/remove ID's),
	// unclaim a release's by actor, and reclaim that of a write by actor
	// that only ended expired claims (bd reclaim's).
	label   func(verb, id string) string
	unclaim func(id, actor string) string
	reclaim func(ids []string, actor string) string
	// updateLabels: a claim by id (bd update --claim) shows the issue's
	// labels, in the old_value of its claimed event and in its --json.
	// Server and embedded mode claim through issueops, which reads them;
	// proxied mode through its issue repository, which does not, and its
	// --json strips them (its claim-next, through issueops, lists them
	// in both).
	updateLabels bool
	// uow: a claim-next's --json hydrates the issue through the proxied
	// unit of work's repositories, not through issueops (bdjson.go).
	uow bool
	// spacedJSON: the link hands bd a JSON column's text as MySQL prints
	// JSON, spaced ({"k": "v"}); a server's wire sends a column compact
	// ({"k":"v"}) and a computed JSON spaced, as the embedded engine both.
	spacedJSON bool
}

// doltCommitter is who authors a Dolt commit and what it stages.
type doltCommitter struct {
	author string
	all    bool // DOLT_COMMIT('-Am'), else DOLT_ADD of the tables the write changed (Commit)
}

// bdCommitter is bd's committer, beads <beads@local>, the tables staged by
// name (its storage layer's commits).
var bdCommitter = doltCommitter{author: "beads <beads@local>"}

// bdUnclaim is bd unclaim's message in server and proxied mode.
func bdUnclaim(id, _ string) string { return "bd: unclaim " + id }

// bdStyle are bd's Dolt commits in server mode, authored by bd's
// committer.
var bdStyle = doltStyle{
	doltCommitter: bdCommitter, swept: bdCommitter,
	label:        func(verb, id string) string { return "bd: label " + verb + " " + id },
	unclaim:      bdUnclaim,
	reclaim:      func(ids []string, _ string) string { return fmt.Sprintf("bd: reclaim %d expired lease(s)", len(ids)) },
	updateLabels: true,
}

// embeddedStyle are bd's Dolt commits in embedded mode: a claim's and a
// label change's as server mode's, by bd's committer (a label change is an
// issue update there, "bd: update ID"); bd unclaim and bd reclaim leave
// theirs to the auto-commit that follows the command (DOLT_COMMIT('-Am')
// without an author: the engine's session user, root <root@%>), with its
// message (bdAutoCommit).
var embeddedStyle = doltStyle{
	doltCommitter: bdCommitter,
	swept:         doltCommitter{author: "root <root@%>", all: true},
	label:         func(_, id string) string { return "bd: update " + id },
	unclaim:       func(_, actor string) string { return bdAutoCommit("unclaim", actor, nil) },
	reclaim:       func(ids []string, actor string) string { return bdAutoCommit("reclaim", actor, ids) },
	updateLabels:  true,
	spacedJSON:    true,
}

// bdAutoCommit is the message of bd's auto-commit after command cmd by
// actor (formatDoltAutoCommitMessage): the issues it names, sorted, at
// most five.
func bdAutoCommit(cmd, actor string, ids []string) string {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return fmt.Sprintf("bd: %s (auto-commit) by %s", cmd, actor)
	}
	return fmt.Sprintf("bd: %s (auto-commit) by %s [%s]", cmd, actor, strings.Join(ids[:min(len(ids), 5)], ", "))
}

// proxiedCommitter is bd's in proxied-server mode: its unit of work
// commits with DOLT_COMMIT('-Am', message) and no author, so the session's
// user authors them (root <root@localhost>).
var proxiedCommitter = doltCommitter{author: "root <root@localhost>", all: true}

// proxiedStyle are bd's Dolt commits in proxied-server mode, all by its
// committer: a label change is an issue update without a message of its
// own ("update issue"); bd reclaim names the issues; its claim by id's
// event and --json have no labels; its claim-next's --json is the unit of
// work's.
var proxiedStyle = doltStyle{
	doltCommitter: proxiedCommitter, swept: proxiedCommitter,
	label:   func(string, string) string { return "update issue" },
	unclaim: bdUnclaim,
	reclaim: func(ids []string, _ string) string { return "bd: reclaim " + strings.Join(ids, ", ") },
	uow:     true,
}

// doltTime is how bd binds events.created_at: UTC, whole seconds, as text.
const doltTime = "2006-01-02 15:04:05"

// Engine is the engine of a Dolt workspace (bd v1.3.x): bd-claim's
// writers take turns (a server-wide named lock, or the embedded engine's
// own lock on its files), a write is tried again after Dolt's optimistic
// commit failed it, and a Dolt commit follows the SQL commit as bd makes
// it. It reaches its database through a link: a server's pool, bd's proxy,
// or the embedded engine.
type Engine struct {
	link   doltLink  // the server, the proxy, or the embedded engine
	style  doltStyle // the link's bd's Dolt commits
	dq     *doltdb.Queries
	cfg    engine.Config
	retry  engine.Retry
	path   string             // the database, as messages name it
	server *engine.DoltServer // the server a server link reaches, for messages (nil otherwise)
	beads  string             // the workspace's .beads directory ("" for a --dsn connection)
	// faults, when set (by this package's tests), wraps the handle every
	// query runs on, to make chosen statements fail.
	faults func(db.DBTX) db.DBTX
}

// OpenServer opens the database of a Dolt workspace in server mode (bd
// v1.3's `bd init --server`, or --dsn), on server d; beadsDir is the
// workspace's .beads ("" for a --dsn connection, which holds no gates).
func OpenServer(ctx context.Context, d engine.DoltServer, beadsDir string, c engine.Config) (*Engine, error) {
	e := &Engine{server: &d, path: d.String(), beads: beadsDir}
	return e.open(ctx, newServerLink(&d, beadsDir, c.BusyTimeout), d.ProjectID, c)
}

// OpenProxied opens the database of a Dolt workspace in proxied-server
// mode (bd v1.3's `bd init --proxied-server`), through its proxy.
func OpenProxied(ctx context.Context, p engine.ProxiedDolt, beadsDir string, c engine.Config) (*Engine, error) {
	e := &Engine{path: filepath.Join(p.Root, p.Database), beads: beadsDir}
	return e.open(ctx, newProxiedLink(&p, beadsDir, c.BusyTimeout), p.ProjectID, c)
}

// OpenEmbedded opens the database of a Dolt workspace in embedded mode (bd
// v1.3's default), in the embedded build; the default build refuses it
// (SCHEMA_INCOMPATIBLE) at its first operation.
func OpenEmbedded(ctx context.Context, m engine.EmbeddedDolt, beadsDir string, c engine.Config) (*Engine, error) {
	e := &Engine{path: filepath.Join(m.Dir, m.Database), beads: beadsDir}
	return e.open(ctx, newEmbeddedLink(&m, beadsDir, c.BusyTimeout), m.ProjectID, c)
}

// open opens the database that link reaches and checks that it is a Beads
// database bd-claim writes faithfully: the schema of bd v1.3.0, and the
// project metadata.json names (projectID).
func (e *Engine) open(ctx context.Context, link doltLink, projectID string, c engine.Config) (*Engine, error) {
	e.link, e.style, e.dq, e.cfg = link, link.commits(), doltdb.New(), c
	e.retry = engine.Retry{Attempts: 50, Backoff: 10 * time.Millisecond}
	err := link.prepare(ctx, func(ctx context.Context, conn *sql.Conn) error { return e.check(ctx, conn, projectID) })
	if err != nil {
		link.close()
		return nil, engine.Classify(err, "read the schema of "+e.path, e.Code)
	}
	return e, nil
}

// Flavor is bd v1.3.0's, for the rules.
func (e *Engine) Flavor() engine.Flavor { return flavor }

// Close releases the database.
func (e *Engine) Close() error { return e.link.close() }

// check refuses a database that is not the workspace's: not a Beads
// database, another schema than bd v1.3.0's, another project than
// metadata.json names (SCHEMA_INCOMPATIBLE).
func (e *Engine) check(ctx context.Context, conn *sql.Conn, projectID string) error {
	err := Check(ctx, conn, Expect{Schema: doltSchema, ProjectID: projectID, Server: e.path, MetadataDir: e.beads})
	var refused *Refusal
	if errors.As(err, &refused) {
		return engine.Errorf(engine.ESchema, "%s", refused)
	}
	return err
}

// doltCodes are bd-claim's codes for the kinds of a Dolt server's errors,
// and what to do.
var doltCodes = map[Kind]struct {
	code engine.Code
	what string
}{
	LoginRefused:    {engine.EAccess, "the Dolt server refused the login: check the user (BEADS_DOLT_SERVER_USER) and the password (BEADS_DOLT_PASSWORD or bd's credentials file)"},
	WriteDenied:     {engine.EAccess, "the Dolt server does not let this user write (a read-only user can only --dry-run)"},
	NoDatabase:      {engine.EDBNotFound, "no such database on the Dolt server (bd-claim never creates one): check dolt_database in metadata.json or BEADS_DOLT_SERVER_DATABASE"},
	Conflict:        {engine.EWorkspaceBusy, "other writers kept changing the same issues; retry"},
	Unreachable:     {engine.EUnavailable, "the Dolt server cannot be reached: is `dolt sql-server` running at the host and port the workspace names? retry later"},
	EngineLocked:    {engine.EWorkspaceBusy, "another process (bd, bd-claim, a dolt sql-server) kept the embedded Dolt database open past the timeout; retry, or raise --timeout-ms"},
	MaintenanceHeld: {engine.EUnavailable, "bd is running a maintenance command on the workspace (bd init, bd migrate, bd backup restore); retry once it has finished"},
	NotBuiltIn: {engine.ESchema, "the workspace is an embedded Dolt workspace (bd v1.3's default), which needs bd-claim's embedded build: " +
		"download its release archive, bd-claim_VERSION_OS_ARCH_embedded, from https://github.com/bdclaim/bd-claim/releases, " +
		"or, with gcc, run `CGO_ENABLED=1 go install -tags embedded,gms_pure_go github.com/bdclaim/bd-claim@latest`"},
	ProxyDown: {engine.EUnavailable, "the workspace is in proxied-server mode, and its proxy is not running (bd stops it after 30 s without clients unless told otherwise) or does not prove to be the workspace's; " +
		"bd-claim never starts it, nor dials the server behind it: run any bd command in the workspace (`bd list`), which starts (or replaces) it, and retry; " +
		"to keep it running, make the workspace with `bd init --proxied-server --proxied-server-idle-timeout 0`"},
}

// Code reads a Dolt server's or engine's errors by their kind.
func (e *Engine) Code(err error) (engine.Code, string, bool) {
	kind := KindOf(err)
	c, ok := doltCodes[kind]
	if kind == Unreachable && e.server != nil {
		c.what = unreachable(e.server, e.beads) // where the server was looked for, and why there
	}
	return c.code, c.what, ok
}

// State reads who holds issue id: the claim's
// id is the issue's row_lock, renewed by every change of owner; the lease
// is the leases row of the holder. An id that is not in issues is looked
// up in wisps, as bd's GetIssueInTx does; a wisp has no lease.
func (t *tx) State(id string) (engine.State, error) {
	st, err := t.e.dq.IssueClaimState(t.ctx, t.conn, doltdb.IssueClaimStateParams{Asked: doltAskedPattern, ID: id})
	if ok, err := engine.Found(err); err != nil || ok {
		return t.claimOf(st), err
	}
	w, err := t.e.dq.WispClaimState(t.ctx, t.conn, id)
	if ok, err := engine.Found(err); err != nil {
		return engine.State{}, err
	} else if !ok {
		return engine.State{}, t.notFound(id)
	}
	return wispClaim(w.ID, w.Status, w.Assignee, w.RowLock), nil
}

func (t *tx) Lookalikes(part string) (string, []string, error) {
	r, err := t.e.dq.IssueLookalikes(t.ctx, t.conn, doltdb.IssueLookalikesParams{Part: part})
	var ids []string
	if err == nil {
		err = json.Unmarshal([]byte(r.Ids), &ids)
	}
	return r.Prefix, ids, err
}

// wispClaim is the claim of a wisp: its holder and row_lock, never a lease.
func wispClaim(id, status, holder string, rowLock int64) engine.State {
	return engine.State{IssueID: id, Status: status, Holder: holder, ID: claimIDOf(rowLock), Legacy: legacyClaimIDOf(rowLock), Wisp: true}
}

// doltClaim is the claim of an issue read by IssueClaimState: its lease
// counts when the leases row is the assignee's, the issue in_progress (bd
// leaves a stale row on an issue it reopens); the claim's time is the
// lease's grant.
func (t *tx) claimOf(st doltdb.IssueClaimStateRow) engine.State {
	c := engine.State{IssueID: st.ID, Status: st.Status, Holder: st.Assignee, ID: claimIDOf(st.RowLock), Legacy: legacyClaimIDOf(st.RowLock)}
	if st.Holder.Valid && st.Holder.String == st.Assignee && st.Status == "in_progress" {
		c.Actor = st.Holder.String
		c.At = st.GrantedAt.Time.UTC().Format(doltTime)
		c.Until = st.LeaseExpiresAt.Time.UTC().Format(engine.LeaseTime)
		c.Expired = !st.LeaseExpiresAt.Time.After(t.now)
		c.Length = st.LeaseExpiresAt.Time.Sub(st.HeartbeatAt.Time)
		c.Comment, c.Data = st.ClaimComment.String, claimKey{event: st.ClaimEvent, rowLock: st.RowLock}
		c.BdLease = !st.ClaimComment.Valid
	}
	return c
}

// claimKey is what the engine keeps of a claim (State.Data): the id of the
// holder's latest claimed event, where a heartbeat records a lease the
// holder asks for, and the issue's row_lock, which that record names.
type claimKey struct {
	event   string
	rowLock int64
}

// Held lists every in_progress issue and wisp with its claim, by
// holder then id, in the transaction's snapshot (one statement). A wisp's
// claim has no lease; its time is that of its claimed event.
func (t *tx) Held() ([]engine.State, error) {
	raw, err := t.e.dq.IssueInProgressClaims(t.ctx, t.conn, doltAskedPattern)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID, Status, Assignee string
		RowLock              int64 `json:"row_lock,string"`
		Holder               *string
		LeaseExpiresAt       *time.Time `json:"lease_expires_at"`
		HeartbeatAt          *time.Time `json:"heartbeat_at"`
		GrantedAt            *time.Time `json:"granted_at"`
		ClaimComment         *string    `json:"claim_comment"`
		Wisp                 bool
		ClaimedAt            *time.Time `json:"claimed_at"`
	}
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		return nil, fmt.Errorf("the claims of the in_progress issues: %w", err)
	}
	out := make([]engine.State, len(rows))
	for i, r := range rows {
		if r.Wisp {
			out[i] = wispClaim(r.ID, r.Status, r.Assignee, r.RowLock)
			if r.ClaimedAt != nil {
				out[i].At = r.ClaimedAt.UTC().Format(doltTime)
			}
			continue
		}
		st := doltdb.IssueClaimStateRow{ID: r.ID, Status: r.Status, Assignee: r.Assignee, RowLock: r.RowLock}
		if r.ClaimComment != nil {
			st.ClaimComment = text(*r.ClaimComment)
		}
		if r.Holder != nil {
			st.Holder = sql.NullString{String: *r.Holder, Valid: true}
			st.LeaseExpiresAt = sql.NullTime{Time: *r.LeaseExpiresAt, Valid: true}
			st.HeartbeatAt = sql.NullTime{Time: *r.HeartbeatAt, Valid: true}
			st.GrantedAt = sql.NullTime{Time: *r.GrantedAt, Valid: true}
		}
		out[i] = t.claimOf(st)
	}
	slices.SortFunc(out, func(a, b engine.State) int {
		return cmp.Or(cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.IssueID, b.IssueID))
	})
	return out, nil
}

// Take writes claim c as `bd update --claim` does: the five issues cells
// under a compare-and-swap on row_lock, the lease (bd's 5 minutes unless
// c asks for another), the claimed event. The new row_lock is the claim's
// id. The Dolt commit follows the SQL commit (doltCommit).
//
// A wisp (bd's wisps table) is claimed as bd's ClaimIssueInTx routes it:
// the same cells of the wisps row, no lease (bd never leases a wisp, so
// --lease is ignored), the claimed event in wisp_events. Its Dolt commit
// finds nothing staged (the wisp tables are dolt_ignored), as bd's does.
func (t *tx) Take(c engine.Claim) (engine.Taken, error) {
	r := c.Row
	if c.Held != nil {
		// A re-claim writes nothing but the lease it asks for; its Dolt
		// commit records the claim if the first run's commit was lost. A
		// resume (not by id) renews the lease, which no Dolt commit holds.
		if c.ByID {
			t.commit = "bd: update " + r.ID
		}
		taken := engine.Taken{ClaimID: c.Held.ID}
		var err error
		if c.Renew && snapshotOf(r).table.Leased() {
			taken.Lease, err = t.Renew(r.ID, c.Agent, *c.Held, c.Lease)
		}
		return taken, err
	}
	if c.Ended != "" {
		if err := t.EndClaim(r, c.Agent, r.Claim.Holder, c.Ended); err != nil {
			return engine.Taken{}, err
		}
	}
	table := snapshotOf(r).table
	lock := newRowLock()
	set := doltdb.IssueClaimSetParams{
		Assignee: text(c.Agent), Now: t.now, StartedAt: sql.NullTime{Time: t.now, Valid: true},
		NewRowLock: lock, ID: r.ID, RowLock: snapshotOf(r).rowLock, FromStatus: r.Status,
	}
	n, err := table.ClaimSet(t.ctx, t.conn, set)
	if err == nil && n != 1 {
		err = errChanged
	}
	if err != nil {
		return engine.Taken{}, err
	}
	taken := engine.Taken{ClaimID: lock}
	if table.Leased() {
		if taken.Lease, err = t.lease(r.ID, c.Agent, cmp.Or(c.Lease, doltLease), false); err != nil {
			return engine.Taken{}, err
		}
	}
	old := snapshotOf(r).eventJSON(!c.ByID || t.e.style.updateLabels)
	claimed := ClaimedEvent(r.ID, c.Agent, old, t.now)
	if c.Lease > 0 && table.Leased() {
		// A lease the agent asked for is bd-claim's protocol's, in the
		// claimed event's comment (bd leaves it NULL): another claim takes
		// the issue over once it ends.
		claimed.Comment = text(taken.Lease.ClaimOf(lock))
	}
	if err := table.InsertEvent(t.ctx, t.conn, claimed); err != nil {
		return engine.Taken{}, err
	}
	t.landed = &landed{id: r.ID, rowLock: lock, table: table}
	r.Status, r.Assignee, r.UpdatedAt = "in_progress", c.Agent, doltAt(t.now)
	t.commit = "bd: claim ready " + r.ID // bd's message for the same move
	if c.ByID {
		t.commit = "bd: update " + r.ID
	}
	return taken, nil
}

// lease gives agent a lease of issue id for d from now. A renewal
// extends agent's lease row in place as bd heartbeat does; a claim, or a
// renewal that finds no row of agent's, grants one as bd's
// UpsertLeaseInTx does (granted_node ” as bd writes it without node_id).
func (t *tx) lease(id, agent string, d time.Duration, renew bool) (*engine.Lease, error) {
	l := engine.NewLease(t.now, d)
	if renew {
		n, err := t.e.dq.LeaseHeartbeat(t.ctx, t.conn, doltdb.LeaseHeartbeatParams{LeaseExpiresAt: l.Until, HeartbeatAt: t.now, IssueID: id, Holder: agent})
		if err != nil || n > 0 {
			return l, err
		}
	}
	return l, t.e.dq.LeaseUpsert(t.ctx, t.conn, doltdb.LeaseUpsertParams{
		IssueID: id, Holder: agent, GrantedAt: t.now, LeaseExpiresAt: l.Until, HeartbeatAt: t.now,
	})
}

// Update is Dolt's frame: fn runs on a writer's connection of the engine's
// own that holds the writers' lock (doltWriter; ctx ending stops the wait
// for it, and nothing else), in a transaction tried
// again after a serialization failure or a compare-and-swap that matched
// nothing (the clock read anew each try). A COMMIT whose answer was lost
// is looked up (landed): a write that landed is reported as one. Then the
// Dolt commit that bd makes for the same move (tx.commit) follows on the
// writer's connection; a claim is reported only once it is in HEAD.
func (e *Engine) Update(ctx context.Context, _ engine.Ahead, fn func(engine.Tx) error) error {
	w, err := e.link.writer(ctx, e.wrap)
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx) // the wait for the turn is over: the write runs to its end
	defer func() {
		if w != nil {
			w.done()
		}
	}()
	var t *tx
	try := 0
	err = engine.WithTx(ctx, w, e.retry, retryable, func(sqlTx *sql.Tx) error {
		try++
		t = e.tx(ctx, sqlTx)
		t.try, t.queued = try, w.queued
		err := fn(t)
		if err == nil && w.inTx {
			// It commits the transaction too: both land, or neither.
			if err = t.doltCommit(ctx, t.conn, true); err != nil {
				err = fmt.Errorf("%w: %w", engine.ErrCommit, err) // a lost answer is looked up as a COMMIT's
			}
		}
		return err
	})
	if err != nil && t != nil && t.landed != nil && lostCommit(err) {
		if err = e.found(ctx, t, err); err == nil {
			// It landed, but its connection is gone (and with it the
			// lock). Where the Dolt commit was in the transaction, it
			// landed with it; else it needs a writer's connection again.
			if w.inTx {
				return nil
			}
			w.done()
			if w, err = e.link.writer(ctx, e.wrap); err != nil { // w is nil: the deferred done skips it
				return uncommitted(engine.Classify(err, "make the Dolt commit", e.Code))
			}
		}
	}
	if err != nil {
		return err
	}
	if w.inTx {
		return nil
	}
	if err := t.doltCommit(ctx, w.h, false); err != nil {
		return uncommitted(engine.Classify(err, "make the Dolt commit", e.Code))
	}
	return nil
}

// uncommitted says of err, the failure of the Dolt commit that follows a
// write committed in SQL, that the write stands and which write records it.
func uncommitted(err error) error {
	var ce *engine.Error
	if errors.As(err, &ce) {
		ce.Message += "; the change is committed in SQL and the next bd or bd-claim write records it in a Dolt commit"
	}
	return err
}

// doltCommit makes the Dolt commit bd makes for the write on h (inside
// its transaction when inTx): the message of its move (tx.commit), else
// of the expired claims it ended (bd reclaim's); none for a write bd makes
// none for (a heartbeat).
func (t *tx) doltCommit(ctx context.Context, h db.DBTX, inTx bool) error {
	message, by := t.commit, t.e.style.doltCommitter
	if t.swept {
		by = t.e.style.swept
	}
	if message == "" && len(t.reclaimed) > 0 {
		message, by = t.e.style.reclaim(t.reclaimed, t.reclaimer), t.e.style.swept
	}
	if message == "" {
		return nil
	}
	return Commit{Message: message, Author: by.author, All: by.all, Labels: t.labels, Comments: t.comments, InTx: inTx}.Make(ctx, h)
}

// Ahead: a Dolt claim reads its candidates in its transaction, on the
// server, where the writers' lock makes the other bd-claim writers wait.
func (e *Engine) Ahead(context.Context, engine.Spec) (engine.Ahead, error) {
	return engine.Ahead{}, nil
}

// Look runs fn on the database, opened for it (doltLink.open).
func (e *Engine) Look(ctx context.Context, fn func(engine.Tx) error) error {
	conn, end, err := e.link.open(ctx)
	if err != nil {
		return err
	}
	defer end()
	return fn(e.tx(ctx, conn))
}

// Snapshot is a transaction: Dolt's snapshot isolation.
func (e *Engine) Snapshot(ctx context.Context, fn func(engine.Tx) error) error {
	conn, end, err := e.link.open(ctx)
	if err == nil {
		defer end()
		var sqlTx *sql.Tx
		if sqlTx, err = conn.BeginTx(ctx, nil); err == nil {
			defer sqlTx.Rollback()
			err = fn(e.tx(ctx, sqlTx))
		}
	}
	return err
}

// Watch is the link's change signal.
func (e *Engine) Watch(ctx context.Context) (func() string, func(), error) {
	return e.link.watch(ctx, e)
}

// tx starts an operation on h at the clock's time.
func (e *Engine) tx(ctx context.Context, h db.DBTX) *tx {
	return &tx{e: e, ctx: ctx, conn: e.wrap(h), now: e.cfg.Now()}
}

// Now is the instant the operation acts at.
func (t *tx) Now() time.Time { return t.now }

// tx is one operation on a Dolt workspace, and what its write leaves for
// the frame: the Dolt commit to make after the SQL commit, and how to tell
// whether the write landed when its COMMIT's answer was lost.
type tx struct {
	e      *Engine
	ctx    context.Context
	conn   db.DBTX
	now    time.Time
	try    int    // which try of the write transaction this is, from 1 (0: a read)
	commit string // the message of the Dolt commit that follows the SQL commit ("" for none)
	// reclaimed lists the issues whose expired claims the write ended: a
	// reap's commit message, bd reclaim's, when no other move names the
	// commit.
	reclaimed []string
	reclaimer string // the actor that ended them
	// swept: the commit is the one bd makes after a release (doltStyle.swept).
	swept  bool
	landed *landed // the write's mark, to look it up after a lost COMMIT
	labels bool    // the write changed labels, which the Dolt commit stages too
	// comments: the write added comments, which the Dolt commit stages too.
	comments bool
	queued   bool // the write waited for other writers (doltWriter.queued)
	// top is the most urgent priority of an open issue or wisp in the
	// snapshot (narrow reads it; not Valid before, or when none is open).
	top sql.NullInt64
}

// Label adds or removes a label of r as bd's label command does: the
// labels row, its event, and the labels table staged in the Dolt commit,
// with bd's message unless the write has one already (a release's covers
// it).
func (t *tx) Label(r *engine.Row, actor, label string, add bool) error {
	var n int64
	var err error
	verb, event, comment := "add", "label_added", "Added label: "+label
	if add {
		n, err = t.e.dq.LabelAdd(t.ctx, t.conn, doltdb.LabelAddParams{IssueID: r.ID, Label: label})
	} else {
		verb, event, comment = "remove", "label_removed", "Removed label: "+label
		n, err = t.e.dq.LabelRemove(t.ctx, t.conn, doltdb.LabelRemoveParams{IssueID: r.ID, Label: label})
	}
	if err != nil || n == 0 {
		return err
	}
	r.SetLabel(label, add)
	t.labels = true
	if t.commit == "" {
		t.commit = t.e.style.label(verb, r.ID)
	}
	return Table{}.InsertEvent(t.ctx, t.conn, Event{IssueID: r.ID, Type: event, Actor: actor, Comment: text(comment), CreatedAt: t.now})
}

// Comment adds a comment on r as bd v1.3.0's `bd comments add` does
// (AddComment), staged in the write's Dolt commit (comments are
// versioned). A wisp gets none: its comments would be wisp_comments, which
// bd-claim does not write; its events' comments carry the note.
func (t *tx) Comment(r *engine.Row, author, text string) error {
	if !snapshotOf(r).table.Leased() {
		return nil
	}
	t.comments = true
	return AddComment(t.ctx, t.conn, r.ID, author, text, t.now)
}

// ResetMark is the commented event alone (events are not versioned).
func (t *tx) ResetMark(r *engine.Row, actor, comment string) error {
	return Table{}.InsertEvent(t.ctx, t.conn, Event{IssueID: r.ID, Type: "commented", Actor: actor, Comment: text(comment), CreatedAt: t.now})
}

// Figures reads the counts of stats, and the lifecycle events since since.
func (t *tx) Figures(spec engine.Spec, since time.Time) (engine.Figures, error) {
	f, err := engine.ReadFigures(t.ctx, t.conn, spec, flavor.NotBlocked, t.e.cfg.Policy, history, doltTime, t.now)
	if err != nil {
		return f, err
	}
	ev, err := t.e.dq.EventCountsSince(t.ctx, t.conn, doltdb.EventCountsSinceParams{Since: since.UTC(), Failed: text(engine.Like(engine.FailedPrefix))})
	f.Events = engine.EventCounts{Claims: int(ev.Claims), Releases: int(ev.Releases), Failures: int(ev.Failures), Reclaims: int(ev.Reclaims), Closes: int(ev.Closes)}
	return f, err
}

func (t *tx) Explain(spec engine.Spec) (engine.Explained, error) {
	return engine.ReadExplained(t.ctx, t.conn, spec)
}

func (t *tx) Verdicts(spec engine.Spec, id string) ([]bool, error) {
	return engine.ReadVerdicts(t.ctx, t.conn, spec, id)
}

// Failures reads issue id's failure history; a wisp (outside issues) has
// none.
func (t *tx) Failures(id string) (engine.FailureHistory, error) {
	return engine.ReadFailures(t.ctx, t.conn, t.e.cfg.Policy, history, doltTime, id, t.now)
}

// Next reads the issue a claim-next of spec takes (next), in the
// transaction's snapshot narrowed for it (narrow).
func (t *tx) Next(spec engine.Spec, _ []string) (*engine.Row, error) {
	spec, err := t.narrow(spec)
	if err != nil {
		return nil, err
	}
	id, ok, err := t.next(spec)
	if err != nil || !ok {
		return nil, err
	}
	return t.claimed(id)
}

// Find reads issue id when spec admits it.
func (t *tx) Find(spec engine.Spec, id string) (*engine.Row, error) {
	spec, err := t.narrow(spec)
	if err != nil {
		return nil, err
	}
	ok, err := engine.Found(engine.QueryRow(t.ctx, t.conn, spec.ByID(id)).Scan(&id))
	if err != nil || !ok {
		return nil, err
	}
	return t.claimed(id)
}

// claimed reads issue id for a claim: the row, and, when it is
// in_progress (a takeover of an expired lease), its claim.
func (t *tx) claimed(id string) (*engine.Row, error) {
	r, err := t.Read(id)
	if err != nil || r.Status != "in_progress" {
		return r, err
	}
	c, err := t.State(id)
	r.Claim = &c
	return r, err
}

func (t *tx) notFound(id string) error {
	return engine.Errorf(engine.ENotFound, "no issue %s in %s", id, t.e.path)
}

func text(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

// newRowLock is a fresh row_lock as bd makes one (8 random bytes as a
// little-endian int64, never 0), kept within claimIDBits: it is the
// claim's id, which the JSON contract promises to be a positive number
// that a float64 holds exactly.
func newRowLock() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return claimIDOf(int64(binary.LittleEndian.Uint64(b[:])))
}

// claimIDBits is how many low bits of a row_lock make its claim id: 53, so
// that every id survives a JSON decoder that reads numbers as float64
// (JavaScript, jq 1.6). bd-claim's own row_locks have no other bits, so
// its claims' ids are their row_locks; bd's (any int64) are told apart
// from another by these bits, which a stale id matches by chance once in
// 2^53.
const claimIDBits = 53

// claimIDOf is the claim id of an issue whose row_lock is v: its low
// claimIDBits bits, 1 for none.
func claimIDOf(v int64) int64 { return max(v&(1<<claimIDBits-1), 1) }

// legacyClaimIDOf is the id earlier bd-claim releases printed for row_lock v (v
// with its sign bit cleared, 1 for 0), where it differs from claimIDOf's:
// a claim made before the upgrade is still fenced by the id its agent
// kept.
func legacyClaimIDOf(v int64) int64 {
	if old := max(v&math.MaxInt64, 1); old != claimIDOf(v) {
		return old
	}
	return 0
}

// errChanged is a compare-and-swap that matched no row: the issue changed
// since this transaction's snapshot. The whole transaction is tried again,
// as after a serialization failure.
var errChanged = errors.New("the issue changed under the claim")

// retryable says which write errors are worth another try on Dolt.
func retryable(err error) bool { return IsConflict(err) || errors.Is(err, errChanged) }

func (t *tx) HeldCount(agent string) (int64, error) {
	return t.e.dq.IssueHeldCount(t.ctx, t.conn, doltdb.IssueHeldCountParams{Agent: text(agent)})
}

func (t *tx) CustomTypes() ([]string, error) {
	v, err := t.e.dq.CustomTypes(t.ctx, t.conn)
	return []string{v.TableTypes, v.ConfigTypes}, err
}

// narrow leaves the deferred-parent rule out of spec when no issue or
// wisp is deferred beyond now (it cannot refuse anything then): planning
// that rule was a third of the claim query's server time (BENCHMARKS.md).
// The same statement reads the most urgent priority of an open issue or
// wisp, where next starts (top). It runs in the claim's transaction, so it
// sees the same snapshot.
func (t *tx) narrow(spec engine.Spec) (engine.Spec, error) {
	b, err := t.e.dq.IssueReadyBounds(t.ctx, t.conn, doltdb.IssueReadyBoundsParams{Now: sql.NullTime{Time: t.now.UTC().Truncate(time.Second), Valid: true}})
	if b.Deferred == 0 {
		spec = spec.Without(func(r engine.Rule) bool { return r.Name == "deferred_parent" })
	}
	for _, top := range []int64{b.TopIssue, b.TopWisp} {
		if top >= 0 && (!t.top.Valid || top < t.top.Int64) {
			t.top = sql.NullInt64{Int64: top, Valid: true}
		}
	}
	return spec, err
}

// doltNext finds the issue to claim: the first candidate in claim order,
// bd ready's head, which a dry run names too. In a swarm it picks at
// random among the first doltSpread candidates that share the first one's
// priority (never a less urgent issue while a more urgent one is ready):
// when the write waited for other bd-claim writers (queued), and on a try
// after a lost race (the try before it conflicted with another writer).
// Dolt lets only one of two transactions that write the same row commit,
// and every `bd ready --claim` goes for the head: a swarm of bd-claim
// processes taking the head claim after claim, each commit shorter than
// bd's, made bd's processes lose every round until they gave up (after
// 15 s; through a proxied server under load, 7 of 8 beside 16 bd-claim
// processes, 0 of 8 alone; with the spread, 0 of 8).
//
// In the priority order it starts at the most urgent priority of an open
// issue (top, read by narrow): it looks at the issues of that priority and
// the more urgent in_progress ones (whose lease may have expired) first
// (doltSourceAt). Every other issue is less urgent, so when one of these
// passes, it heads the claim order; else the claim looks at every issue.
func (t *tx) next(spec engine.Spec) (string, bool, error) {
	k := doltSpread
	if t.try <= 1 && !t.queued {
		k = 1
	}
	var ids []string
	var err error
	if spec.Sort == engine.SortPriority && t.top.Valid {
		at := doltSourceAt(t.top.Int64)
		ids, err = t.candidates(spec, k, &at)
	}
	if err == nil && ids == nil {
		ids, err = t.candidates(spec, k, nil)
	}
	if err != nil || len(ids) == 0 {
		return "", false, err
	}
	return ids[mrand.IntN(len(ids))], true, nil
}

// candidates reads the first k claimable issues of spec, among the rows
// of at (nil: every row), that share the first one's priority, in claim
// order.
func (t *tx) candidates(spec engine.Spec, k int, at *sq.SelectBuilder) ([]string, error) {
	var ids []string
	var id string
	var priority, first, passes, n int
	row := func() {
		if passes == 0 {
			return
		}
		if n++; n == 1 {
			first = priority
		}
		if n <= k && priority == first {
			ids = append(ids, id)
		}
	}
	rows := 0
	dest := []any{&id, &priority, &passes}
	// First with the policy's cheap condition (engine.Spec.clear): an issue
	// that meets it passes the policy. Only an issue that does not, where
	// it could change the result, has the page read again with the
	// policy's rules themselves, which the server takes longer to plan.
	undecided := false
	err := engine.Each(t.ctx, t.conn, page(spec, doltPage, at, spec.Clear), dest, func() {
		undecided = undecided || (passes == 0 && n < k && (n == 0 || priority == first))
		row()
	})
	if err == nil && undecided {
		ids, n = nil, 0
		_, costly := spec.Split()
		err = engine.Each(t.ctx, t.conn, page(spec, doltPage, at, costly), dest, func() { rows++; row() })
	}
	if err == nil && n == 0 && rows == doltPage && at == nil {
		// The page is a prefix of the claim order, so what passes in it
		// comes first. Only a full page that had none looks further:
		// every issue in it is in backoff or abandoned.
		err = engine.Each(t.ctx, t.conn, spec.Candidates().Columns("i.priority", "1").Limit(uint64(k)), dest, row)
	}
	return ids, err
}

// doltPage is how many candidates, in claim order, a Dolt claim checks
// against the failure policy before it checks them all: each check is a
// few lookups, and on 200 candidates they took a third of the query's
// server time.
const doltPage = 32

// doltSpread is how many of the first candidates a Dolt claim picks from.
const doltSpread = 8

// doltRead reads issue id for a write: the contract's fields, and the
// row_lock and bd's JSON of the issue for the compare-and-swap and the
// event.
func (t *tx) Read(id string) (*engine.Row, error) {
	snap, err := t.snapshot(id)
	if err != nil {
		return nil, err
	}
	return &engine.Row{Issue: snap.issue, Data: &snap}, nil
}

// snapshotOf is what the Dolt engine read of r (tx.Read).
func snapshotOf(r *engine.Row) *doltSnapshot { return r.Data.(*doltSnapshot) }

// doltRelease ends agent's claim of r as `bd unclaim` does: back to open
// with an empty assignee (CAS on row_lock), the lease row deleted, an
// unclaimed event with comment (bd-claim's reason; NULL as bd writes it
// for none), and bd unclaim's Dolt commit (doltStyle.unclaim, swept).
//
// A wisp is released in the wisps table, its event in wisp_events, as bd
// unclaim routes it.
func (t *tx) Unclaim(r *engine.Row, agent string, failed bool, reason string) error {
	snap := snapshotOf(r)
	if failed && !snap.table.Leased() {
		return engine.Errorf(engine.EInvalid, "%s is a wisp (bd's wisps table): bd-claim keeps no failure history for wisps; release it without --failed", r.ID)
	}
	var comment sql.NullString
	if reason != "" || failed { // bd unclaim leaves it NULL
		comment = text(engine.ReleaseComment(failed, reason))
	}
	lock := newRowLock()
	set := doltdb.IssueUnclaimSetParams{Now: t.now, NewRowLock: lock, ID: r.ID, RowLock: snap.rowLock}
	n, err := snap.table.UnclaimSet(t.ctx, t.conn, set)
	if err == nil && n != 1 {
		err = errChanged
	}
	if err == nil {
		err = t.e.dq.LeaseDelete(t.ctx, t.conn, r.ID)
	}
	if err == nil {
		newValue := `{"assignee":"","status":"open"}` // bd marshals map[string]string, keys sorted
		err = snap.table.InsertEvent(t.ctx, t.conn, Event{IssueID: r.ID, Type: "unclaimed", Actor: agent,
			OldValue: text(snap.eventJSON(true)), NewValue: text(newValue), Comment: comment, CreatedAt: t.now})
	}
	t.commit, t.swept = t.e.style.unclaim(r.ID, agent), true
	t.landed = &landed{id: r.ID, rowLock: lock, table: snap.table}
	r.Status, r.Assignee, r.UpdatedAt = "open", "", doltAt(t.now)
	return err
}

// EndClaim ends the expired claim of r by holder as `bd reclaim` does:
// back to open with a NULL assignee (CAS on row_lock), the lease row
// deleted, a lease_reclaimed event (old_value the holder, new_value ”)
// with bd-claim's note in its comment. r is then the issue as the reclaim
// left it (reclaimed): a takeover claims the issue as it now is. Its Dolt
// commit is the caller's.
func (t *tx) EndClaim(r *engine.Row, actor, holder, note string) error {
	lock := newRowLock()
	n, err := t.e.dq.IssueReclaimSet(t.ctx, t.conn, doltdb.IssueReclaimSetParams{Now: t.now, NewRowLock: lock, ID: r.ID, RowLock: snapshotOf(r).rowLock})
	if err == nil && n != 1 {
		err = errChanged
	}
	if err == nil {
		err = t.e.dq.LeaseDelete(t.ctx, t.conn, r.ID)
	}
	if err == nil {
		err = Table{}.InsertEvent(t.ctx, t.conn, Event{IssueID: r.ID, Type: "lease_reclaimed", Actor: actor,
			OldValue: text(holder), NewValue: text(""), Comment: text(engine.ExpiredPrefix + note), CreatedAt: t.now})
	}
	if err != nil {
		return err
	}
	t.landed, t.reclaimed, t.reclaimer = &landed{id: r.ID, rowLock: lock}, append(t.reclaimed, r.ID), actor
	reclaimed(r, lock, t.now)
	return nil
}

// reclaimed makes r, read before a reclaim at now that gave it row_lock
// lock, the issue as IssueSnapshot would read it after: open, with no
// assignee, start or lease, updated at now as the DATETIME column stores
// it. No other column changes.
func reclaimed(r *engine.Row, lock int64, now time.Time) {
	snap := snapshotOf(r)
	snap.rowLock = lock
	iss := &snap.bd
	iss.Status, iss.Assignee, iss.StartedAt, iss.UpdatedAt = "open", "", nil, stored(now)
	iss.LeaseExpiresAt, iss.HeartbeatAt, iss.LeaseGrantedNode = nil, nil, ""
	r.Status, r.Assignee, r.UpdatedAt, r.Claim = iss.Status, "", iss.UpdatedAt.Format(time.RFC3339), nil
	snap.issue = r.Issue
}

// closable refuses what bd v1.3.0's close refuses of a held issue
// (issueops.enforceClosePolicyForTargetInTx): one with open children, or
// one that is_blocked with a live direct blocker. A wisp is refused:
// bd-claim does not write a wisp's close.
func (t *tx) Closable(id string) error {
	ref, err := t.e.dq.IssueCloseRefusal(t.ctx, t.conn, id)
	if ok, err := engine.Found(err); err != nil {
		return err
	} else if !ok {
		return engine.Errorf(engine.EInvalid, "%s is a wisp (bd's wisps table): bd-claim does not close wisps; release it and run `bd close %s`", id, id)
	}
	switch {
	case ref.OpenChildren > 0:
		return engine.Errorf(engine.ENotClaimable, "issue %s has %s: bd close refuses to close it until they are closed", id, engine.Plural(int(ref.OpenChildren), "open child issue"))
	case ref.Blockers != "":
		return engine.Errorf(engine.ENotClaimable, "issue %s is blocked by %s: bd close refuses to close it until they are closed", id, ref.Blockers)
	}
	return nil
}

// closeIssue writes actor's close of r as bd v1.3.0's close does
// (issueops.closeIssueInTx under CloseIssueCheckedInTx): both dependency
// coordination cells of its shard rewritten, the issue closed (closed_at
// and updated_at now, close_reason, closed_by_session empty: bd-claim has
// no session) with a fresh row_lock (CAS on the one read), the lease row
// deleted, a closed event (old_value ”, new_value the reason), is_blocked
// recomputed for the issues and wisps the close may unblock, and the Dolt
// commit "bd: close ID".
func (t *tx) Close(r *engine.Row, actor, reason string) error {
	for _, tier := range []string{"dependencies", "wisp_dependencies"} {
		cell := doltdb.CoordinationTouchParams{Cell: coordinationCell(r.ID, tier), Stamp: strconv.FormatInt(newRowLock(), 10)}
		if err := t.e.dq.CoordinationTouch(t.ctx, t.conn, cell); err != nil {
			return err
		}
	}
	lock := newRowLock()
	n, err := t.e.dq.IssueCloseSet(t.ctx, t.conn, doltdb.IssueCloseSetParams{
		ClosedAt: sql.NullTime{Time: t.now, Valid: true}, Now: t.now, Reason: text(reason), Session: text(""),
		NewRowLock: lock, ID: r.ID, RowLock: snapshotOf(r).rowLock,
	})
	if err == nil && n != 1 {
		err = errChanged
	}
	if err == nil {
		err = t.e.dq.LeaseDelete(t.ctx, t.conn, r.ID)
	}
	if err == nil {
		err = Table{}.InsertEvent(t.ctx, t.conn, Event{IssueID: r.ID, Type: "closed", Actor: actor, OldValue: text(""), NewValue: text(reason), CreatedAt: t.now})
	}
	if err == nil {
		err = t.unblock(r.ID)
	}
	t.commit = "bd: close " + r.ID
	t.landed = &landed{id: r.ID, rowLock: lock}
	r.Status, r.UpdatedAt = "closed", doltAt(t.now)
	return err
}

// coordinationCell is the key of bd v1.3.0's dependency coordination cell
// of issue id in tier (issueops.dependencyCoordinationKey): one of 4096
// shards, from the first 12 bits of the id's SHA-256.
func coordinationCell(id, tier string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("dependency-coordination/v1/%s/%03x", tier, uint16(sum[0])<<4|uint16(sum[1])>>4)
}

// unblock recomputes is_blocked after the close of issue id as bd v1.3.0
// does (AffectedByStatusChangeInTx, RecomputeIsBlockedInTxWithResult): over
// the issue, the rows blocked by or waiting on it or on its parents, and all
// their parent-child descendants, in issues and wisps (IssueCloseAffected),
// bd's mark and unmark passes until a round changes nothing (updated_at
// kept). A round is bd's passes in bd's order: issues marked, issues
// unmarked, wisps marked, wisps unmarked (was: the is_blocked that a pass
// changes), each row by its key.
func (t *tx) unblock(id string) error {
	raw, err := t.e.dq.IssueCloseAffected(t.ctx, t.conn, doltdb.IssueCloseAffectedParams{ID: id})
	var rows []struct {
		ID   string
		Wisp int64
	}
	if err == nil {
		err = json.Unmarshal([]byte(raw), &rows)
	}
	var issues, wisps []string
	for _, r := range rows {
		if r.Wisp == 1 {
			wisps = append(wisps, r.ID)
		} else {
			issues = append(issues, r.ID)
		}
	}
	issue := func(id string, was int64) (int64, error) {
		return t.e.dq.IssueBlockedPass(t.ctx, t.conn, doltdb.IssueBlockedPassParams{Was: was, ID: id})
	}
	wisp := func(id string, was int64) (int64, error) {
		return t.e.dq.WispBlockedPass(t.ctx, t.conn, doltdb.WispBlockedPassParams{Was: was, ID: id})
	}
	passes := []struct {
		ids  []string
		was  int64
		pass func(string, int64) (int64, error)
	}{{issues, 0, issue}, {issues, 1, issue}, {wisps, 0, wisp}, {wisps, 1, wisp}}
	for changed := int64(1); err == nil && changed > 0; {
		changed = 0
		for _, p := range passes {
			for _, rid := range p.ids {
				var n int64
				if err == nil {
					n, err = p.pass(rid, p.was)
				}
				changed += n
			}
		}
	}
	return err
}

// Renew extends agent's lease of issue id (claim c) as `bd heartbeat`
// does: by d, else by the lease's own length, else bd's 5 minutes. A
// claim without a lease row gets one (bd upserts it too). A length given
// (d) is a lease the agent asks for: it goes into the comment of the
// claim's claimed event too, where bd-claim's protocol keeps it, so that
// once it ends another claim takes the issue over. No Dolt commit: leases
// and events are dolt_ignored.
//
// A wisp has no lease to renew: bd heartbeat refuses it too.
func (t *tx) Renew(id, agent string, c engine.State, d time.Duration) (*engine.Lease, error) {
	if c.Wisp {
		return nil, engine.Errorf(engine.ENotClaimable, "%s is a wisp (bd's wisps table): bd never leases a wisp, so there is no lease to renew", id)
	}
	l, err := t.lease(id, agent, cmp.Or(d, c.Length, doltLease), true)
	if k, ok := c.Data.(claimKey); err == nil && d > 0 && ok && k.event != "" {
		err = t.e.dq.EventCommentSet(t.ctx, t.conn, doltdb.EventCommentSetParams{Comment: text(l.ClaimOf(k.rowLock)), ID: k.event})
	}
	return l, err
}

// doltAt is how bd prints a time Dolt stored (stored), RFC 3339 in UTC.
func doltAt(t time.Time) string { return stored(t).Format(time.RFC3339) }

// stored is t as a DATETIME(0) column keeps it: rounded, half up, to the
// second, in UTC.
func stored(t time.Time) time.Time { return t.UTC().Round(time.Second) }

// landed identifies a write by the random row_lock it gave an issue, a
// row of table.
type landed struct {
	id      string
	rowLock int64
	table   Table
}

// lostCommit is a COMMIT whose connection broke: the transaction may or
// may not have committed (bd never replays such a commit either).
func lostCommit(err error) bool {
	return errors.Is(err, engine.ErrCommit) &&
		(errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.As(err, new(*net.OpError)))
}

// landed asks the server, on another connection, whether t's write
// landed although its COMMIT's answer was lost: then the write succeeded
// (and is reported, and Dolt-committed); else err, the lost commit, stands
// and nothing was written.
func (e *Engine) found(ctx context.Context, t *tx, err error) error {
	for look := range 2 {
		if look > 0 {
			// The server may still be running the COMMIT of the broken
			// session: look once more after a while.
			time.Sleep(200 * time.Millisecond)
		}
		conn, end, rerr := e.link.open(ctx)
		if rerr == nil {
			lock, rerr := t.landed.table.RowLock(ctx, conn, t.landed.id)
			end()
			if rerr == nil && lock == t.landed.rowLock {
				return nil
			}
		}
	}
	return err
}

// doltSnapshot is an issue of a Dolt workspace as a write reads it: the
// contract's fields, its row_lock for the compare-and-swap, and bd's JSON
// of it for the event's old_value.
type doltSnapshot struct {
	issue   engine.Issue
	rowLock int64
	table   Table
	bd      Issue // bd's reading of the row
}

// eventJSON is bd's JSON of the issue for an event's old_value, with its
// labels or without them.
func (s *doltSnapshot) eventJSON(labels bool) string {
	iss := s.bd
	if !labels {
		iss.Labels = nil
	}
	return iss.EventJSON()
}

func (t *tx) snapshot(id string) (doltSnapshot, error) {
	r, table, err := Snapshot(t.ctx, t.conn, id)
	if err != nil {
		return doltSnapshot{}, err
	}
	iss, err := IssueOf(r)
	if err != nil {
		return doltSnapshot{}, err
	}
	return doltSnapshot{rowLock: r.RowLock, table: table, bd: iss, issue: engine.Issue{
		ID: iss.ID, Title: iss.Title, Status: iss.Status, Assignee: iss.Assignee, Priority: iss.Priority,
		IssueType: iss.IssueType, Labels: iss.Labels, // never nil: the query gives at least []
		ContentHash: r.ContentHash.String, ExternalRef: iss.ExternalRef,
		CreatedAt: iss.CreatedAt.Format(time.RFC3339), UpdatedAt: iss.UpdatedAt.Format(time.RFC3339),
	}}, nil
}

// page selects (id, priority, passes) of the first n issues in claim order
// by every rule but the failure policy's, which look up events: those are
// checked on these n issues only (a Dolt server would otherwise evaluate
// them on every row), and passes is 1 for an issue that meets them too.
// at, when not nil, is the rows to look at instead of every issue and
// wisp (doltSourceAt): only those are checked against the rules and
// sorted. passes is policy's verdict: the failure policy's rules, or a
// condition under which they hold (engine.Spec.clear).
func page(s engine.Spec, n uint64, at *sq.SelectBuilder, policy sq.Sqlizer) sq.SelectBuilder {
	cheap, _ := s.Split()
	b := sq.Select("i.id", "i.priority", "i.created_at").From(s.From)
	if at != nil {
		b = b.FromSelect(*at, "i")
	}
	b = b.Where(cheap).OrderByClause(s.Order, s.Args...).Limit(n)
	return sq.Select("i.id", "i.priority").Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END", policy)).
		FromSelect(b, "i").OrderByClause(s.Order, s.Args...)
}
