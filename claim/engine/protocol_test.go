package engine

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// A lease ends on a whole second, rounded up; a comment that is not a
// lease (or a damaged one) has none.
func TestLeaseComment(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 7, 0, 0, 500_000_000, time.UTC)
	l := NewLease(now, 90*time.Second)
	assert.Equal(t, l.Until, time.Date(2026, 11, 21, 7, 1, 31, 0, time.UTC))
	assert.Equal(t, l.Comment(), "bd-claim lease until 2026-11-21T07:01:31Z (1m30s)")
	assert.DeepEqual(t, ParseLease(l.Comment()), l)
	assert.Assert(t, NewLease(now, 0) == nil)
	for _, c := range []string{"", "bd-claim lease until", "bd-claim lease until 2026-13-45T07:01:31Z (1m)", "a comment", "bd-claim failed: x"} {
		assert.Assert(t, ParseLease(c) == nil, c)
	}
}

// An asked lease's comment on Dolt names its claim, and still reads as
// the lease.
func TestLeaseClaimOf(t *testing.T) {
	t.Parallel()
	l := NewLease(time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC), time.Minute)
	assert.Equal(t, l.ClaimOf(-42), "bd-claim lease until 2026-11-21T07:01:00Z (1m0s) claim -42")
	assert.DeepEqual(t, ParseLease(l.ClaimOf(-42)), l)
}
