package claim

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/db"
)

// sqliteEngine is the engine of a SQLite workspace (bd v0.27-v0.50): one
// writer at a time, bd-claim's writers in a kernel queue (sqlite.Queue) before
// BEGIN IMMEDIATE, a busy database tried again, each statement prepared
// once, and a claim-next that reads its candidates ahead of its turn.
type sqliteEngine struct {
	*Store
	stmts *sqlite.Stmts
	q     *db.Queries
	busy  time.Duration // SQLite's busy timeout
	retry sqlite.Retry
	// writer is the connection every write transaction runs on, taken
	// from the pool by the first (guarded by Store.writing): PRAGMA
	// data_version, by which a remembered order (queue) tells another
	// connection's writes from the Store's own, counts per connection.
	writer    *sql.Conn
	handoff   *sqlite.Queue // the writers' queue across processes, opened by the first writer (queue)
	handoffOn sync.Once
	queues    queues // guarded by Store.writing
	readSQL   string // reads the flavor's columns of one issue (see read)
	readAhead atomic.Bool
}

// openSQLite opens the SQLite database at ws.DBPath for s and checks who
// wrote it (detectFlavor).
func openSQLite(ctx context.Context, s *Store, o Options) error {
	conn := sqlite.Open(s.Workspace.DBPath, o.BusyTimeout)
	fl, err := detectFlavor(ctx, conn)
	if err != nil {
		conn.Close()
		return err
	}
	// Every column is read as text (NULL stays NULL): bd's timestamps are
	// text, and the hash encodes numbers as decimal text anyway.
	exprs := make([]string, len(fl.readCols))
	for i, c := range fl.readCols {
		exprs[i] = "CAST(" + c + " AS TEXT)"
	}
	readSQL, _ := sq.Select(exprs...).From("issues").Where("id = ?").MustSql()
	s.flavor, s.conn = fl, conn
	s.eng = &sqliteEngine{Store: s, stmts: sqlite.NewStmts(conn), q: db.New(), busy: o.BusyTimeout,
		retry: sqlite.Retry(o.Retry), queues: queues{}, readSQL: readSQL}
	return nil
}

func (e *sqliteEngine) close() error {
	e.stmts.Close()
	if e.handoff != nil {
		e.handoff.Close()
	}
	if e.writer != nil {
		e.writer.Close()
	}
	return e.conn.Close()
}

// queue returns the writers' queue, which the first writer opens (a Store
// that only reads makes no lock file).
func (e *sqliteEngine) queue() *sqlite.Queue {
	e.handoffOn.Do(func() { e.handoff = sqlite.OpenQueue(sqlite.QueueDir(), e.Workspace.DBPath) })
	return e.handoff
}

// queueWait is how long a writer waits in the queue, deck included: the
// busy timeouts of all its tries but the last (at least one).
func (e *sqliteEngine) queueWait() time.Duration {
	return e.busy * time.Duration(max(1, e.retry.Attempts-1))
}

// write is SQLite's frame: every bd-claim writer of the database, in any
// process, waits in a kernel queue (sqlite.Queue: the next writer is woken the
// moment the previous one leaves, where SQLite's busy handler sleeps up to
// 100ms between looks at the lock, and serves an unlucky waiter last),
// for the busy timeouts of all its tries but the last (at least one), then
// goes on without it with that last try only, so that --timeout-ms bounds
// the whole wait. A writer on the deck d waits for what is left of that
// and leaves the deck once its turn has come. Then fn runs in one BEGIN
// IMMEDIATE transaction (sqlite.Tx: begin and commit errors wrapped, a panic
// rolled back) on the Store's write connection, tried again whole while
// the database is busy; the hooks run after the commit, still in the
// queue.
func (e *sqliteEngine) write(ctx context.Context, _ string, d deck, fn func(*txn) error) error {
	wait, enter := e.queueWait(), e.queue().Enter
	if !d.at.IsZero() {
		wait -= time.Since(d.at)
		enter = d.place.Enter // which leaves the deck once the turn comes
	}
	leave, missed := enter(wait)
	defer leave()
	retry := e.retry
	if missed {
		retry.Attempts = 1
	}
	if e.writer == nil {
		var err error
		if e.writer, err = e.conn.Conn(ctx); err != nil {
			return err
		}
	}
	t, err := e.tx(ctx, e.writer, retry, sqlite.IsBusy, fn)
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		e.writer = nil // the pool replaces a broken connection; the next write takes another
	}
	if err != nil {
		return err
	}
	t.done()
	return nil
}

// headSize is how many candidates a first claim reads before it takes the
// write lock.
const headSize = 64

// ahead reads, before the write lock is taken, the first candidates of a
// Store's first claim-next (a claim process's only one): inside the lock,
// the claim then only checks them in order, in one statement
// (readySpec.firstOf), and sorts the candidates afresh only when none is
// claimable any more. The lock is held for a few lookups instead of the
// sort, which is most of a claim's work. Later claims of a Store use its
// remembered order instead (queue). A candidate that became claimable
// after the read, however urgent, waits for the next claim, as if the
// claim had run at the read. It reads them on the writers' queue's deck
// (sqlite.Queue.Deck), which it returns: only the writes of the two writers
// ahead (and any write that does not queue on the deck: bd's, a release,
// an --id claim) come between the read and the claim's turn, where a
// claim that read on arrival would find the candidates taken by every
// writer queued before it, and sort afresh.
func (e *sqliteEngine) ahead(ctx context.Context, req Request) ([]string, deck, error) {
	if req.ID != "" || !e.readAhead.CompareAndSwap(false, true) {
		return nil, deck{}, nil
	}
	d := deck{at: time.Now()}
	d.place, _ = e.queue().Deck(e.queueWait()) // a missed deck leaves no time for the turn
	var ids []string
	err := e.Store.look(ctx, "claim an issue", func(t *txn) error {
		// Without the failure policy's rules: the lookups they make per
		// candidate were half of this read, and inside the lock firstOf
		// checks the candidates against every rule anyway.
		spec, err := sqliteTx{t, e}.crowded(newReadySpec(t.flavor, req.Agent, req.Filters, t.policy, t.now).without(rule.costly))
		if err != nil {
			return err
		}
		var id string
		return t.each(spec.nextK(headSize), []any{&id}, func() { ids = append(ids, id) })
	})
	if err != nil {
		d.place.Leave()
	}
	return ids, d, err
}

