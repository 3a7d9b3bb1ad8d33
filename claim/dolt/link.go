package dolt

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/writers"
	"github.com/bdclaim/bd-claim/db"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// doltLink is how the Dolt engine reaches its database, one operation at a
// time, each under bd's workspace gates held shared (Gates): a dolt
// sql-server's pool (serverLink), directly or through a proxied-server
// workspace's proxy, or the embedded engine, opened for each operation and
// closed after it (embeddedLink). The SQL is the same; what differs in
// what bd writes is the link's Dolt commits (commits).
type doltLink interface {
	// commits is how bd makes its Dolt commits in the link's mode.
	commits() doltStyle
	// prepare has check (the open check of the schema and the project)
	// run on the database: at once (a server), or in the session of the
	// first operation (embedded: one open of the engine fewer).
	prepare(ctx context.Context, check func(context.Context, *sql.Conn) error) error
	// open opens a session on the database for one operation, and end
	// ends it.
	open(ctx context.Context) (conn *sql.Conn, end func(), err error)
	// writer opens a connection for one write as the only bd-claim
	// writer of the database: its queries run through wrap (the tests'
	// faults), the transaction and the Dolt commit after it included.
	writer(ctx context.Context, wrap func(db.DBTX) db.DBTX) (*doltWriter, error)
	// watch opens the database's change signal (engine.watch).
	watch(ctx context.Context, e *Engine) (signal func() string, stop func(), err error)
	close() error
}

// doltWriter is a connection for one write; done ends the write (hands the
// writers' lock on, closes what the link opened for it).
type doltWriter struct {
	*sql.Conn
	h    db.DBTX // the connection, as the Store's queries see it
	done func()
	// queued says other writers held the writers' lock when this one came:
	// a swarm is claiming, and its claims spread (doltTx.next).
	queued bool
	// inTx makes the Dolt commit inside the write's transaction, where
	// DOLT_COMMIT commits the transaction with it: the write and its Dolt
	// commit land together or not at all. Else it follows the SQL commit,
	// on the same connection, as bd's server mode makes it.
	inTx bool
}

// wrap is the Store's test faults around h, or h.
func (e *Engine) wrap(h db.DBTX) db.DBTX {
	if e.faults != nil {
		return e.faults(h)
	}
	return h
}

// serverLink is a dolt sql-server (bd v1.3 server mode): one pool for the
// Store's life, and a writers' named lock on the server that bd-claim's
// writers take turns on.
type serverLink struct {
	pool  *sql.DB
	gates Gates
	name  string   // the writers' lock
	wait  turnWait // how long a writer waits for it
	style doltStyle
	inTx  bool // the Dolt commit inside the write's transaction (doltWriter.inTx)
}

// newServerLink connects to the server d (lazily: the first query reports
// an unreachable server) of the workspace whose .beads is beadsDir ("" for
// a --dsn connection, which has no gates).
func newServerLink(d *engine.DoltServer, beadsDir string, busy time.Duration) *serverLink {
	l := &serverLink{pool: openPool(config(d)), name: "bd-claim/" + d.Database, wait: waitFor(busy), style: bdStyle}
	if beadsDir != "" {
		var roots []string
		if !d.Remote() {
			roots = append(roots, filepath.Join(beadsDir, "dolt")) // a local server's data, as bd gates it
		}
		l.gates = GatesFor(beadsDir, roots...)
	}
	return l
}

