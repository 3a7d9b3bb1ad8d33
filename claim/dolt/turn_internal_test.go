package dolt

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/db"
)

// turnFixture makes a Dolt workspace of issues <prefix>-a (id) and
// <prefix>-z, and a Store on it with options o.
func turnFixture(t *testing.T, prefix string, o claim.Options) (w *claimtest.DoltWorkspace, conn *sql.DB, s *claim.Store, id string) {
	t.Helper()
	w = claimtest.NeedDolt(t).Workspace(t, prefix)
	conn = w.DB(t)
	id = w.Prefix + "-a"
	insertLabelled(t, conn, id, "a")
	insertLabelled(t, conn, w.Prefix+"-z", "z")
	return w, conn, openDoltAt(t, w, 0, o), id
}

// holdWritersLock takes the workspace's writers' lock on a connection of
// its own, as another bd-claim writer in its turn holds it, and returns
// how to let it go.
func holdWritersLock(t *testing.T, w *claimtest.DoltWorkspace) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := w.DB(t).Conn(ctx)
	assert.NilError(t, err)
	var taken int
	assert.NilError(t, conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", "bd-claim/"+w.Database).Scan(&taken))
	assert.Equal(t, taken, 1)
	return func() {
		_, err := conn.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", "bd-claim/"+w.Database)
		assert.Check(t, err)
		conn.Close()
	}
}

// committing makes a commit (an UPDATE of issue id, autocommitted) every
// pause until stop is called, which waits for the last one.
func committing(t *testing.T, conn *sql.DB, id string, pause time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(pause):
			}
			_, err := conn.Exec("UPDATE issues SET notes = ? WHERE id = ?", strings.Repeat("n", i%50), id)
			assert.Check(t, err)
		}
	}()
	return func() { close(done); <-stopped }
}

// untouched says that nothing was written to issue id since before (its
// row as RowOf read it): the same row, no event, no lease.
func untouched(t *testing.T, conn *sql.DB, id string, before map[string]string) {
	t.Helper()
	assert.DeepEqual(t, claimtest.RowOf(t, conn, "issues", "id", id), before)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ?", id), 0)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM leases WHERE issue_id = ?", id), 0)
}

// A writer whose turn does not come waits on while commits land (bd's,
// or the writers' ahead), beyond its stall, and gives up busy (BUSY, exit
// 4) once nothing has moved for the stall, with nothing written. When the
// lock is let go, the claim goes through.
func TestDoltTurnWaitsWhileCommitsLand(t *testing.T) {
	t.Parallel()
	w, conn, s, id := turnFixture(t, "twc", claim.Options{})
	link := engineOf(s).link.(*serverLink)
	assert.Equal(t, link.wait, turnWait{stall: DefaultWait}, "no busy timeout: the default wait, no limit")
	link.wait.stall = 2 * time.Second // the test's patience
	release := holdWritersLock(t, w)
	before := claimtest.RowOf(t, conn, "issues", "id", id)

	stop := committing(t, conn, w.Prefix+"-z", 300*time.Millisecond)
	time.AfterFunc(5*time.Second, stop)
	began := time.Now()
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	waited := time.Since(began)
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "other bd-claim writers held the workspace's writers' lock, and nothing moved for 2s (no writer's turn ended, no commit landed); nothing was written: retry later")
	assert.Assert(t, waited >= 5*time.Second, "it waited while commits landed, past its stall: %v", waited)
	t.Logf("waited %v: commits for 5s, then a stall of 2s", waited)
	untouched(t, conn, id, before)

	release()
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
}

// A busy timeout (--timeout-ms) is a limit on the whole wait, counted from
// the start of the write: commits landing do not extend it.
func TestDoltTurnLimit(t *testing.T) {
	t.Parallel()
	w, conn, s, id := turnFixture(t, "twl", claim.Options{BusyTimeout: 2 * time.Second})
	release := holdWritersLock(t, w)
	defer release()
	before := claimtest.RowOf(t, conn, "issues", "id", id)
	stop := committing(t, conn, w.Prefix+"-z", 300*time.Millisecond)
	defer stop()
	began := time.Now()
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	waited := time.Since(began)
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "other bd-claim writers held the workspace's writers' lock, taking their turns, for all of --timeout-ms (2s); nothing was written: retry, or raise --timeout-ms")
	assert.Assert(t, waited >= 2*time.Second, "waited %v", waited)
	t.Logf("waited %v with a limit of 2s while commits landed", waited)
	untouched(t, conn, id, before)
}