func (e *sqliteEngine) bind(t *txn, tx *sql.Tx) engineTx {
	t.on(e.stmts.On(tx)) // each statement is prepared once; nil tx: the pool
	return sqliteTx{t, e}
}

// look runs fn on the pool.
func (e *sqliteEngine) look(ctx context.Context, fn func(*txn) error) error {
	return fn(e.txn(ctx, nil))
}

// snapshot is a deferred BEGIN: a read that waits for no writer (the pool
// begins write transactions with BEGIN IMMEDIATE).
func (e *sqliteEngine) snapshot(ctx context.Context, fn func(*txn) error) error {
	tx, err := e.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(e.txn(ctx, tx))
}

func (e *sqliteEngine) code(err error) (Code, string, bool) { return sqliteCode(err) }

// sqliteCodes are bd-claim's codes for SQLite's primary result codes,
// and what to do.
var sqliteCodes = map[int]struct {
	code Code
	what string
}{
	sqlite.CodeBusy:     {EBusy, "the database stayed locked by another writer; retry later or raise --timeout-ms"},
	sqlite.CodeLocked:   {EBusy, "the database stayed locked by another writer; retry later or raise --timeout-ms"},
	sqlite.CodeNotADB:   {ESchema, "the file is not a SQLite database"},
	sqlite.CodeCorrupt:  {ESchema, "the database file is corrupt; restore it or rebuild it with bd from issues.jsonl"},
	sqlite.CodeCantOpen: {EDBNotFound, "the database cannot be opened"},
}

// sqliteCode classifies SQLite's errors by their primary result code: ok
// false for any other error.
func sqliteCode(err error) (Code, string, bool) {
	c, ok := sqliteCodes[sqlite.Code(err)]
	return c.code, c.what, ok
}

// watch reads PRAGMA data_version, one counter and no query, on a
// connection of its own: the counter is per connection.
func (e *sqliteEngine) watch(ctx context.Context) (func() string, func(), error) {
	conn, err := e.conn.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	return func() string {
		var v string // the counter, as text
		_ = conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
		return v
	}, func() { conn.Close() }, nil
}

// sqliteTx is one transaction on a SQLite workspace.
type sqliteTx struct {
	*txn
	e *sqliteEngine
}

func (x sqliteTx) claimState(id string) (claimEvent, error) {
	var c claimEvent
	ok, err := found(x.queryRow(claims(x.now).Where(sq.Eq{"i.id": id})).Scan(c.dest()...))
	if err == nil && !ok {
		err = x.notFound(id)
	}
	return c, err
}

func (x sqliteTx) lookalikes(part string) (string, []string, error) {
	r, err := x.e.q.IssueLookalikes(x.ctx, x.conn, part)
	var ids []string
	if err == nil {
		err = json.Unmarshal([]byte(r.Ids), &ids)
	}
	return r.Prefix, ids, err
}

func (x sqliteTx) held() ([]claimEvent, error) {
	var out []claimEvent
	var c claimEvent
	err := x.each(claims(x.now).Where("i.status = 'in_progress'").OrderBy("2, 1"), c.dest(), func() { out = append(out, c) })
	return out, err
}

func (x sqliteTx) heldCount(agent string) (int64, error) {
	return x.e.q.IssueHeldCount(x.ctx, x.conn, agent)
}

func (x sqliteTx) customTypes() ([]string, error) {
	v, err := x.e.q.CustomTypes(x.ctx, x.conn)
	return []string{v}, err
}

// read loads one issue with the columns the flavor reads.
func (x sqliteTx) read(id string) (*row, error) {
	cols := x.flavor.readCols
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range cols {
		ptrs[i] = &vals[i]
	}
	if err := x.conn.QueryRowContext(x.ctx, x.e.readSQL, id).Scan(ptrs...); err != nil {
		return nil, err
	}
	labels, err := x.e.q.IssueLabels(x.ctx, x.conn, id)
	if err != nil {
		return nil, err
	}
	r := &row{cols: make(map[string]sql.NullString, len(cols))}
	for i, c := range cols {
		r.cols[c] = vals[i]
	}
	_ = json.Unmarshal([]byte(labels), &r.Labels) // SQLite's json_group_array output
	r.ID, r.Title, r.Status = r.text("id"), r.text("title"), r.text("status")
	r.Assignee, r.IssueType, r.ContentHash = r.text("assignee"), r.text("issue_type"), r.text("content_hash")
	r.CreatedAt, r.UpdatedAt = r.text("created_at"), r.text("updated_at")
	r.Priority, _ = strconv.Atoi(r.text("priority")) // INTEGER NOT NULL CHECK 0..4
	if ref := r.cols["external_ref"]; ref.Valid {
		r.ExternalRef = &ref.String
	}
	return r, nil
}

// narrow: every rule can refuse an issue on SQLite.
func (x sqliteTx) narrow(spec readySpec) (readySpec, error) { return spec, nil }

// crowded lets a sort of the candidates (readySpec.nextK) walk the age
// index only where a crowd may be: crowdSize open issues or more, of the
// most urgent open priority for the priority order. Elsewhere the plain
// sort's statement is the cheaper to prepare (about half a millisecond of
// every claim process) and to run. The statement's own crowd check, on the
// claimable issues, still decides whether it walks. Only a sort asks: a
// claim that takes a candidate read ahead or a remembered one does not.
func (x sqliteTx) crowded(spec readySpec) (readySpec, error) {
	if !spec.byAge || spec.sort == SortHybrid {
		return spec, nil
	}
	count := x.e.q.IssueOpenCrowd
	if spec.sort == SortPriority {
		count = x.e.q.IssueTopPriorityCrowd
	}
	n, err := count(x.ctx, x.conn, crowdSize)
	spec.byAge = n >= crowdSize
	return spec, err
}

