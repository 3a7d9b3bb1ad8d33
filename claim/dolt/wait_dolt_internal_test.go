package dolt

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// A waiting claim's change signal on Dolt, the working set's hash: it
// stays the same while nothing is written (another connection's open
// transaction and a Dolt commit of nothing included), and is new after
// another connection's SQL COMMIT, a bd-claim claim, a lease-only change
// (dolt_ignored, still in the working set) and the real bd's write.
func TestDoltChangesSignal(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "sig")
	db := w.DB(t)
	ctx := context.Background()
	insertLabelled(t, db, w.Prefix+"-a", "a")
	s := openDoltAt(t, w, 0, claim.Options{})
	changes, stop, err := engineOf(s).Watch(ctx)
	assert.NilError(t, err)
	defer stop()
	seen := changes()
	assert.Equal(t, len(seen), 32, "a Dolt hash: %q", seen)
	same := func(why string) {
		t.Helper()
		assert.Equal(t, changes(), seen, why)
	}
	changed := func(why string) {
		t.Helper()
		now := changes()
		assert.Assert(t, now != seen && now != "", "%s: still %q", why, now)
		seen = now
	}

	time.Sleep(300 * time.Millisecond)
	same("idle")
	tx, err := db.BeginTx(ctx, nil)
	assert.NilError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE issues SET title = 'retitled' WHERE id = ?", w.Prefix+"-a")
	assert.NilError(t, err)
	same("another connection's transaction, not committed")
	assert.NilError(t, tx.Commit())
	changed("its SQL COMMIT")
	_, err = db.ExecContext(ctx, "CALL DOLT_COMMIT('-Am', 'retitled')")
	assert.NilError(t, err)
	same("a Dolt commit of what the working set holds already")

	res := claimtest.Must[claim.Result](t)(openDoltAt(t, w, 0, claim.Options{}).Claim(ctx, claim.Request{Agent: "other"}))
	assert.Equal(t, res.Issue.ID, w.Prefix+"-a")
	changed("another Store's claim")
	_, err = db.ExecContext(ctx, "UPDATE leases SET heartbeat_at = heartbeat_at + INTERVAL 1 SECOND")
	assert.NilError(t, err)
	changed("a lease-only change")
	w.OK("create", "by bd")
	changed("bd create")
	same("idle again")
}
