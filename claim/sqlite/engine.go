package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/writers"
	"github.com/bdclaim/bd-claim/db"
)

// Engine is the engine of a SQLite workspace (bd v0.27-v0.50): one writer
// at a time, bd-claim's writers in a kernel queue (writers.Queue) before
// BEGIN IMMEDIATE, a busy database tried again, each statement prepared
// once, and a claim-next that reads its candidates ahead of its turn.
type Engine struct {
	path   string
	cfg    engine.Config
	flavor flavor
	conn   *sql.DB
	stmts  *Stmts
	q      *db.Queries
	// writer is the connection every write transaction runs on, taken
	// from the pool by the first (the Store's writers take turns): PRAGMA
	// data_version, by which a remembered order (orders) tells another
	// connection's writes from the Store's own, counts per connection.
	writer    *sql.Conn
	handoff   *writers.Queue // the writers' queue across processes, opened by the first writer (queue)
	handoffOn sync.Once
	orders    orders // guarded by the Store's writers' turns
	readSQL   string // reads the flavor's columns of one issue (see Read)
	readAhead atomic.Bool
	// faults, when set (by this package's tests), wraps the handle every
	// query runs on, to make chosen statements fail.
	faults func(db.DBTX) db.DBTX
}

// DefaultBusyTimeout is how long each try of a write waits for SQLite's
// write lock when the Store sets no busy timeout (--timeout-ms's default).
const DefaultBusyTimeout = 5 * time.Second

// Open opens the SQLite database at path, as bd v0.27-v0.50 left it, and
// checks who wrote it (detectFlavor). Nothing is written and no file is
// created.
func Open(ctx context.Context, path string, c engine.Config) (*Engine, error) {
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	conn := OpenDB(path, c.BusyTimeout)
	fl, err := detectFlavor(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	// Every column is read as text (NULL stays NULL): bd's timestamps are
	// text, and the hash encodes numbers as decimal text anyway.
	exprs := make([]string, len(fl.readCols))
	for i, col := range fl.readCols {
		exprs[i] = "CAST(" + col + " AS TEXT)"
	}
	readSQL, _ := sq.Select(exprs...).From("issues").Where("id = ?").MustSql()
	return &Engine{path: path, cfg: c, flavor: fl, conn: conn, stmts: NewStmts(conn), q: db.New(), orders: orders{}, readSQL: readSQL}, nil
}

// Flavor is the workspace's bd, for the rules.
func (e *Engine) Flavor() engine.Flavor { return e.flavor.Flavor }

// Close releases the database.
func (e *Engine) Close() error {
	e.stmts.Close()
	if e.handoff != nil {
		e.handoff.Close()
	}
	if e.writer != nil {
		e.writer.Close()
	}
	return e.conn.Close()
}

// queue returns the writers' queue, which the first writer opens (an
// engine that only reads makes no lock file).
func (e *Engine) queue() *writers.Queue {
	e.handoffOn.Do(func() { e.handoff = writers.Open(writers.Dir(), e.path) })
	return e.handoff
}

// queueWait is how long a writer waits in the queue, deck included: the
// busy timeouts of all its tries but the last (at least one).
func (e *Engine) queueWait() time.Duration {
	return e.cfg.BusyTimeout * time.Duration(max(1, e.cfg.Retry.Attempts-1))
}

// deck is a claim's place on the writers' queue's deck (writers.Queue.Deck),
// taken at at to read what it will write before its turn (Ahead).
type deck struct {
	place writers.Place
	at    time.Time
}

// Update is SQLite's frame: every bd-claim writer of the database, in any
// process, waits in a kernel queue (writers.Queue: the next writer is
// woken the moment the previous one leaves, where SQLite's busy handler
// sleeps up to 100ms between looks at the lock, and serves an unlucky
// waiter last), for the busy timeouts of all its tries but the last (at
// least one), then goes on without it with that last try only, so that
// --timeout-ms bounds the whole wait. A claim on the deck (ahead.Place)
// waits for what is left of that and leaves the deck once its turn has
// come. Then fn runs in one BEGIN IMMEDIATE transaction (engine.WithTx:
// begin and commit errors wrapped, a panic rolled back) on the engine's
// write connection, tried again whole while the database is busy, each
// try at the clock read anew; the hooks run after the commit, still in the
// queue. The wait in the queue is bounded by the busy timeouts, not by
// ctx: the write runs to its end whatever becomes of ctx.
func (e *Engine) Update(ctx context.Context, ahead engine.Ahead, fn func(engine.Tx) error) error {
	ctx = context.WithoutCancel(ctx)
	wait, enter := e.queueWait(), e.queue().Enter
	if d, ok := ahead.Place.(deck); ok {
		wait -= time.Since(d.at)
		enter = d.place.Enter // which leaves the deck once the turn comes
	}
	leave, missed := enter(wait)
	defer leave()
	retry := e.cfg.Retry
	if missed {
		retry.Attempts = 1
	}
	if e.writer == nil {
		var err error
		if e.writer, err = e.conn.Conn(ctx); err != nil {
			return err
		}
	}
	var t *tx
	try := 0
	err := Tx(ctx, e.writer, retry, func(sqlTx *sql.Tx) error {
		try++
		t = e.tx(ctx, sqlTx)
		t.try = try
		return fn(t)
	})
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		e.writer = nil // the pool replaces a broken connection; the next write takes another
	}
	if err != nil {
		return err
	}
	for _, f := range t.committed {
		f()
	}
	return nil
}