// first sorts the candidates afresh and selects the first claimable one.
func (x sqliteTx) first(spec readySpec) (id string, ok bool, err error) {
	if spec, err = x.crowded(spec); err == nil {
		ok, err = found(x.queryRow(spec.next()).Scan(&id))
	}
	return id, ok, err
}

// next takes the first claimable of head; else a look (a dry run) sorts
// the candidates, and a claim takes the next of the Store's remembered
// order for req (queue).
func (x sqliteTx) next(spec readySpec, req Request, head []string) (id string, ok bool, err error) {
	if len(head) > 0 {
		if ok, err = found(x.queryRow(spec.firstOf(head)).Scan(&id)); ok || err != nil {
			return id, ok, err
		}
	}
	if x.try == 0 {
		return x.first(spec)
	}
	return x.e.queues.of(req).next(x.txn, spec, func() (string, bool, error) { return x.first(spec) })
}

// take writes claim c as bd's UpdateIssue does (transition): a takeover
// ends the expired claim first; an issue the agent holds already is
// claimed again without a write, its lease renewed when req asks for one.
// The Store's remembered orders learn of the claim once it commits.
func (x sqliteTx) take(c choice, req Request) (Result, error) {
	x.committed = append(x.committed, func() { x.e.queues.taken(c.r.ID, x.now) })
	res := c.result()
	if c.held != nil {
		var err error
		if req.Lease > 0 {
			res.Lease, err = x.renew(req.ID, req.Agent, *c.held, req.Lease)
		}
		return res, err
	}
	if c.tookOver != nil {
		if err := x.txn.expire(c.r, req.Agent, *c.tookOver, "taken over by "+req.Agent); err != nil {
			return Result{}, err
		}
	}
	res.Lease = newLease(x.now, req.Lease)
	var comment string
	if res.Lease != nil {
		comment = res.Lease.comment()
	}
	var err error
	res.ClaimID, err = x.transition(c.r, move{actor: req.Agent, status: "in_progress", assignee: req.Agent,
		event: x.flavor.claimEvent, comment: comment})
	return res, err
}

// unclaim writes the release as `bd update --status open --assignee ""`
// does, the reason in the status_changed event's comment.
func (x sqliteTx) unclaim(r *row, req ReleaseRequest) error {
	_, err := x.transition(r, move{actor: req.Agent, status: "open", event: "status_changed", comment: releaseComment(req)})
	return err
}

// endClaim writes the end of an expired claim as a status change to open,
// unassigned, and adds bd-claim's note as a comment too.
func (x sqliteTx) endClaim(r *row, actor, holder, note string) error {
	if _, err := x.transition(r, move{actor: actor, status: "open", event: "status_changed", comment: expiredPrefix + note}); err != nil {
		return err
	}
	return x.comment(r, actor, "bd-claim: "+note)
}

// renew writes a new lease into the comment of agent's claim event, in
// place: a heartbeat adds no row, and the issue row, its hash and its
// export are untouched. d 0 renews by the claim's own lease length.
func (x sqliteTx) renew(id, agent string, c claimEvent, d time.Duration) (*Lease, error) {
	if c.ID == 0 || c.Actor != agent {
		return nil, Errorf(ENotClaimable, "issue %s was assigned to %s by %q, not claimed by %s itself, so its claim has no lease to renew: release it and claim it with bd-claim", id, agent, c.Actor, agent)
	}
	if d == 0 {
		old := parseLease(c.Comment)
		if old == nil || old.Duration <= 0 {
			return nil, Errorf(EInvalid, "claim %d of issue %s has no lease: give its length with --lease", c.ID, id)
		}
		d = old.Duration
	}
	l := newLease(x.now, d)
	_, err := x.e.q.EventCommentSet(x.ctx, x.conn, db.EventCommentSetParams{ID: c.ID, Comment: text(l.comment())})
	return l, err
}

func (x sqliteTx) labelSet(id, label string, add bool) (int64, error) {
	if add {
		return x.e.q.LabelAdd(x.ctx, x.conn, db.LabelAddParams{IssueID: id, Label: label})
	}
	return x.e.q.LabelRemove(x.ctx, x.conn, db.LabelRemoveParams{IssueID: id, Label: label})
}

// labelled records a label change as bd's AddLabel and RemoveLabel do: a
// label_added or label_removed event and a dirty mark.
func (x sqliteTx) labelled(r *row, actor, verb, event, comment string) error {
	_, err := x.event(r.ID, event, actor, sql.NullString{}, sql.NullString{}, comment)
	if err == nil {
		err = x.dirty(r.ID, x.flavor.rowAt(x.now))
	}
	return err
}

// comment adds a comment as `bd comments add` does, so that bd show lists
// it and bd export carries it.
func (x sqliteTx) comment(r *row, author, text string) error {
	err := x.e.q.CommentInsert(x.ctx, x.conn, db.CommentInsertParams{IssueID: r.ID, Author: author, Text: text, CreatedAt: x.flavor.eventAt(x.now)})
	if err == nil {
		err = x.dirty(r.ID, x.flavor.rowAt(x.now))
	}
	return err
}

// resetMark touches the issue (bd's AddComment does) and marks the place
// with a commented event.
func (x sqliteTx) resetMark(r *row, actor, comment string) error {
	updated := x.flavor.updatedAt(x.now, r.UpdatedAt)
	if _, err := x.e.q.IssueTouch(x.ctx, x.conn, db.IssueTouchParams{UpdatedAt: updated, ID: r.ID}); err != nil {
		return err
	}
	r.UpdatedAt = updated
	_, err := x.event(r.ID, "commented", actor, sql.NullString{}, sql.NullString{}, comment)
	return err
}