// newProxiedLink connects to the dolt sql-server of a proxied-server
// workspace (bd v1.3's `bd init --proxied-server`) through its proxy, as
// bd's clients do: user root without a password, no TLS, on the data port
// of the proxy of the workspace's root, verified for every new connection
// (ProxyDialer: a refusal is *NoProxy; a running proxy that does not
// answer is asked again within the wait), never the server's own port
// behind it. The proxy relays the MySQL protocol to one server
// session per connection, so this is a server link: bd-claim's writers
// take turns on the server's named lock. It writes as bd's proxied mode
// does: the Dolt commit inside the write's transaction, as bd's unit of
// work makes it, and bd's proxied commits (proxiedStyle). The gates are
// the workspace's and the root's (doltserver.ResolvePhysicalRoots).
func newProxiedLink(p *engine.ProxiedDolt, beadsDir string, busy time.Duration) *serverLink {
	wait := waitFor(busy)
	c := config(&engine.DoltServer{User: "root", Database: p.Database})
	c.DialFunc = ProxyDialer(p.Root, wait.stall)
	c.Timeout = 0 // the dialer bounds each step, and its retries by the wait
	return &serverLink{pool: openPool(c), gates: GatesFor(beadsDir, p.Root), name: "bd-claim/" + p.Database,
		wait: wait, style: proxiedStyle, inTx: true}
}

func (l *serverLink) commits() doltStyle { return l.style }

func (l *serverLink) prepare(ctx context.Context, check func(context.Context, *sql.Conn) error) error {
	conn, end, err := l.open(ctx)
	if err != nil {
		return err
	}
	defer end()
	return check(ctx, conn)
}

func (l *serverLink) open(ctx context.Context) (*sql.Conn, func(), error) {
	release, err := l.gates.Hold()
	if err != nil {
		return nil, nil, err
	}
	conn, err := l.pool.Conn(ctx)
	if err != nil {
		release()
		return nil, nil, err
	}
	return conn, func() { conn.Close(); release() }, nil
}

