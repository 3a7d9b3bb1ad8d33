package claim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// A waiting claim gives up after its wait with a reason, keeping the
// reason of its last look.
func TestWaitTimesOut(t *testing.T) {
	s, _, _ := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	start := time.Now()
	res, err := s.Claim(ctx, claim.Request{Agent: "w", Filters: claim.Filters{IncludeLabels: []string{"nope"}}, Wait: 150 * time.Millisecond})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil)
	assert.Equal(t, res.Reason, "nothing became claimable within 150ms")
	assert.Assert(t, time.Since(start) >= 150*time.Millisecond)

	conformance.MustClaim(t, s, claim.Request{Agent: "w"})
	res, err = s.Claim(ctx, claim.Request{Agent: "w", MaxHeld: 1, Wait: 50 * time.Millisecond})
	assert.NilError(t, err)
	assert.Equal(t, res.Reason, "nothing became claimable within 50ms (agent w already holds 1 in_progress issue (max held 1))")
}

// A cancelled wait (a signal) is INTERRUPTED and writes nothing.
func TestWaitInterrupted(t *testing.T) {
	s, conn, _ := lifecycle(t, "0.49.6", nil)
	ctx, cancel := context.WithCancel(context.Background())
	events := claimtest.Count(t, conn, "SELECT count(*) FROM events")
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := s.Claim(ctx, claim.Request{Agent: "w", Filters: claim.Filters{IncludeLabels: []string{"nope"}}, Wait: time.Minute})
	assert.Equal(t, claim.ErrorCode(err), claim.EInterrupted)
	assert.Assert(t, errors.Is(err, context.Canceled))
	assert.Assert(t, is.Contains(claim.ErrorMessage(err), "nothing was written"))
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events"), events)
}

// Readiness that changes with the clock alone (an expired lease here) is
// noticed by the periodic look, though nothing was written.
func TestWaitNoticesTheClock(t *testing.T) {
	s, _, c := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	f := claim.Filters{IncludeLabels: []string{"frontend"}}
	claims := map[string]int64{}
	for {
		res, err := s.Claim(ctx, claim.Request{Agent: "holder", Filters: f, Lease: time.Minute})
		assert.NilError(t, err)
		if res.Issue == nil {
			break
		}
		claims[res.Issue.ID] = res.ClaimID
	}
	time.AfterFunc(100*time.Millisecond, func() { c.advance(2 * time.Minute) })
	res, err := s.Claim(ctx, claim.Request{Agent: "waiter", Filters: f, Wait: 10 * time.Second})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue != nil)
	assert.Equal(t, res.TookOver.Agent, "holder")
	assert.Equal(t, res.TookOver.ClaimID, claims[res.Issue.ID])
}

// An --id claim waits out its holder: it gets the issue once released, or
// the holder's refusal when the wait ends first. An unknown id is not
// waited for.
func TestWaitByID(t *testing.T) {
	s, _, _ := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	held := conformance.MustClaim(t, s, claim.Request{Agent: "holder"})
	id := held.Issue.ID
	start := time.Now()
	_, err := s.Claim(ctx, claim.Request{Agent: "waiter", ID: id, Wait: 100 * time.Millisecond})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready)
	assert.Assert(t, time.Since(start) >= 100*time.Millisecond)

	other := openStore(t, s.Workspace.Root, claim.Options{})
	time.AfterFunc(100*time.Millisecond, func() {
		_, err := other.Release(ctx, claim.ReleaseRequest{Agent: "holder", ID: id})
		assert.Check(t, err)
	})
	res, err := s.Claim(ctx, claim.Request{Agent: "waiter", ID: id, Wait: 10 * time.Second})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.Assignee, "waiter")

	start = time.Now()
	_, err = s.Claim(ctx, claim.Request{Agent: "waiter", ID: "fx-nope", Wait: 10 * time.Second})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound)
	assert.Assert(t, time.Since(start) < time.Second)
}

// A waiting claim that asks for bd's JSON gets it from the look that
// finds the issue (a dry run: the issue as it is) or from the claim that
// follows it (the issue as claimed); a wait that ends with nothing has
// none.
func TestWaitBdJSON(t *testing.T) {
	s, _, _ := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	now, err := s.Claim(ctx, claim.Request{Agent: "w", DryRun: true, BdJSON: true})
	assert.NilError(t, err)
	dry, err := s.Claim(ctx, claim.Request{Agent: "w", DryRun: true, BdJSON: true, Wait: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, string(dry.BdJSON), string(now.BdJSON))
	assert.Assert(t, is.Contains(string(dry.BdJSON), `"status":"open"`))

	res, err := s.Claim(ctx, claim.Request{Agent: "w", BdJSON: true, Wait: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, dry.Issue.ID)
	assert.Assert(t, is.Contains(string(res.BdJSON), `"status":"in_progress","priority":`), "%s", res.BdJSON)
	assert.Assert(t, is.Contains(string(res.BdJSON), `"assignee":"w"`), "%s", res.BdJSON)

	res, err = s.Claim(ctx, claim.Request{Agent: "w", BdJSON: true, Filters: claim.Filters{IncludeLabels: []string{"nope"}}, Wait: 50 * time.Millisecond})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil && res.BdJSON == nil, "%+v", res)
}