func (x sqliteTx) eventCounts(since time.Time) (EventCounts, error) {
	ev, err := x.e.q.EventCountsSince(x.ctx, x.conn, db.EventCountsSinceParams{
		Since: x.flavor.eventAt(since), Released: like(releasedPrefix), Failed: like(failedPrefix), Expired: like(expiredPrefix),
	})
	return EventCounts{int(ev.Claims), int(ev.Releases), int(ev.Failures), int(ev.Reclaims), int(ev.Closes)}, err
}

// closeVersion is the oldest bd whose close bd-claim writes on SQLite: bd
// v0.47.0 to v0.50 close alike (CloseIssue, the blocked-cache rebuild and
// the convoy completion are the same statements; bd close refuses a
// blocked issue since v0.47.0).
var closeVersion = Version{0, 47, 0}

// closable refuses what bd close (v0.47-v0.50) refuses of a held issue: one
// that is in blocked_issues_cache with open blockers (bd's IsBlocked,
// GH#962). An older bd's workspace is refused: its close differs.
func (x sqliteTx) closable(id string) error {
	if !x.flavor.closes {
		return Errorf(ESchema, "bd %s last wrote this workspace, and bd-claim writes the close of bd %s to %d.%d.x only: release the issue and close it with `bd close %s`",
			x.flavor.version, closeVersion, maxVersion[0], maxVersion[1], id)
	}
	blockers, err := x.e.q.IssueCloseBlockers(x.ctx, x.conn, id)
	if err == nil && blockers != "" {
		err = Errorf(ENotClaimable, "issue %s is blocked by open issues %s: bd close refuses to close it until they are closed", id, blockers)
	}
	return err
}

// closeIssue writes actor's close of r as bd's CloseIssue (v0.47-v0.50)
// does, in one transaction: the issue closed (closed_at and updated_at
// now, close_reason, closed_by_session empty: bd-claim has no session; the
// content hash as it was), a closed event whose comment is the reason, a
// dirty mark, blocked_issues_cache rebuilt, and every convoy (an issue
// labelled gt:convoy) that tracks r and now tracks only closed issues
// closed as bd closes it.
func (x sqliteTx) closeIssue(r *row, actor, reason string) error {
	at := x.flavor.rowAt(x.now)
	n, err := x.e.q.IssueClose(x.ctx, x.conn, db.IssueCloseParams{
		ClosedAt: text(at), UpdatedAt: at, CloseReason: text(reason), ClosedBySession: text(""),
		ID: r.ID, OldStatus: r.Status, OldAssignee: r.Assignee,
	})
	if err := swapped(n, err, r.ID); err != nil {
		return err
	}
	r.Status, r.UpdatedAt = "closed", at
	if err := x.closed(r.ID, actor, reason, at); err != nil {
		return err
	}
	if err := x.rebuildBlockedCache(); err != nil {
		return err
	}
	list, err := x.e.q.ConvoysTracking(x.ctx, x.conn, r.ID)
	var convoys []string
	_ = json.Unmarshal([]byte(list), &convoys) // SQLite's json_group_array output
	for _, id := range convoys {
		var open int64
		if open, err = x.e.q.ConvoyOpenTracked(x.ctx, x.conn, id); err == nil && open == 0 {
			const done = "All tracked issues completed"
			err = x.e.q.ConvoyClose(x.ctx, x.conn, db.ConvoyCloseParams{ClosedAt: text(at), UpdatedAt: at, CloseReason: text(done), ID: id})
			if err == nil {
				err = x.closed(id, "system:convoy-completion", done, at)
			}
		}
		if err != nil {
			break
		}
	}
	return err
}

// rebuildBlockedCache fills blocked_issues_cache anew as bd's
// rebuildBlockedCache does after a close: emptied, then the issues bd's
// blocked rule (BlockedCacheBlocked, bd's own recursive query, as a JSON
// array) finds.
func (x sqliteTx) rebuildBlockedCache() error {
	err := x.e.q.BlockedCacheClear(x.ctx, x.conn)
	var ids string
	if err == nil {
		ids, err = x.e.q.BlockedCacheBlocked(x.ctx, x.conn)
	}
	if err == nil {
		err = x.e.q.BlockedCacheFill(x.ctx, x.conn, ids)
	}
	return err
}

// closed records the close of issue id as bd does: the closed event, its
// comment the reason, and the dirty mark.
func (x sqliteTx) closed(id, actor, reason, at string) error {
	_, err := x.event(id, "closed", actor, sql.NullString{}, sql.NullString{}, reason)
	if err == nil {
		err = x.dirty(id, at)
	}
	return err
}

// move is a change of an issue's status and holder, and the event that
// records it.
type move struct {
	actor            string
	status, assignee string
	event, comment   string // the event's type and comment ("" for none)
}

// transition moves r as bd's UpdateIssue writes it: the row with a later
// updated_at and a recomputed content hash (compare-and-swap on the status
// and assignee it was read with), one event (old_value the issue as it
// was, new_value the change) and one dirty mark. It returns the event's id
// and leaves r as written.
func (x sqliteTx) transition(r *row, m move) (int64, error) {
	updated := x.flavor.updatedAt(x.now, r.UpdatedAt)
	oldValue := x.flavor.eventOldValue(r)
	oldStatus, oldAssignee := r.Status, r.Assignee
	r.cols["status"], r.cols["assignee"] = text(m.status), text(m.assignee)
	hash := x.flavor.contentHash(r)
	r.cols["updated_at"], r.cols["content_hash"] = text(updated), text(hash)
	r.Status, r.Assignee, r.ContentHash, r.UpdatedAt = m.status, m.assignee, hash, updated
	n, err := x.e.q.IssueHolderSet(x.ctx, x.conn, db.IssueHolderSetParams{
		Status: m.status, Assignee: m.assignee, UpdatedAt: updated, ContentHash: text(hash),
		ID: r.ID, OldStatus: oldStatus, OldAssignee: oldAssignee,
	})
	if err := swapped(n, err, r.ID); err != nil {
		return 0, err
	}
	newValue, _ := json.Marshal(map[string]string{"assignee": m.assignee, "status": m.status})
	id, err := x.event(r.ID, m.event, m.actor, text(oldValue), text(string(newValue)), m.comment)
	if err == nil {
		err = x.dirty(r.ID, updated)
	}
	return id, err
}