// headSize is how many candidates a first claim reads before it takes the
// write lock.
const headSize = 64

// Look runs fn on the pool.
func (e *Engine) Look(ctx context.Context, fn func(engine.Tx) error) error {
	return fn(e.tx(ctx, nil))
}

// Snapshot is a deferred BEGIN: a read that waits for no writer (the pool
// begins write transactions with BEGIN IMMEDIATE).
func (e *Engine) Snapshot(ctx context.Context, fn func(engine.Tx) error) error {
	sqlTx, err := e.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	return fn(e.tx(ctx, sqlTx))
}

// Code classifies SQLite's errors by their primary result code: ok false
// for any other error.
func (e *Engine) Code(err error) (engine.Code, string, bool) { return sqliteCode(err) }

func sqliteCode(err error) (engine.Code, string, bool) {
	c, ok := codes[Code(err)]
	return c.code, c.what, ok
}

// codes are bd-claim's codes for SQLite's primary result codes, and what
// to do.
var codes = map[int]struct {
	code engine.Code
	what string
}{
	CodeBusy:     {engine.EBusy, "the database stayed locked by another writer; retry later or raise --timeout-ms"},
	CodeLocked:   {engine.EBusy, "the database stayed locked by another writer; retry later or raise --timeout-ms"},
	CodeNotADB:   {engine.ESchema, "the file is not a SQLite database"},
	CodeCorrupt:  {engine.ESchema, "the database file is corrupt; restore it or rebuild it with bd from issues.jsonl"},
	CodeCantOpen: {engine.EDBNotFound, "the database cannot be opened"},
}

// Watch reads PRAGMA data_version, one counter and no query, on a
// connection of its own: the counter is per connection.
func (e *Engine) Watch(ctx context.Context) (func() string, func(), error) {
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

// tx is one operation of the engine at one instant: a write transaction
// (sqlTx), or a read on the pool (sqlTx nil), each statement prepared once
// (Stmts).
type tx struct {
	e         *Engine
	ctx       context.Context
	conn      db.DBTX
	now       time.Time
	try       int      // which try of the write transaction this is, from 1 (0: a read)
	committed []func() // run once the transaction has committed
}

// tx starts an operation on sqlTx (nil: the pool) at the clock's time.
func (e *Engine) tx(ctx context.Context, sqlTx *sql.Tx) *tx {
	var h db.DBTX = e.stmts.On(sqlTx)
	if e.faults != nil {
		h = e.faults(h)
	}
	return &tx{e: e, ctx: ctx, conn: h, now: e.cfg.Now()}
}

// Now is the instant the operation acts at.
func (t *tx) Now() time.Time { return t.now }
