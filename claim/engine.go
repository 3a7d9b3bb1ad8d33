package claim

import (
	"context"
	"database/sql"
	"time"
)

// engine is what a database engine does for a Store: its transaction
// frame, its change signal and its read snapshot. A Store picks its engine
// once, when it opens the workspace (Open), and never asks which one it
// has: where engines differ, the engine's method says so.
//
// The methods are the operations the two engines bd-claim writes perform
// today, not a guess at a third: SQLite (bd v0.27-v0.50: sqliteEngine, one
// writer at a time behind a kernel queue of bd-claim's writers and BEGIN
// IMMEDIATE) and a Dolt sql-server (bd v1.3.x: doltEngine, a server-wide
// named lock, optimistic commits, a Dolt commit after the SQL commit).
type engine interface {
	// write runs fn in one write transaction of the engine's frame, on
	// the place d in the engine's queue of writers (when the claim took
	// one to read ahead), tried again whole while the engine finds the
	// try worth repeating (the clock read anew each try). fn's committed
	// hooks (txn.done) run once it has committed. ctx is not cancelled:
	// once begun, a write runs to its end.
	write(ctx context.Context, doing string, d deck, fn func(*txn) error) error
	// ahead reads, before the write lock, the first candidates of a
	// claim-next, and takes a place in the queue of writers for its turn
	// (none when the engine does not read ahead).
	ahead(ctx context.Context, req Request) ([]string, deck, error)
	// bind makes the operations of write transaction t on tx, and sets
	// t's handle.
	bind(t *txn, tx *sql.Tx) engineTx
	// look runs fn outside any transaction, on a handle of its own: a dry
	// run, an explanation, another read that needs no snapshot.
	look(ctx context.Context, fn func(*txn) error) error
	// snapshot runs fn in the read transaction in which stats reads every
	// figure: one snapshot, no write lock.
	snapshot(ctx context.Context, fn func(*txn) error) error
	// code reads an error of the engine's driver: bd-claim's code for it
	// and what to do; ok false for an error it does not know.
	code(err error) (c Code, what string, ok bool)
	// watch opens the database's change signal: a value that is new after
	// another connection's commit and stays the same while nothing is
	// written ("" when it cannot be read); stop closes what it opened.
	watch(ctx context.Context) (signal func() string, stop func(), err error)
	close() error
}

// engineTx is what differs between engines inside one transaction: how
// the claim of an issue is read, and how each move of the lifecycle is
// written, as the bd of that engine writes it.
type engineTx interface {
	// claimState reads issue id's status, holder and current claim;
	// ISSUE_NOT_FOUND when there is no such issue.
	claimState(id string) (claimEvent, error)
	// lookalikes reads what resolves a partial issue id (txn.resolve): the
	// workspace's issue prefix ("" without one) and the ids that contain
	// part (a bounded number).
	lookalikes(part string) (prefix string, ids []string, err error)
	// held lists every in_progress issue with its claim, by holder then id.
	held() ([]claimEvent, error)
	// heldCount counts the in_progress issues agent holds.
	heldCount(agent string) (int64, error)
	// customTypes lists the workspace's own issue types as its bd reads
	// them from the database (config types.custom, on Dolt also the
	// custom_types table), unparsed: each a comma-separated list or a
	// JSON array (parseTypes).
	customTypes() ([]string, error)
	// read loads issue id for a write.
	read(id string) (*row, error)
	// narrow leaves out of spec the rules that cannot refuse anything
	// in this transaction's snapshot.
	narrow(spec readySpec) (readySpec, error)
	// next finds the issue a claim-next takes: the first claimable of
	// head (the candidates read ahead), else of spec, in claim order.
	next(spec readySpec, req Request, head []string) (string, bool, error)
	// take writes claim c as bd writes one.
	take(c choice, req Request) (Result, error)
	// unclaim writes req.Agent's release of r as bd records a release,
	// with the reason (releaseComment) where bd's footprint has room.
	unclaim(r *row, req ReleaseRequest) error
	// endClaim ends the expired claim of r by holder, with bd-claim's
	// note: r is open and unassigned after it, as it now is.
	endClaim(r *row, actor, holder, note string) error
	// closable refuses (NOT_CLAIMABLE) the close of issue id that the
	// engine's bd close refuses: a blocked issue, or one with open
	// children where that bd refuses those; nil when bd would close it.
	// A workspace whose bd's close bd-claim does not write is refused
	// (SCHEMA_INCOMPATIBLE).
	closable(id string) error
	// closeIssue writes actor's close of r with reason as `bd close ID
	// --reason` writes it: the issue's cells, its event, the claim's end
	// (the dirty mark on SQLite, the lease row on Dolt), whatever that bd
	// recomputes for the issues the close unblocks, and its Dolt commit.
	// r is left as written.
	closeIssue(r *row, actor, reason string) error
	// renew extends agent's lease of issue id (claim c) by d, else by the
	// lease's own length.
	renew(id, agent string, c claimEvent, d time.Duration) (*Lease, error)
	// labelSet adds or removes a label row: 0 when there was nothing to
	// change. labelled records the change as bd's label command does.
	labelSet(id, label string, add bool) (int64, error)
	labelled(r *row, actor, verb, event, comment string) error
	// comment adds a comment on r as `bd comments add` does, so that bd
	// show and bd comments list it (none on a Dolt wisp).
	comment(r *row, author, text string) error
	// resetMark records a reset: failed attempts before it stop counting.
	resetMark(r *row, actor, comment string) error
	// eventCounts counts the lifecycle events recorded since a time.
	eventCounts(since time.Time) (EventCounts, error)
}
