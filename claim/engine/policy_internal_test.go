package engine

import (
	"strconv"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// The backoff schedule of seed 004 with the defaults: 1m after the first
// failure, then 2m, 4m, 8m..., capped at 1h; abandoned at 5 failures. The
// policy is SQL that the database evaluates (claim-next, stats, release
// and refusals all read it), so it is checked there: in a SQLite
// workspace, with SQLite's spelling of the history (claim/sqlite).
func TestPolicyBackoff(t *testing.T) {
	conn := claimtest.Open(t, claimtest.DBPath(claimtest.Fixture(t, "0.49.6")))
	const last = "2026-01-01 00:00:00"
	lastAt, _ := time.Parse("2006-01-02 15:04:05", last)
	eval := func(p Policy, failures int) (backoff time.Duration, exhausted bool) {
		t.Helper()
		n := strconv.Itoa(failures)
		var retry float64
		retrySQL, rargs := p.retryAt(NewHistory("status_changed", "id", "0", "unixepoch(%s)", "min"), n, "'"+last+"'")
		exhaustedSQL, eargs := p.exhausted(n)
		query, args := sq.Select().Column(sq.Expr(retrySQL, rargs...)).Column(sq.Expr(exhaustedSQL, eargs...)).MustSql()
		assert.NilError(t, conn.QueryRow(query, args...).Scan(&retry, &exhausted))
		return fromUnixSeconds(retry).Sub(lastAt), exhausted
	}
	p := DefaultPolicy
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour} {
		got, exhausted := eval(p, i+1)
		assert.Equal(t, got, want, "after %d failures", i+1)
		assert.Equal(t, exhausted, i+1 >= 5, "abandoned after %d failures", i+1)
	}
	p.MaxFailures, p.BackoffInitial = 0, 0
	got, exhausted := eval(p, 1000)
	assert.Equal(t, got, time.Duration(0))
	assert.Assert(t, !exhausted)
	p = Policy{BackoffInitial: time.Minute, BackoffMultiplier: 1.5, BackoffMax: time.Hour}
	got, _ = eval(p, 3)
	assert.Equal(t, got, 135*time.Second)
}