// swapped is the compare-and-swap guard of an update of issue id that
// affected n rows (err its error): nil when it changed the one row, read
// in the same write transaction, that it was to change.
func swapped(n int64, err error, id string) error {
	if err == nil && n != 1 {
		err = Errorf(EUnexpected, "issue %s changed while bd-claim held the write lock", id)
	}
	return err
}

// event appends one audit event, dated now in bd's CURRENT_TIMESTAMP form.
func (x sqliteTx) event(id, eventType, actor string, oldValue, newValue sql.NullString, comment string) (int64, error) {
	return x.e.q.EventInsert(x.ctx, x.conn, db.EventInsertParams{
		IssueID: id, EventType: eventType, Actor: actor, OldValue: oldValue, NewValue: newValue,
		Comment: optional(comment), CreatedAt: x.flavor.eventAt(x.now),
	})
}

// dirty flags an issue for bd's next JSONL export.
func (x sqliteTx) dirty(id, at string) error {
	return x.e.q.DirtyIssueMark(x.ctx, x.conn, db.DirtyIssueMarkParams{IssueID: id, MarkedAt: at})
}

// next selects the first claimable issue. For the priority order it first
// narrows to the most urgent priority that has a claimable issue: min()
// walks idx_issues_status_priority and stops at the first match, so only
// that priority's issues are ordered by age, not every open issue. The
// failure policy's rules, which look up events, are checked last: on the
// ordered candidates, one at a time, until one passes (the LIMIT keeps
// SQLite from merging the two levels).
func (s readySpec) next() sq.SelectBuilder { return s.nextK(1) }

// walkSize is how many of the oldest issues a claim walks in age order
// (nextK) before it sorts the candidates instead.
const walkSize = 4096

// crowdSize is how many open candidates (of the priority, for the
// priority order) make nextK walk rather than sort.
const crowdSize = 2048

// fewLabelled is how few issues with every --label make nextK sort them
// alone rather than the open issues of the priority.
const fewLabelled = 1024

// nextK selects the first k claimable issues of next's narrowing (the most
// urgent priority that has one, for the priority order), in claim order.
// The orders that follow age once narrowed (priority, oldest) walk
// idx_issues_created_at among the walkSize oldest issues (every issue
// created up to the walkSize-th oldest's created_at: a prefix of the order,
// ties included) and stop at the k-th that passes, where sorting every
// candidate by age costs the whole priority's issues (all open issues at
// 100k of one priority: 160ms, the walk 1ms). The claimable issues the
// walk finds are the first of the claim order; only when it finds none
// (every old issue is closed, held or of another priority) are the
// candidates sorted, as the hybrid order always is. The walk is taken
// only for a crowd of at least crowdSize open candidates: fewer are
// sorted faster than the walk skips the other issues. A workspace
// without the index (flavor.byAge) always sorts. With --label, when fewer
// than fewLabelled issues carry every label, those alone are sorted.
func (s readySpec) nextK(k uint64) sq.SelectBuilder {
	cheap, costly := s.split()
	// first selects the first k of b's candidates that pass the costly
	// rules, in order; and none unless when, a constant condition, holds
	// (nil: always). A LIMIT is computed once, before SQLite walks or
	// sorts: a subquery in a WHERE clause would be checked on every row.
	first := func(b sq.SelectBuilder, when sq.Sqlizer, k uint64) sq.SelectBuilder {
		n := k
		if len(costly) > 0 {
			n = 1 << 62
		}
		if when == nil {
			b = b.Limit(n)
		} else {
			b = b.SuffixExpr(sq.Expr("LIMIT CASE WHEN ? THEN ? ELSE 0 END", when, n))
		}
		if len(costly) == 0 { // a specification without(rule.costly)
			return b
		}
		return sq.Select("i.id").FromSelect(b, "i").Where(costly).Limit(k)
	}
	var ctes []any               // the statement's WITH clause (sq.Sqlizer), each computed once
	var parts []sq.SelectBuilder // its parts, UNION ALL: at most one yields rows
	var gate sq.Sqlizer          // when the parts after the label-driven one run (nil: always)
	and := func(c sq.Sqlizer) sq.Sqlizer {
		if gate == nil {
			return c
		}
		return sq.Expr("? AND ?", gate, c) // gate first: it spares the rest
	}
	if len(s.labels) > 0 {
		// When few issues have every --label, they are the candidates:
		// read from idx_labels_label_issue (the first label's, the others
		// looked up in the labels' primary key) and sorted in full claim
		// order, instead of checking the labels of every issue of the
		// priority (and of the open issues before it, for the min()).
		has := sq.Select("d.issue_id").From("labels d").Where(sq.Eq{"d.label": s.labels[0]})
		for _, l := range s.labels[1:] {
			has = has.Where(sq.Expr("EXISTS (SELECT 1 FROM labels e WHERE e.issue_id = d.issue_id AND e.label = ?)", l))
		}
		ctes = append(ctes, sq.Expr("labelled(issue_id) AS (?)", has.Suffix(fmt.Sprintf("LIMIT %d", fewLabelled))))
		few := sq.Expr(fmt.Sprintf("(SELECT count(*) FROM labelled) < %d", fewLabelled))
		parts = append(parts, first(sq.Select("i.id").From("labelled CROSS JOIN "+s.from+" ON i.id = labelled.issue_id").
			Where(cheap).OrderByClause(s.order, s.args...), few, k))
		gate = sq.Expr("NOT ?", few)
	}
	crowd := "w.status = 'open'" // the claim order's crowd: the open issues it walks or sorts
	if s.sort == SortPriority {
		// One min() per status (open, and in_progress for an expired
		// lease): with an equality on status, each stops at its first
		// match in the index. An in_progress issue matters only when it is
		// more urgent than every claimable open one, and hardly any lease
		// has expired: so the second walk stops at that priority, instead
		// of checking the lease of every issue held at any priority. The
		// inner alias i shadows the outer one: the same rules apply.
		where := s.where()
		ctes = append(ctes, sq.Expr(`open(p) AS (SELECT COALESCE((SELECT min(i.priority) FROM issues i WHERE i.status = 'open' AND ?), 5)),
	pin(p) AS (SELECT COALESCE((SELECT min(i.priority) FROM issues i WHERE i.status = 'in_progress' AND i.priority < (SELECT p FROM open) AND ?), (SELECT p FROM open)))`, where, where))
		cheap = append(cheap, sq.Expr("i.priority = (SELECT p FROM pin)"))
		crowd += " AND w.priority = (SELECT p FROM pin)"
	}
	sorted := sq.Select("i.id").From(s.from).Where(cheap).OrderByClause(s.order, s.args...)
	if s.sort == SortHybrid || !s.byAge {
		parts = append(parts, first(sorted, gate, k))
	} else {
		walk := sq.Select("i.id").From(s.from+" INDEXED BY idx_issues_created_at").Where(cheap).
			Where(sq.Expr(`i.created_at <= COALESCE(
	(SELECT w.created_at FROM issues w INDEXED BY idx_issues_created_at ORDER BY w.created_at LIMIT 1 OFFSET ?),
	(SELECT max(w.created_at) FROM issues w))`, walkSize-1)).
			OrderBy("i.created_at ASC", "i.id ASC")
		// The walk pays when the crowd is large: a few hundred issues
		// are sorted faster than the walk skips the other priorities'.
		// crowdSize is written in the statement: as bound parameters, the
		// count made SQLite (modernc) take 1ms more at 1k issues.
		crowded := sq.Expr(fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM issues w WHERE %s LIMIT %d)) = %d", crowd, crowdSize, crowdSize))
		// The walk's issues (a CTE, read twice, walked once), or else the
		// sorted candidates.
		ctes = append(ctes, sq.Expr("walked(id) AS (?)", first(walk, and(crowded), k)))
		parts = append(parts, sq.Select("id").From("walked"), first(sorted, and(sq.Expr("NOT EXISTS (SELECT 1 FROM walked)")), k))
	}
	out := parts[len(parts)-1]
	if len(parts) > 1 {
		// A part with its own ORDER BY or LIMIT is a subquery of the compound.
		out = sq.Select("p.id").FromSelect(out, "p")
		for i := len(parts) - 2; i >= 0; i-- {
			out = sq.Select("p.id").FromSelect(parts[i], "p").SuffixExpr(sq.Expr("UNION ALL ?", out))
		}
		out = sq.Select("id").FromSelect(out, "u").Limit(k)
	}
	if len(ctes) > 0 {
		out = out.PrefixExpr(sq.Expr("WITH "+strings.TrimSuffix(strings.Repeat("?, ", len(ctes)), ", "), ctes...))
	}
	return out
}

