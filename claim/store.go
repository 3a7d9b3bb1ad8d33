package claim

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/db"
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
	eng       engine     // the database engine, picked once by Open
	writing   sync.Mutex // held for a write transaction
	now       func() time.Time
	policy    Policy
	// faults, when set (by this package's tests), wraps the handle every
	// query runs on, to make chosen statements fail.
	faults func(db.DBTX) db.DBTX
}

// Open checks the database the workspace names (a SQLite file, or a
// database on a Dolt server) and returns a Store on it, with the engine
// of that database. Nothing is written and no file is created.
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
	s := &Store{Workspace: ws, now: o.Now, policy: *o.Policy}
	var err error
	if link, project := ws.doltLink(o.BusyTimeout); link != nil {
		err = openDolt(ctx, s, link, project)
	} else {
		err = openSQLite(ctx, s, o)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Version is the bd release whose writes the Store reproduces: the one
// that last wrote a SQLite workspace, the supported bd v1.3 release on
// Dolt.
func (s *Store) Version() Version { return s.flavor.version }

// Close releases the database.
func (s *Store) Close() error { return s.eng.close() }

// txn is one operation of a Store at one instant: the handle its queries
// run on (a transaction, or the pool for a read), the time it acts at and
// the engine's operations on that handle.
type txn struct {
	*Store
	ctx       context.Context
	conn      db.DBTX
	x         engineTx
	now       time.Time
	committed []func() // run once the transaction has committed (done)
	try       int      // which try of the write transaction this is, from 1 (0: a read)
}

// txn starts write transaction t on tx, at the clock's time.
func (s *Store) txn(ctx context.Context, tx *sql.Tx) *txn {
	t := s.newTxn(ctx)
	t.x = s.eng.bind(t, tx)
	return t
}

// newTxn is an operation at the clock's time, without a handle yet: the
// engine sets it (txn.on) and its operations (txn.x).
func (s *Store) newTxn(ctx context.Context) *txn { return &txn{Store: s, ctx: ctx, now: s.now()} }

// on sets t's handle: h, through the test faults when there are any.
func (t *txn) on(h db.DBTX) {
	if t.faults != nil {
		h = t.faults(h)
	}
	t.conn = h
}

// done runs t's committed hooks, once it has committed.
func (t *txn) done() {
	for _, f := range t.committed {
		f()
	}
}

// classify is classify with the Store's engine's reading of its errors.
func (s *Store) classify(err error, doing string) error { return classify(err, doing, s.eng.code) }

// look runs fn outside any transaction (engine.look): a dry run or
// another read that needs no snapshot.
func (s *Store) look(ctx context.Context, doing string, fn func(t *txn) error) error {
	return s.classify(s.eng.look(ctx, fn), doing)
}

// write is the one shape of every write of the claim lifecycle: the
// Store's writers take turns on a mutex (one connection at a time keeps a
// remembered claim order valid), then fn runs in one write transaction of
// the engine's frame (engine.write). Once begun, the transaction runs to
// its end even when ctx is cancelled (a signal): the caller then learns of
// a committed claim instead of leaving it held by nobody who knows.
func (s *Store) write(ctx context.Context, doing string, fn func(t *txn) error) error {
	return s.writeFromDeck(ctx, doing, deck{}, fn)
}

// deck is a writer's place on the SQLite writers' queue's deck
// (sqlite.Queue.Deck), taken at at to read what it will write before its
// turn (engine.ahead); at is zero for a writer that did not take one.
type deck struct {
	place sqlite.Place
	at    time.Time
}

// writeFromDeck is write for a writer on the deck d.
func (s *Store) writeFromDeck(ctx context.Context, doing string, d deck, fn func(t *txn) error) error {
	if err := ctx.Err(); err != nil {
		d.place.Leave() // a write that ends before its turn comes (no-op without a deck)
		return s.classify(err, doing)
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	return s.classify(s.eng.write(context.WithoutCancel(ctx), doing, d, fn), doing)
}

// tx runs fn in one transaction on conn, tried again whole while
// retryable says the error is worth it, each try a new txn with the clock
// read anew. It returns the txn of the last try.
func (s *Store) tx(ctx context.Context, conn sqlite.Beginner, retry sqlite.Retry, retryable func(error) bool, fn func(t *txn) error) (*txn, error) {
	var t *txn
	try := 0
	err := sqlite.TxRetry(ctx, conn, retry, retryable, func(tx *sql.Tx) error {
		try++
		t = s.txn(ctx, tx)
		t.try = try
		return fn(t)
	})
	return t, err
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

func (t *txn) notFound(id string) error {
	return Errorf(ENotFound, "no issue %s in %s", id, t.Workspace.DBPath)
}

// attempts reads issue id's failure history as the policy judges it. An
// id outside the issues table (a Dolt wisp, whose failed releases
// bd-claim refuses) has none.
func (t *txn) attempts(id string) (failureHistory, error) {
	var a attemptsRow
	_, err := found(t.queryRow(t.policy.attempts(t.flavor.history, sq.Eq{"i.id": id}, t.now)).Scan(a.dest()...))
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
	// engine is what the engine that read the row keeps of it for its
	// writes (the Dolt engine: the row_lock and bd's JSON, doltSnapshotOf).
	engine any
}

func (r *row) text(col string) string { return r.cols[col].String }

func text(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

func optional(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
