package dolt

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/workspace"
	"github.com/bdclaim/bd-claim/db"
)

// In proxied-server mode the Dolt commit is made inside the claim's
// transaction (DOLT_COMMIT commits both), as bd's unit of work makes it. A
// connection lost once the server has run that DOLT_COMMIT (its answer
// never arrives) is looked up as a lost COMMIT is: bd-claim finds its
// row_lock on a new connection and reports the claim, which is in HEAD.
// A DOLT_COMMIT that conflicts fails the transaction, which is replayed
// whole (never the commit alone: the server rolled the write back); one
// that keeps conflicting leaves nothing written.
func TestProxiedCommitLost(t *testing.T) {
	w := claimtest.ProxiedWorkspace(t, "lc")
	var iss, other struct{ ID string }
	w.JSON(&iss, "create", "one", "-p", "1")
	w.JSON(&other, "create", "two", "-p", "1")
	ctx := context.Background()
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	s, err := open(ctx, ws, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	conn := w.DB(t)
	left := &atomic.Int64{}
	left.Store(1000)
	engineOf(s).retry = engine.Retry{Attempts: 3, Backoff: time.Millisecond} // a quick give-up
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return conflicting{h, left} }
	before := claimtest.DoltRows(t, conn)
	_, err = s.Claim(ctx, claim.Request{Agent: "b", ID: other.ID})
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.DeepEqual(t, claimtest.DoltRows(t, conn), before)
	commits := func() int { return claimtest.Count(t, conn, "SELECT count(*) FROM dolt_log") }
	n := commits()
	left.Store(2)
	claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "b", ID: other.ID}))
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues AS OF 'HEAD' WHERE id = ? AND assignee = 'b'", other.ID), 1)
	assert.Equal(t, commits(), n+1, "one Dolt commit, on the third try of the whole transaction")
	engineOf(s).faults = nil

	// A relay that cuts the connection on the DOLT_COMMIT, in front of the
	// workspace's proxy (as a network failure would).
	p := claimtest.NewProxy(t, "127.0.0.1:"+strconv.Itoa(w.Port(t)), "DOLT_COMMIT('-Am'", true)
	link := engineOf(s).link.(*serverLink)
	link.pool.Close()
	link.pool = openPool(config(&engine.DoltServer{Host: "127.0.0.1", Port: p.Port, User: "root", Database: ws.Proxied.Database}))

	res, err := s.Claim(ctx, claim.Request{Agent: "a", ID: iss.ID})
	assert.NilError(t, err)
	assert.Assert(t, p.Cut.Load())
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues AS OF 'HEAD' WHERE id = ? AND assignee = 'a' AND row_lock = ?", iss.ID, res.ClaimID), 1)
	assert.DeepEqual(t, claimtest.Strings(t, conn, "SELECT CONCAT(message, ' by ', committer, ' <', email, '>') FROM dolt_log LIMIT 1"),
		[]string{"bd: update " + iss.ID + " by root <root@localhost>"})
}