// firstOf selects the first of ids, in their order, that is claimable, on
// SQLite (whose source is the issues table): json_each yields the ids in
// order and, joined first, drives the loop, so the claim stops at the first
// one that passes; an IN list would have SQLite sort every candidate.
func (s readySpec) firstOf(ids []string) sq.SelectBuilder {
	list, _ := json.Marshal(ids) // a []string always marshals
	return sq.Select("i.id").From("json_each h CROSS JOIN "+s.from).Where("h.json = ?", string(list)).
		Where("i.id = h.value").Where(s.where()).OrderBy("h.rowid").Limit(1)
}

// claimOrder selects every claimable issue's id in claim order, as one JSON array.
func (s readySpec) claimOrder() sq.SelectBuilder {
	return sq.Select().Column(sq.Expr("json_group_array(i.id ORDER BY "+s.order+")", s.args...)).From(s.from).Where(s.where())
}

// shared is s as every agent with s's filters sees it: the assignee rule
// admits only the issues assigned to nobody (or held: a takeover), which
// each of those agents' specifications judges alike and orders alike.
func (s readySpec) shared() readySpec {
	s.rules = slices.Clone(s.rules)
	for i, r := range s.rules {
		if r.name == "assignee" {
			s.rules[i].pred = unassigned
		}
	}
	s.agent = ""
	return s
}

// ownOpen selects a claimable open issue assigned to s's agent: what its
// order holds beyond the shared one's (readySpec.shared). The unary + keeps
// SQLite off idx_issues_status_priority (every open issue) and on
// idx_issues_assignee (the agent's issues).
func (s readySpec) ownOpen() sq.SelectBuilder {
	return sq.Select("i.id").From(s.from).Where("i.assignee = ? AND +i.status = 'open'", s.agent).Where(s.where()).Limit(1)
}

// currentClaim is the id of the claim event of the issue aliased i: its
// latest claimed or status_changed event, found through
// idx_events_issue_type. That id is the claim's fencing token (claim_id);
// its comment carries the lease.
const currentClaim = `(SELECT max(c.id) FROM events c WHERE c.issue_id = i.id AND c.event_type IN ('claimed', 'status_changed'))`

// leaseUntil is the end of the lease of claim event e of issue i, as
// leaseTime text, or NULL: a claim has a lease only when its claim event
// was written by the issue's holder with a lease comment. A claim bd made
// for someone else, or one bd reassigned since, has none.
var leaseUntil = fmt.Sprintf("(CASE WHEN e.actor = i.assignee AND e.comment LIKE %s THEN substr(e.comment, %d, %d) END)",
	leaseLike, len(leasePrefix)+1, len(leaseTime))

// leaseExpired is true for an in_progress issue i whose current claim has
// a lease that has ended at now: the issue may be taken over.
func leaseExpired(now time.Time) sq.Sqlizer {
	return sq.Expr("(i.status = 'in_progress' AND EXISTS (SELECT 1 FROM events e WHERE e.id = "+currentClaim+" AND "+leaseUntil+" <= ?))",
		now.UTC().Format(leaseTime))
}

