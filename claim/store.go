package claim

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/db"
	"github.com/bdclaim/bd-claim/db/dolt"
)

// Options configure a Store.
type Options struct {
	// BusyTimeout is how long SQLite waits for another writer's lock
	// before a try counts as busy: 0 means 5s, a negative value not at all.
	BusyTimeout time.Duration
	// Retry bounds the tries after busy timeouts (default 3 tries, 25ms).
	Retry Retry
	// Now is the clock (default time.Now), read at the start of every
	// transaction.
	Now func() time.Time
	// Policy is the failure policy (default DefaultPolicy).
	Policy *Policy
}

// Retry bounds how often a write transaction is tried again after it found
// the database busy.
type Retry struct {
	Attempts int           // total tries, at least 1
	Backoff  time.Duration // pause after the first busy try; doubled each time up to 1s, with ±50% jitter
}

// Store claims issues in one Beads database. Open it once, claim many times;
// it is safe for concurrent use.
type Store struct {
	Workspace Workspace
	flavor    flavor
	conn      *sql.DB
	stmts     *db.Stmts
	writing   sync.Mutex // held for a write transaction
	// writer is the connection every SQLite write transaction runs on,
	// taken from the pool by the first (guarded by writing): PRAGMA
	// data_version, by which a remembered order (queue) tells another
	// connection's writes from the Store's own, counts per connection.
	writer    *sql.Conn
	handoff   *db.Queue // the writers' queue across processes, opened by the first writer (queue)
	handoffOn sync.Once
	busy      time.Duration
	queues    queues // guarded by writing
	q         *db.Queries
	dq        *dolt.Queries // a Dolt workspace's queries (nil on SQLite)
	readSQL   string        // reads the flavor's columns of one issue (see txn.read)
	now       func() time.Time
	retry     db.Retry
	retryable func(error) bool // which errors of a write transaction are worth another try
	lockWait  int32            // Dolt: seconds a writer waits for the writers' lock
	policy    Policy
	readAhead atomic.Bool // the Store's first claim-next has read its candidates ahead (see head)
	// faults, when set (by this package's tests), wraps the handle every
	// query runs on, to make chosen statements fail.
	faults func(db.DBTX) db.DBTX
}