// writer takes a connection of the pool and, on it, the writers' lock:
// bd-claim's writers take turns, on every machine that shares the server,
// instead of racing Dolt's optimistic commit (where all but one of a round
// lose and start again). Exclusivity comes from the compare-and-swap and
// the commit; the lock keeps bd-claim's writers from making each other, and
// bd's own writers beside them, lose that race. A writer never goes on
// without the lock: writers that did raced each other and bd, and under
// load turned into a storm of lost commits that starved bd's claims
// (measured through a proxied server: 16 bd-claim and 8 bd processes, 29
// writers without the lock, 6 of 8 bd processes gave up).
//
// It waits for the lock in rounds of lockRound (GET_LOCK's wait is whole
// seconds), each shorter than the driver's read timeout, which would
// otherwise drop a connection that waits longer (config). After each
// round it looks whether anything moved: another holder of the lock (a
// writer ahead took its turn) or another working set (a commit landed,
// bd's included). It gives up, busy (EWorkspaceBusy), once nothing moved
// for the wait's stall, or once the wait's limit has passed since the
// write began (turnWait). ctx ending stops the wait (nothing is written
// yet); the write after it runs to its end. A connection whose lock could
// not be released is discarded: closing it frees the lock.
func (l *serverLink) writer(ctx context.Context, wrap func(db.DBTX) db.DBTX) (*doltWriter, error) {
	began := time.Now()
	conn, end, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	w := &doltWriter{Conn: conn, h: wrap(conn), inTx: l.inTx}
	q := doltdb.New()
	turn, err := q.WritersLock(ctx, w.h, doltdb.WritersLockParams{Name: l.name})
	moved := time.Now()
	for err == nil && turn.Taken != 1 {
		w.queued = true
		left := time.Until(l.wait.until(began, moved))
		if left <= 0 {
			err = l.wait.busy(began)
			break
		}
		seen := turn
		turn, err = q.WritersLock(ctx, w.h, doltdb.WritersLockParams{Name: l.name, TimeoutSeconds: lockRound})
		if err == nil && (turn.Holder != seen.Holder || turn.Hash != seen.Hash) {
			moved = time.Now()
		}
	}
	if err != nil {
		end()
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	w.done = func() {
		if err := q.WritersUnlock(ctx, w.h, l.name); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		end()
	}
	return w, nil
}

// watch reads the working set's hash (WorkingSetHash: one round trip, a
// third to a fifth of a look; BENCHMARKS.md) on a connection of its own,
// under autocommit, so in a transaction of its own that sees the latest
// commit (inside a transaction it would keep the snapshot's).
func (l *serverLink) watch(ctx context.Context, e *Engine) (func() string, func(), error) {
	conn, err := l.pool.Conn(ctx) // on an error, the functions are not to be called
	return func() string {
		h, _ := e.dq.WorkingSetHash(ctx, conn)
		return h
	}, func() { conn.Close() }, err
}

func (l *serverLink) close() error { return l.pool.Close() }

// embeddedLink is an embedded Dolt database (bd v1.3's default mode): the
// engine runs in the process that opens it and holds the database's files
// locked while it is open, so it is opened for one operation and closed
// right after, as bd does, and never held between operations (a waiting
// claim, the MCP server): every bd process would wait on it. A write and
// its Dolt commit are one transaction of one session (doltWriter.inTx),
// where bd uses two sessions: a process killed between them cannot leave
// a claim without its Dolt commit.
// While another process has the engine open, an open waits up to the busy
// timeout. bd-claim's processes take turns on it in a writers' queue
// (writers.Queue: the next is woken the moment the last leaves), so that
// only one of them at a time polls the engine's lock beside bd's.
type embeddedLink struct {
	dir, database string
	gates         Gates
	wait          turnWait       // with no signal of moves: until its limit or stall from the start
	queue         *writers.Queue // opened by the first operation (a Store that is never used makes no lock file)
	queueOn       sync.Once
	check         func(context.Context, *sql.Conn) error
	checked       atomic.Bool
}

func newEmbeddedLink(e *engine.EmbeddedDolt, beadsDir string, busy time.Duration) *embeddedLink {
	return &embeddedLink{dir: e.Dir, database: e.Database, gates: GatesFor(beadsDir, e.Dir), wait: waitFor(busy)}
}

func (l *embeddedLink) commits() doltStyle { return embeddedStyle }

func (l *embeddedLink) prepare(_ context.Context, check func(context.Context, *sql.Conn) error) error {
	l.check = check
	return nil
}

// open takes its turn in the queue and opens the engine, both within the
// busy timeout, and runs the open check in the first session.
func (l *embeddedLink) open(ctx context.Context) (*sql.Conn, func(), error) {
	began := time.Now()
	deadline := l.wait.until(began, began)
	l.queueOn.Do(func() { l.queue = writers.Open(writers.Dir(), l.dir) })
	leave, _ := l.queue.Enter(time.Until(deadline)) // a missed turn goes on without it
	conn, end, err := OpenEmbeddedConn(ctx, l.dir, l.database, time.Until(deadline), l.gates)
	if err == nil && !l.checked.Load() {
		if err = l.check(ctx, conn); err != nil {
			end()
		}
		l.checked.Store(err == nil)
	}
	if err != nil {
		leave()
		return nil, nil, err
	}
	return conn, func() { end(); leave() }, nil
}

// writer opens the engine: its lock on the database's files makes this the
// only writer, bd's included, until done closes it. The wait for it is
// bounded by the busy timeout, not by ctx.
func (l *embeddedLink) writer(ctx context.Context, wrap func(db.DBTX) db.DBTX) (*doltWriter, error) {
	conn, end, err := l.open(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	return &doltWriter{Conn: conn, h: wrap(conn), done: end, inTx: true}, nil
}

// watch looks at the sizes of the database's storage files without opening
// the engine: the journal grows with every write, and a read changes no
// size (only times).
func (l *embeddedLink) watch(context.Context, *Engine) (func() string, func(), error) {
	noms := filepath.Join(l.dir, l.database, ".dolt", "noms")
	return func() string {
		entries, _ := os.ReadDir(noms)
		var b strings.Builder
		for _, f := range entries {
			if info, err := f.Info(); err == nil && f.Name() != "LOCK" {
				b.WriteString(f.Name() + "=" + strconv.FormatInt(info.Size(), 10) + ";")
			}
		}
		return b.String()
	}, func() {}, nil
}

func (l *embeddedLink) close() error {
	if l.queue != nil {
		l.queue.Close()
	}
	return nil
}