// claims selects issue i with its current claim event e (NULLs when it has
// none): the id, the holder, the claim's id, actor, comment and time, its
// lease end (” without a lease) and whether that lease has ended at now.
// Callers add the WHERE clause. Scan the row with claimEvent.scan.
func claims(now time.Time) sq.SelectBuilder {
	return sq.Select("i.id", "COALESCE(i.assignee, '')", "i.status", "COALESCE(e.id, 0)", "COALESCE(e.actor, '')",
		"COALESCE(e.comment, '')", "COALESCE(CAST(e.created_at AS TEXT), '')").
		Column("COALESCE(" + leaseUntil + ", '')").
		Column(sq.Expr("COALESCE("+leaseUntil+" <= ?, 0)", now.UTC().Format(leaseTime))).
		From("issues i").LeftJoin("events e ON e.id = " + currentClaim)
}

// The time layouts of bd's SQLite workspaces, one per format.
const (
	// sqliteTime is CURRENT_TIMESTAMP's and datetime()'s form: how bd's
	// column defaults leave events.created_at and comments.created_at, and
	// what bd's datetime() comparisons use.
	sqliteTime = "2006-01-02 15:04:05"
	// rowTime is how bd writes issues.updated_at and dirty_issues.marked_at.
	rowTime = time.RFC3339Nano
)

// Oldest and newest bd releases whose SQLite workspaces bd-claim writes.
var (
	minVersion = Version{0, 27, 0}
	maxVersion = Version{0, 50, 99}
)

// requiredColumns are the columns a claim reads or writes, per table.
var requiredColumns = []struct {
	table string
	cols  []string
}{
	{"issues", []string{"id", "content_hash", "title", "description", "design", "acceptance_criteria", "notes",
		"status", "priority", "issue_type", "assignee", "created_at", "updated_at", "external_ref"}},
	{"labels", []string{"issue_id", "label"}},
	{"dependencies", []string{"issue_id", "depends_on_id", "type"}},
	{"blocked_issues_cache", []string{"issue_id"}},
	{"events", []string{"id", "issue_id", "event_type", "actor", "old_value", "new_value", "comment", "created_at"}},
	{"comments", []string{"issue_id", "author", "text", "created_at"}},
	{"dirty_issues", []string{"issue_id", "marked_at"}},
	{"metadata", []string{"key", "value"}},
	{"config", []string{"key", "value"}},
}

// detectFlavor checks that conn is a Beads SQLite database bd-claim can
// write faithfully and returns its flavor, in two queries. Extra unknown
// columns are fine; a missing one is SCHEMA_INCOMPATIBLE.
func detectFlavor(ctx context.Context, conn db.DBTX) (flavor, error) {
	q := db.New()
	list, err := q.SchemaColumns(ctx, conn)
	if err != nil {
		return flavor{}, classify(err, "read the schema", sqliteCode)
	}
	tables := map[string]map[string]bool{}
	for _, tc := range strings.Split(list, ",") {
		table, col, _ := strings.Cut(tc, ".")
		if tables[table] == nil {
			tables[table] = map[string]bool{}
		}
		tables[table][col] = true
	}
	for _, rc := range requiredColumns {
		cols := tables[rc.table]
		if len(cols) == 0 {
			return flavor{}, Errorf(ESchema, "there is no %s table: not a Beads SQLite database", rc.table)
		}
		for _, c := range rc.cols {
			if !cols[c] {
				return flavor{}, Errorf(ESchema, "table %s has no column %s: not a Beads SQLite database bd-claim knows", rc.table, c)
			}
		}
	}
	if tables["blocked_issues_cache"]["blocked_by"] {
		return flavor{}, Errorf(ESchema, "this database was last written by beads_rust (br), whose blocked_issues_cache differs from bd's; open it with bd first")
	}
	set, err := q.SchemaSettings(ctx, conn)
	if err != nil {
		return flavor{}, classify(err, "read bd's metadata", sqliteCode)
	}
	v, ok := ParseVersion(set.BdVersion)
	if !ok {
		return flavor{}, Errorf(ESchema, "metadata.bd_version is %q: bd-claim needs the bd version that wrote the database (run any bd command on it once)", set.BdVersion)
	}
	if !v.AtLeast(minVersion[0], minVersion[1], minVersion[2]) || v.AtLeast(maxVersion[0], maxVersion[1]+1, 0) {
		return flavor{}, Errorf(ESchema, "bd %s wrote this database; bd-claim supports SQLite workspaces of bd %s to %d.%d.x", v, minVersion, maxVersion[0], maxVersion[1])
	}
	f := sqliteFlavor(v, tables["issues"], set.ExcludeIDPatterns)
	f.byAge = set.CreatedAtIndex == 1
	return f, nil
}

// sqliteUnder is bd ready --parent of bd v0.27-v0.50: the descendants of
// root through parent-child edges.
func sqliteUnder(root string) sq.Sqlizer {
	return sq.Expr(`i.id IN (
	WITH RECURSIVE descendants(id) AS (
		SELECT issue_id FROM dependencies WHERE type = 'parent-child' AND depends_on_id = ?
		UNION
		SELECT d.issue_id FROM dependencies d JOIN descendants ON d.depends_on_id = descendants.id
		WHERE d.type = 'parent-child')
	SELECT id FROM descendants)`, root)
}

