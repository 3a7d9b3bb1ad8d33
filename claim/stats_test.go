package claim_test

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// stats reports what the lifecycle did: held issues per agent with their
// claims' age and lease, expired leases, backoff, abandoned, and the last
// hour's events; ready agrees with --explain.
func TestStats(t *testing.T) {
	t.Parallel()
	root := fixture(t, "0.49.6")
	// Two days after bd made the fixture: none of its events is in the last hour.
	c := newClock(claimtest.ReadyTime(t, "0.49.6").Add(48 * time.Hour).Truncate(time.Second))
	p := &claim.Policy{BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour, MaxFailures: 2, AbandonedLabel: "claim:abandoned"}
	s := openStore(t, root, claim.Options{Now: c.now, Policy: p})
	ctx := context.Background()

	before, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, before.LastHour, claim.EventCounts{})
	assert.Equal(t, len(before.Backoff)+len(before.Abandoned)+len(before.ExpiredLeases), 0)

	t0 := c.now()
	// xcy fails twice: abandoned (max-failures 2).
	dead := conformance.MustClaim(t, s, claim.Request{Agent: "xcy"})
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "xcy", ID: dead.Issue.ID, Failed: true})
	assert.NilError(t, err)
	c.advance(time.Minute) // its backoff
	conformance.MustClaim(t, s, claim.Request{Agent: "xcy", ID: dead.Issue.ID})
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "xcy", ID: dead.Issue.ID, Failed: true})
	assert.NilError(t, err)
	// At t0+1m: xan holds one issue for 30s, xbo one for an hour, and
	// fails another (in backoff until t0+2m).
	a := conformance.MustClaim(t, s, claim.Request{Agent: "xan", Lease: 30 * time.Second})
	b := conformance.MustClaim(t, s, claim.Request{Agent: "xbo", Lease: time.Hour})
	fail := conformance.MustClaim(t, s, claim.Request{Agent: "xbo"})
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "xbo", ID: fail.Issue.ID, Failed: true})
	assert.NilError(t, err)
	c.advance(40 * time.Second)

	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.At, c.now())
	assert.DeepEqual(t, st.Policy, claim.PolicyJSON{BackoffInitial: "1m0s", BackoffMultiplier: 2, BackoffMax: "1h0m0s", MaxFailures: 2, AbandonedLabel: "claim:abandoned"})
	byAgent := map[string][]claim.HeldIssue{}
	for _, ac := range st.InProgress {
		byAgent[ac.Agent] = ac.Issues
	}
	assert.Equal(t, len(byAgent["xan"]), 1)
	xan := byAgent["xan"][0]
	assert.Equal(t, xan.ID, a.Issue.ID)
	assert.Equal(t, xan.ClaimID, a.ClaimID)
	assert.Equal(t, xan.AgeSeconds, int64(40))
	assert.Equal(t, *xan.ClaimedAt, t0.Add(time.Minute))
	assert.Assert(t, xan.Expired)
	assert.Equal(t, *xan.LeaseUntil, a.Lease.Until)
	assert.Equal(t, xan.LeaseKind, claim.LeaseAsked)
	assert.DeepEqual(t, byAgent["xbo"], []claim.HeldIssue{{ID: b.Issue.ID, ClaimID: b.ClaimID, ClaimedAt: xan.ClaimedAt, AgeSeconds: 40, LeaseUntil: &b.Lease.Until, LeaseKind: claim.LeaseAsked}})
	bob := byAgent["bob"] // the fixture's own claim, made by bd: no lease
	assert.Equal(t, len(bob), 1)
	assert.Assert(t, bob[0].ClaimID > 0 && bob[0].LeaseUntil == nil && bob[0].LeaseKind == "" && bob[0].AgeSeconds > 48*3600-3600)
	assert.DeepEqual(t, st.ExpiredLeases, []claim.Expired{{ID: a.Issue.ID, Holder: "xan", ClaimID: a.ClaimID, LeaseUntil: &a.Lease.Until, ClaimedAt: xan.ClaimedAt}})
	assert.DeepEqual(t, st.Backoff, []claim.Backoff{{ID: fail.Issue.ID, Failures: 1, RetryAt: t0.Add(2 * time.Minute)}})
	assert.DeepEqual(t, st.Abandoned, []claim.Abandoned{{ID: dead.Issue.ID, Failures: 2, Labelled: true}})
	assert.Equal(t, st.LastHour, claim.EventCounts{Claims: 5, Failures: 3})

	// Releases and reclaims count too.
	_, err = s.Reap(ctx, claim.ReapRequest{Actor: "reaper"})
	assert.NilError(t, err)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "xbo", ID: b.Issue.ID})
	assert.NilError(t, err)
	st, err = s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.LastHour, claim.EventCounts{Claims: 5, Releases: 1, Failures: 3, Reclaims: 1})
	assert.Equal(t, len(st.ExpiredLeases), 0)

	e, err := s.Explain(ctx, claim.Request{Agent: "anyone", Filters: claim.Filters{OnlyUnassigned: true}})
	assert.NilError(t, err)
	assert.Equal(t, st.Ready, e.Claimable)
	sum := 0
	for _, k := range []string{"P0", "P1", "P2", "P3", "P4"} {
		sum += st.ReadyByPriority[k]
	}
	assert.Equal(t, sum, st.Ready)
	assert.Equal(t, len(st.ReadyByPriority), 5)
}

// stats is a read: it opens a read transaction, which a writer holding the
// write lock elsewhere (another process's claim, bd's own write) does not
// hold up, rather than taking the write lock itself.
func TestStatsBesideWriter(t *testing.T) {
	t.Parallel()
	root := fixture(t, "0.49.6")
	s := openStore(t, root, claim.Options{BusyTimeout: 50 * time.Millisecond, Retry: claim.Retry{Attempts: 1}})
	ctx := context.Background()
	writer, err := claimtest.Open(t, claimtest.DBPath(root)).Conn(ctx)
	assert.NilError(t, err)
	defer writer.Close()
	_, err = writer.ExecContext(ctx, "BEGIN IMMEDIATE")
	assert.NilError(t, err)
	defer writer.ExecContext(ctx, "ROLLBACK")
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Assert(t, st.Ready > 0)
}