// queueMoving answers the writers' lock's query as a queue whose holder
// changes at every round (a round a second, the lock never free) until
// moving is false, and stays the same after: a writer ahead taking its turn
// without a commit (a claim that found nothing).
type queueMoving struct {
	db.DBTX
	moving *atomic.Bool
	round  *atomic.Int64
}

func (q queueMoving) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if !strings.Contains(query, "GET_LOCK") {
		return q.DBTX.QueryRowContext(ctx, query, args...)
	}
	holder := q.round.Load()
	if q.moving.Load() {
		holder = q.round.Add(1)
	}
	if args[1].(int32) > 0 {
		time.Sleep(time.Second)
	}
	return q.DBTX.QueryRowContext(ctx, "SELECT 0, ?, 'the same working set'", holder)
}

// Another holder of the writers' lock at the end of a round is a move too:
// the writers ahead take their turns.
func TestDoltTurnWaitsWhileTheQueueMoves(t *testing.T) {
	t.Parallel()
	_, _, s, id := turnFixture(t, "twq", claim.Options{})
	engineOf(s).link.(*serverLink).wait.stall = 2 * time.Second
	moving := &atomic.Bool{}
	moving.Store(true)
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return queueMoving{h, moving, &atomic.Int64{}} }
	time.AfterFunc(5*time.Second, func() { moving.Store(false) })
	began := time.Now()
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	waited := time.Since(began)
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "nothing moved for 2s")
	assert.Assert(t, waited >= 5*time.Second, "it waited while the holder changed, past its stall: %v", waited)
}

// A wait longer than the driver's read timeout (10 s, bd's) keeps its
// connection: the rounds are shorter. (A single GET_LOCK that long was
// cut by the driver, "invalid connection", and reported as a server that
// cannot be reached.)
func TestDoltTurnOutlastsReadTimeout(t *testing.T) {
	t.Parallel()
	w, _, s, id := turnFixture(t, "two", claim.Options{BusyTimeout: 30 * time.Second})
	release := holdWritersLock(t, w)
	held := 12 * time.Second
	assert.Assert(t, held > config(&engine.DoltServer{}).ReadTimeout)
	time.AfterFunc(held, release)
	began := time.Now()
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
	assert.Assert(t, time.Since(began) >= held, "it waited for the lock: %v", time.Since(began))
}

// A signal (ctx cancelled) while a writer waits for its turn stops the
// wait at once: INTERRUPTED, nothing written. The lock is not left taken
// by the abandoned wait.
func TestDoltTurnInterrupted(t *testing.T) {
	t.Parallel()
	w, conn, s, id := turnFixture(t, "twi", claim.Options{})
	release := holdWritersLock(t, w)
	before := claimtest.RowOf(t, conn, "issues", "id", id)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	began := time.Now()
	_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: id})
	assert.Equal(t, claim.ErrorCode(err), claim.EInterrupted, "%v", err)
	assert.Assert(t, time.Since(began) < DefaultWait/2, "stopped by the signal, not by the wait: %v", time.Since(began))
	untouched(t, conn, id, before)
	release()
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
}

// A negative busy timeout (--timeout-ms 0) does not wait for the turn: a
// held writers' lock is BUSY at once, with nothing written.
func TestDoltTurnNoWait(t *testing.T) {
	t.Parallel()
	w, conn, s, id := turnFixture(t, "twn", claim.Options{BusyTimeout: -1})
	release := holdWritersLock(t, w)
	defer release()
	before := claimtest.RowOf(t, conn, "issues", "id", id)
	began := time.Now()
	_, err := s.Claim(context.Background(), claim.Request{Agent: "a", ID: id})
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "other bd-claim writers held the workspace's writers' lock, and --timeout-ms 0 waits for none; nothing was written: retry")
	assert.Assert(t, time.Since(began) < time.Second, "GET_LOCK's wait of 0 only: %v", time.Since(began))
	untouched(t, conn, id, before)
}