// sqliteFlavor is the flavor of a SQLite workspace last written by bd v,
// whose issues table has columns, with bd ready's configured id exclusions.
func sqliteFlavor(v Version, columns map[string]bool, idPatterns string) flavor {
	f := flavor{
		version: v, columns: columns, under: sqliteUnder, source: "issues i", labels: "labels",
		hash: modernHash, payload: modernJSON, claimEvent: "status_changed",
		eventTime: sqliteTime, rowTime: rowTime, history: sqliteHistory,
		notBlocked: rule{"blocked", "it is blocked by an open dependency (blocked_issues_cache)",
			sq.Expr("NOT EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)")},
		leaseExpired: leaseExpired, hybrid: sqliteHybrid,
		glob: sqliteGlob, kind: "SQLite", types: []string{"bug", "feature", "task", "epic", "chore", "event"},
	}
	if columns["metadata"] {
		f.metadata = &sqliteMetadata
	}
	if columns["defer_until"] && v.AtLeast(0, 43, 0) {
		f.deferral = sqliteDeferral
	}
	if !v.AtLeast(0, 30, 7) { // bd up to v0.30.6 hashes nine fields and a raw external_ref
		f.hash, f.payload = legacyHash, legacyJSON
	}
	if v.AtLeast(0, 49, 4) {
		f.claimEvent = "claimed"
	}
	f.closes = v.AtLeast(closeVersion[0], closeVersion[1], closeVersion[2]) && columns["close_reason"] && columns["closed_by_session"]
	if columns["pinned"] && v.AtLeast(0, 30, 7) {
		f.ready = append(f.ready, rule{"pinned", "it is pinned", sq.Expr("i.pinned = 0")})
	}
	if columns["ephemeral"] && v.AtLeast(0, 38, 0) {
		f.ready = append(f.ready, rule{"ephemeral", "it is ephemeral (a wisp)", sq.Expr("(i.ephemeral = 0 OR i.ephemeral IS NULL)")})
	}
	if columns["is_template"] {
		f.ready = append(f.ready, rule{"template", "it is a template", sq.Expr("(i.is_template = 0 OR i.is_template IS NULL)")})
	}
	f.idPatterns = excludeIDPatterns(v, idPatterns)
	for _, p := range f.idPatterns {
		f.ready = append(f.ready, rule{"id_pattern:" + p, fmt.Sprintf("its id matches the excluded pattern %q (ready.exclude_id_patterns)", p),
			sq.Expr("i.id NOT LIKE ?", "%"+p+"%")})
	}
	f.excludedTypes = excludedTypes(v)
	f.readCols = []string{"content_hash"}
	for _, p := range f.payload {
		if p.col != "" && columns[p.col] {
			f.readCols = append(f.readCols, p.col)
		}
	}
	return f
}

// excludedTypes lists the issue types bd ready never lists at version v.
func excludedTypes(v Version) []string {
	switch {
	case v.AtLeast(0, 48, 0):
		return []string{"merge-request", "gate", "molecule", "message", "agent", "role", "rig"}
	case v.AtLeast(0, 42, 0):
		return []string{"merge-request", "gate", "molecule", "message", "agent"}
	case v.AtLeast(0, 36, 0):
		return []string{"merge-request", "gate", "molecule", "message"}
	}
	return nil
}

// excludeIDPatterns is bd ready's id filter: none before v0.47.2, then the
// configured comma-separated list, or the version's default.
func excludeIDPatterns(v Version, configured string) []string {
	if !v.AtLeast(0, 47, 2) {
		return nil
	}
	var out []string
	for _, p := range strings.Split(configured, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	switch {
	case len(out) > 0:
		return out
	case v.AtLeast(0, 49, 0):
		return []string{"-mol-", "-wisp-"}
	default:
		return []string{"-wisp-"}
	}
}

// sqliteGlob is bd ready --label-pattern (a glob, case-sensitive: LIKE
// on Dolt's binary collation) in SQLite's GLOB, whose * and ? are bd's and
// whose [ is made literal, as it is in bd's LIKE.
func sqliteGlob(col, pattern string) sq.Sqlizer {
	return sq.Expr(col+" GLOB ?", strings.ReplaceAll(pattern, "[", "[[]"))
}

// sqliteMetadata reads issues.metadata (JSON text, where the column is) as bd
// v1.3.0's JSON_UNQUOTE(JSON_EXTRACT(metadata, '$."key"')) does on Dolt:
// a string's text, any other value's JSON text (2, true, null). A row
// whose metadata is not JSON matches nothing.
var sqliteMetadata = metadataMatch{
	has: func(key string) sq.Sqlizer {
		return sq.Expr("CASE WHEN json_valid(i.metadata) THEN json_type(i.metadata, ?) IS NOT NULL ELSE 0 END", jsonKey(key))
	},
	field: func(key, value string) sq.Sqlizer {
		p := jsonKey(key)
		return sq.Expr(`CASE WHEN json_valid(i.metadata) THEN COALESCE(CASE json_type(i.metadata, ?) WHEN 'text' THEN json_extract(i.metadata, ?)
			ELSE i.metadata -> ? END = ?, 0) ELSE 0 END`, p, p, p, value)
	},
}

// sqliteDeferral is bd ready's defer_until rule on SQLite.
func sqliteDeferral(now string) []rule {
	return []rule{{"deferred", "it is deferred (defer_until is in the future)",
		sq.Expr("(i.defer_until IS NULL OR datetime(i.defer_until) <= datetime(?))", now)}}
}

// sqliteHybrid is bd's hybrid policy on SQLite, with bd's datetime('now')
// bound to our clock.
func sqliteHybrid(now string) (string, []any) {
	return `CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN 0 ELSE 1 END ASC,
	CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN i.priority ELSE NULL END ASC,
	CASE WHEN datetime(i.created_at) < datetime(?, '-48 hours') THEN i.created_at ELSE NULL END ASC,
	i.created_at ASC, i.id ASC`, []any{now, now, now}
}

// createSQLite makes a new SQLite workspace at dir, as `bd init` leaves
// one: dir/.beads/beads.db from the vendored schema, in WAL mode, and a
// handle on it. It refuses an existing database.
func createSQLite(ctx context.Context, dir string) (Workspace, *sql.DB, error) {
	beads := filepath.Join(dir, ".beads")
	path := filepath.Join(beads, "beads.db")
	ws := Workspace{Root: dir, BeadsDir: beads, DBPath: path}
	err := os.MkdirAll(beads, 0o755)
	if err == nil {
		err = sqlite.Create(ctx, path)
	}
	if err != nil {
		return ws, nil, err
	}
	return ws, sqlite.Open(path, 5*time.Second), nil
}