// Open checks the database at ws.DBPath and returns a Store on it. Nothing
// is written and no file is created.
func Open(ctx context.Context, ws Workspace, o Options) (*Store, error) {
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Retry.Attempts < 1 {
		o.Retry = Retry{Attempts: 3, Backoff: 25 * time.Millisecond}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Policy == nil {
		o.Policy = &DefaultPolicy
	}
	if ws.Dolt != nil {
		return openDolt(ctx, ws, o)
	}
	conn := db.Open(ws.DBPath, o.BusyTimeout)
	fl, err := detectFlavor(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	// Every column is read as text (NULL stays NULL): bd's timestamps are
	// text, and the hash encodes numbers as decimal text anyway.
	exprs := make([]string, len(fl.readCols))
	for i, c := range fl.readCols {
		exprs[i] = "CAST(" + c + " AS TEXT)"
	}
	readSQL, _ := sq.Select(exprs...).From("issues").Where("id = ?").MustSql()
	return &Store{Workspace: ws, flavor: fl, conn: conn, stmts: db.NewStmts(conn), queues: queues{}, q: db.New(),
		busy:    o.BusyTimeout,
		readSQL: readSQL, now: o.Now, retry: db.Retry(o.Retry), retryable: db.IsBusy, policy: *o.Policy}, nil
}

// Version is the bd release that last wrote the workspace.
func (s *Store) Version() Version { return s.flavor.version }

// Close releases the database.
func (s *Store) Close() error {
	if s.stmts != nil {
		s.stmts.Close()
	}
	if s.handoff != nil {
		s.handoff.Close()
	}
	if s.writer != nil {
		s.writer.Close()
	}
	return s.conn.Close()
}

// txn is one operation of a Store at one instant: the handle its queries
// run on (a transaction, or the pool for a read) and the time it acts at.
// Every query of the claim lifecycle is a method of txn.
type txn struct {
	*Store
	ctx       context.Context
	conn      db.DBTX
	now       time.Time
	committed []func() // run once the transaction has committed
	try       int      // which try of the write transaction this is, from 1
	commit    string   // Dolt: the message of the Dolt commit that follows the SQL commit ("" for none)
	landed    *landed  // Dolt: how to tell whether the write landed when its COMMIT's outcome was lost
	labels    bool     // Dolt: the write changed labels, which the Dolt commit stages too
}

func (s *Store) txn(ctx context.Context, tx *sql.Tx) *txn {
	var h db.DBTX
	switch {
	case s.stmts != nil:
		h = s.stmts.On(tx) // each statement is prepared once
	case tx != nil:
		h = tx
	default:
		h = s.conn
	}
	if s.faults != nil {
		h = s.faults(h)
	}
	return &txn{Store: s, ctx: ctx, conn: h, now: s.now()}
}

// look runs fn on the pool, outside any transaction: a dry run or
// another read that needs no snapshot.
func (s *Store) look(ctx context.Context, doing string, fn func(t *txn) error) error {
	return classify(fn(s.txn(ctx, nil)), doing)
}

// write is the one shape of every write of the claim lifecycle: the
// Store's writers queue on a mutex (SQLite has one writer anyway, and one
// connection at a time keeps the claim order valid), then every bd-claim
// writer of the database, in any process, in a kernel queue (db.Queue: the
// next writer is woken the moment the previous one leaves, where SQLite's
// busy handler sleeps up to 100ms between looks at the lock, and serves
// an unlucky waiter last). A writer waits in the queue (on its deck first,
// for a claim-next: see head) for the busy
// timeouts of all its tries but the last (at least one), then goes on
// without it with that last try only, so that --timeout-ms bounds the
// whole wait as before. Then fn runs in one BEGIN IMMEDIATE transaction
// (db.Tx: begin and commit errors wrapped, a panic rolled back), tried
// again whole while the database is busy, the clock read anew at the start
// of each try. Once begun, the transaction runs to
// its end even when ctx is cancelled (a signal): the caller then learns of
// a committed claim instead of leaving it held by nobody who knows. fn's
// committed hooks run after the commit, still in the queue.
func (s *Store) write(ctx context.Context, doing string, fn func(t *txn) error) error {
	return s.writeFromDeck(ctx, doing, deck{}, fn)
}

// deck is a writer's place on the queue's deck (db.Queue.Deck), taken at
// at to read what it will write before its turn; at is zero for a writer
// that did not take one.
type deck struct {
	place db.Place
	at    time.Time
}

// queue returns the writers' queue, which the first writer opens (a Store
// that only reads makes no lock file).
func (s *Store) queue() *db.Queue {
	s.handoffOn.Do(func() {
		if s.handoff == nil { // a Dolt Store has one that never waits
			s.handoff = db.OpenQueue(db.QueueDir(), s.Workspace.DBPath)
		}
	})
	return s.handoff
}

// queueWait is how long a writer waits in the queue, deck included: the
// busy timeouts of all its tries but the last (at least one).
func (s *Store) queueWait() time.Duration {
	return s.busy * time.Duration(max(1, s.retry.Attempts-1))
}

// writeFromDeck is write for a writer on the deck d: it waits for its turn
// for what is left of the queue's wait, and leaves the deck once its turn
// has come.
func (s *Store) writeFromDeck(ctx context.Context, doing string, d deck, fn func(t *txn) error) error {
	wait, enter := s.queueWait(), s.queue().Enter
	if !d.at.IsZero() {
		wait -= time.Since(d.at)
		enter = d.place.Enter // which leaves the deck once the turn comes
	}
	if err := ctx.Err(); err != nil {
		d.place.Leave() // a write that ends before its turn comes (no-op without a deck)
		return classify(err, doing)
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	leave, missed := enter(wait)
	defer leave()
	retry := s.retry
	if missed {
		retry.Attempts = 1
	}
	ctx = context.WithoutCancel(ctx)
	var conn db.Beginner
	var w *doltWriter
	if s.flavor.dolt {
		var err error
		if w, err = s.doltWriter(ctx); err != nil {
			return classify(err, doing)
		}
		defer func() { w.done() }()
		conn = w
	} else {
		if s.writer == nil {
			var err error
			if s.writer, err = s.conn.Conn(ctx); err != nil {
				return classify(err, doing)
			}
		}
		conn = s.writer
	}
	var t *txn
	try := 0
	err := db.TxRetry(ctx, conn, retry, s.retryable, func(tx *sql.Tx) error {
		try++
		t = s.txn(ctx, tx)
		t.try = try
		return fn(t)
	})
	if err != nil && t != nil && t.landed != nil && lostCommit(err) {
		if err = s.landed(ctx, t, err); err == nil {
			// It landed, but its connection is gone (and with it the
			// lock): the Dolt commit needs a writer's connection again.
			w.done()
			w, err = s.doltWriter(ctx)
		}
	}
	if err != nil && s.writer != nil && (errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
		s.writer = nil // the pool replaces a broken connection; the next write takes another
	}
	if err != nil {
		return classify(err, doing)
	}
	for _, f := range t.committed {
		f()
	}
	if t.commit != "" {
		return s.doltCommit(ctx, w, t.commit, t.labels, doing)
	}
	return nil
}

// found is the one place where "no row" is told from a failure: it maps
// sql.ErrNoRows to ok = false and a nil error.
func found(err error) (ok bool, _ error) {
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// queryRow runs a squirrel query built by this package (always valid SQL).
func (t *txn) queryRow(b sq.SelectBuilder) *sql.Row {
	query, args := b.MustSql()
	return t.conn.QueryRowContext(t.ctx, query, args...)
}

// each runs a squirrel query and, for each of its rows, scans it into
// dest and calls row.
func (t *txn) each(b sq.SelectBuilder, dest []any, row func()) error {
	query, args := b.MustSql()
	rows, err := t.conn.QueryContext(t.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for err == nil && rows.Next() {
		if err = rows.Scan(dest...); err == nil {
			row()
		}
	}
	return cmp.Or(err, rows.Err())
}

// issue reads issue id's status, holder and current claim event;
// ISSUE_NOT_FOUND when there is no such issue.
func (t *txn) issue(id string) (claimEvent, error) {
	if t.flavor.dolt {
		return t.doltClaimState(id)
	}
	var c claimEvent
	ok, err := found(t.queryRow(claims(t.now).Where(sq.Eq{"i.id": id})).Scan(c.dest()...))
	if err == nil && !ok {
		err = t.notFound(id)
	}
	return c, err
}

func (t *txn) notFound(id string) error {
	return Errorf(ENotFound, "no issue %s in %s", id, t.Workspace.DBPath)
}

// held lists every in_progress issue with its claim, by holder then id.
func (t *txn) held() ([]claimEvent, error) {
	if t.flavor.dolt {
		return t.doltHeld()
	}
	var out []claimEvent
	var c claimEvent
	err := t.each(claims(t.now).Where("i.status = 'in_progress'").OrderBy("2, 1"), c.dest(), func() { out = append(out, c) })
	return out, err
}

// attempts reads issue id's failure history as the policy judges it.
func (t *txn) attempts(id string) (failureHistory, error) {
	var a attemptsRow
	err := t.queryRow(t.policy.attempts(t.flavor.history, sq.Eq{"i.id": id}, t.now)).Scan(a.dest()...)
	return a.done(t.flavor), err
}

// Issue is a claimed (or, in a dry run, claimable) issue as the JSON
// contract shows it.
type Issue struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Status      string   `json:"status"`
	Assignee    string   `json:"assignee"`
	Priority    int      `json:"priority"`
	IssueType   string   `json:"issue_type"`
	Labels      []string `json:"labels"`
	ContentHash string   `json:"content_hash"`
	ExternalRef *string  `json:"external_ref"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// row is an issue as read for a write: the contract's fields plus every
// column that the flavor's content hash and event payload need.
type row struct {
	Issue
	cols map[string]sql.NullString
	dolt *doltSnapshot // a Dolt workspace's issue: its row_lock and bd's JSON of it
}

func (r *row) text(col string) string { return r.cols[col].String }

// read loads one issue with the columns the flavor reads.
func (t *txn) read(id string) (*row, error) {
	if t.flavor.dolt {
		return t.doltRead(id)
	}
	cols := t.flavor.readCols
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range cols {
		ptrs[i] = &vals[i]
	}
	if err := t.conn.QueryRowContext(t.ctx, t.readSQL, id).Scan(ptrs...); err != nil {
		return nil, err
	}
	labels, err := t.q.IssueLabels(t.ctx, t.conn, id)
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
func (t *txn) transition(r *row, m move) (int64, error) {
	updated := t.flavor.updatedAt(t.now, r.UpdatedAt)
	oldValue := t.flavor.eventOldValue(r)
	oldStatus, oldAssignee := r.Status, r.Assignee
	r.cols["status"], r.cols["assignee"] = text(m.status), text(m.assignee)
	hash := t.flavor.contentHash(r)
	r.cols["updated_at"], r.cols["content_hash"] = text(updated), text(hash)
	r.Status, r.Assignee, r.ContentHash, r.UpdatedAt = m.status, m.assignee, hash, updated
	n, err := t.q.IssueHolderSet(t.ctx, t.conn, db.IssueHolderSetParams{
		Status: m.status, Assignee: m.assignee, UpdatedAt: updated, ContentHash: text(hash),
		ID: r.ID, OldStatus: oldStatus, OldAssignee: oldAssignee,
	})
	if err == nil && n != 1 {
		err = Errorf(EUnexpected, "issue %s changed while bd-claim held the write lock", r.ID)
	}
	if err != nil {
		return 0, err
	}
	newValue, _ := json.Marshal(map[string]string{"assignee": m.assignee, "status": m.status})
	id, err := t.event(r.ID, m.event, m.actor, text(oldValue), text(string(newValue)), m.comment)
	if err == nil {
		err = t.dirty(r.ID, updated)
	}
	return id, err
}

// event appends one audit event, dated now in bd's CURRENT_TIMESTAMP form.
func (t *txn) event(id, eventType, actor string, oldValue, newValue sql.NullString, comment string) (int64, error) {
	return t.q.EventInsert(t.ctx, t.conn, db.EventInsertParams{
		IssueID: id, EventType: eventType, Actor: actor, OldValue: oldValue, NewValue: newValue,
		Comment: optional(comment), CreatedAt: t.flavor.eventAt(t.now),
	})
}

// dirty flags an issue for bd's next JSONL export.
func (t *txn) dirty(id, at string) error {
	return t.q.DirtyIssueMark(t.ctx, t.conn, db.DirtyIssueMarkParams{IssueID: id, MarkedAt: at})
}

func text(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

func optional(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
