package claim_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// clock is a test clock: the Store's Now field reads it, tests move it
// (from any goroutine).
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.ns.Store(t.UnixNano()); return c }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// lifecycle opens a fixture copy with a test clock (starting now, on a
// whole second) and policy p (nil: the default).
func lifecycle(t *testing.T, version string, p *claim.Policy) (*claim.Store, *sql.DB, *clock) {
	t.Helper()
	root := fixture(t, version)
	c := newClock(time.Now().UTC().Truncate(time.Second))
	s := openStore(t, root, claim.Options{Now: c.now, Policy: p})
	return s, claimtest.Open(t, claimtest.DBPath(root)), c
}

// comments are the bd comments of an issue, oldest first, as "author: text".
func comments(t *testing.T, conn *sql.DB, id string) []string {
	t.Helper()
	return claimtest.Strings(t, conn, "SELECT author || ': ' || text FROM comments WHERE issue_id = ? ORDER BY id", id)
}

func state(t *testing.T, conn *sql.DB, id string) (status, assignee string) {
	t.Helper()
	assert.NilError(t, conn.QueryRow("SELECT status, COALESCE(assignee, '') FROM issues WHERE id = ?", id).Scan(&status, &assignee))
	return status, assignee
}

// A release writes bd's footprint of `bd update --status open --assignee ""`
// with the reason in the event's comment, for every fixture version; the
// claim it ends is the one the claim returned.
func TestReleaseFootprint(t *testing.T) {
	t.Parallel()
	for _, v := range claimtest.Versions {
		t.Run(v, func(t *testing.T) {
			s, conn, c := lifecycle(t, v, nil)
			ctx := context.Background()
			got := conformance.MustClaim(t, s, claim.Request{Agent: "rel"})
			id := got.Issue.ID
			assert.Assert(t, got.ClaimID > 0)
			assert.Assert(t, got.Lease == nil)
			c.advance(time.Minute)
			rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "rel", ID: id, ClaimID: got.ClaimID})
			assert.NilError(t, err)
			assert.Equal(t, rel.ClaimID, got.ClaimID)
			assert.Equal(t, rel.Issue.Status, "open")
			assert.Equal(t, rel.Issue.Assignee, "")
			assert.Assert(t, rel.RetryAt == nil && rel.Failures == 0 && !rel.Abandoned)
			st, who := state(t, conn, id)
			assert.Equal(t, st+"/"+who, "open/")
			evs := claimtest.Events(t, conn, id, got.ClaimID)
			assert.Equal(t, len(evs), 1)
			e := evs[0]
			assert.Equal(t, e.Type, "status_changed")
			assert.Equal(t, e.Actor, "rel")
			assert.Equal(t, e.NewValue.String, `{"assignee":"","status":"open"}`)
			assert.Equal(t, e.Comment.String, "bd-claim released: no reason given")
			assert.Equal(t, e.CreatedAt, c.now().Format("2006-01-02 15:04:05"), "created_at from the Store's clock")
			var old map[string]any
			assert.NilError(t, json.Unmarshal([]byte(e.OldValue.String), &old))
			assert.Equal(t, old["status"], "in_progress")
			assert.Equal(t, old["assignee"], "rel")
			var hash, marked string
			assert.NilError(t, conn.QueryRow("SELECT content_hash FROM issues WHERE id = ?", id).Scan(&hash))
			assert.Equal(t, hash, rel.Issue.ContentHash)
			assert.Assert(t, hash != got.Issue.ContentHash, "the hash covers status and assignee")
			assert.NilError(t, conn.QueryRow("SELECT CAST(marked_at AS TEXT) FROM dirty_issues WHERE issue_id = ?", id).Scan(&marked))
			assert.Equal(t, len(comments(t, conn, id)), 0, "no reason, no bd comment")

			// Claimed again and released with a reason: the reason is a bd comment too.
			again := conformance.MustClaim(t, s, claim.Request{Agent: "rel", ID: id})
			assert.Assert(t, again.ClaimID > rel.ClaimID, "a new claim, a new claim id")
			_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "rel", ID: id, Reason: "needs a human"})
			assert.NilError(t, err)
			assert.DeepEqual(t, comments(t, conn, id), []string{"rel: bd-claim: rel released the issue: needs a human"})
			assert.Equal(t, claimtest.Events(t, conn, id, again.ClaimID)[0].Comment.String, "bd-claim released: needs a human")
		})
	}
}

// Failed attempts back off as seed 004 says (attempt 1 none, then initial ×
// multiplier^(n-2), capped), measured on the Store's clock; the attempt that
// reaches max-failures abandons the issue with a label, as bd label add
// writes it; reset clears both.
func TestBackoffAndAbandon(t *testing.T) {
	t.Parallel()
	p := &claim.Policy{BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: 3 * time.Minute, MaxFailures: 4, AbandonedLabel: "claim:abandoned"}
	s, conn, c := lifecycle(t, "0.49.6", p)
	ctx := context.Background()
	id := expectedClaims(t, "0.49.6", claim.SortPriority)[0]
	waits := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}
	for n := 1; n <= 4; n++ {
		conformance.MustClaim(t, s, claim.Request{Agent: "w", ID: id})
		rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Reason: "tests fail", Failed: true})
		assert.NilError(t, err)
		assert.Equal(t, rel.Failures, n)
		if n == 4 {
			assert.Assert(t, rel.Abandoned && rel.RetryAt == nil)
			assert.Assert(t, is.Contains(rel.Issue.Labels, "claim:abandoned"), "the issue as written")
			break
		}
		assert.Assert(t, !rel.Abandoned)
		assert.Equal(t, *rel.RetryAt, c.now().Add(waits[n-1]))
		// claim-next skips it while it waits; --id says until when.
		next := conformance.MustClaim(t, s, claim.Request{Agent: "other", DryRun: true})
		assert.Assert(t, next.Issue.ID != id)
		c.advance(waits[n-1] - time.Second)
		_, err = s.Claim(ctx, claim.Request{Agent: "w", ID: id})
		assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable)
		assert.ErrorContains(t, err, "in backoff until "+rel.RetryAt.Format(time.RFC3339)+" after "+strconv.Itoa(n)+" failed attempt")
		c.advance(time.Second)
		next = conformance.MustClaim(t, s, claim.Request{Agent: "other", DryRun: true})
		assert.Equal(t, next.Issue.ID, id, "back at the head of the queue once its backoff ends")
	}
	// The fourth failure abandons it.
	var labels string
	assert.NilError(t, conn.QueryRow("SELECT group_concat(label) FROM labels WHERE issue_id = ? AND label = 'claim:abandoned'", id).Scan(&labels))
	assert.Equal(t, labels, "claim:abandoned")
	last := claimtest.Events(t, conn, id, 0)
	lab := last[len(last)-1]
	assert.Equal(t, lab.Type, "label_added")
	assert.Equal(t, lab.Comment.String, "Added label: claim:abandoned")
	assert.Assert(t, !lab.OldValue.Valid && !lab.NewValue.Valid)
	notes := comments(t, conn, id)
	assert.Equal(t, len(notes), 4)
	assert.Assert(t, is.Contains(notes[3], "attempt 4 by w failed: tests fail\nAbandoned after 4 failed attempts"))
	c.advance(24 * time.Hour)
	_, err := s.Claim(ctx, claim.Request{Agent: "w", ID: id})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable)
	assert.ErrorContains(t, err, "it is abandoned")
	next := conformance.MustClaim(t, s, claim.Request{Agent: "other", DryRun: true})
	assert.Assert(t, next.Issue.ID != id, "never handed out by claim-next")

	// Reset: history cleared, label gone, claimable at once.
	before := claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ?", id)
	r, err := s.Reset(ctx, claim.ResetRequest{Actor: "ops", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, r.Cleared, 4)
	assert.Assert(t, r.Label)
	assert.Assert(t, !slices.Contains(r.Issue.Labels, "claim:abandoned"), "the issue as written: %v", r.Issue.Labels)
	evs := claimtest.Events(t, conn, id, 0)[before:]
	assert.Equal(t, len(evs), 2)
	assert.Equal(t, evs[0].Type+"|"+evs[0].Comment.String, "commented|bd-claim reset: cleared 4 failed attempts")
	assert.Equal(t, evs[1].Type+"|"+evs[1].Comment.String, "label_removed|Removed label: claim:abandoned")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM labels WHERE issue_id = ? AND label = 'claim:abandoned'", id), 0)
	next = conformance.MustClaim(t, s, claim.Request{Agent: "other", DryRun: true})
	assert.Equal(t, next.Issue.ID, id)
	// A second reset has nothing to do and writes nothing.
	snap := claimtest.Count(t, conn, "SELECT count(*) FROM events")
	r, err = s.Reset(ctx, claim.ResetRequest{Actor: "ops", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, r.Cleared, 0)
	assert.Assert(t, !r.Label)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events"), snap)

	// A failure after the reset is attempt 1 again.
	conformance.MustClaim(t, s, claim.Request{Agent: "w", ID: id})
	rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Failed: true})
	assert.NilError(t, err)
	assert.Equal(t, rel.Failures, 1)
	evs = claimtest.Events(t, conn, id, 0)
	assert.Equal(t, evs[len(evs)-1].Type, "status_changed")
}

// The label alone abandons an issue too (a person may add it with bd), and
// with max-failures 0 failures never do.
func TestAbandonedLabelAndUnlimitedFailures(t *testing.T) {
	t.Parallel()
	p := &claim.Policy{BackoffInitial: 0, BackoffMultiplier: 2, BackoffMax: time.Hour, MaxFailures: 0, AbandonedLabel: "parked"}
	s, conn, _ := lifecycle(t, "0.49.6", p)
	ctx := context.Background()
	ids := expectedClaims(t, "0.49.6", claim.SortPriority)
	for range 10 {
		conformance.MustClaim(t, s, claim.Request{Agent: "w", ID: ids[0]})
		rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: ids[0], Failed: true})
		assert.NilError(t, err)
		assert.Assert(t, !rel.Abandoned)
	}
	next := conformance.MustClaim(t, s, claim.Request{Agent: "w", DryRun: true})
	assert.Equal(t, next.Issue.ID, ids[0], "no backoff, no limit")
	_, err := conn.Exec("INSERT INTO labels (issue_id, label) VALUES (?, 'parked')", ids[0])
	assert.NilError(t, err)
	next = conformance.MustClaim(t, s, claim.Request{Agent: "w", DryRun: true})
	assert.Equal(t, next.Issue.ID, ids[1])
	_, err = s.Claim(ctx, claim.Request{Agent: "w", ID: ids[0]})
	assert.ErrorContains(t, err, "it is abandoned: it has the label parked (bd-claim reset clears it)")
	r, err := s.Reset(ctx, claim.ResetRequest{Actor: "ops", ID: ids[0]})
	assert.NilError(t, err)
	assert.Equal(t, r.Cleared, 10)
	assert.Assert(t, r.Label)
}

// A lease expires on the Store's clock; claim-next then takes the issue
// over in one transaction, recording whose claim ended; the old holder's
// claim id is stale from then on.
func TestLeaseTakeover(t *testing.T) {
	t.Parallel()
	s, conn, c := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	a := conformance.MustClaim(t, s, claim.Request{Agent: "a", Lease: 30 * time.Second})
	id := a.Issue.ID
	assert.Equal(t, a.Lease.Until, c.now().Add(30*time.Second))
	assert.Equal(t, a.Lease.Duration, 30*time.Second)
	assert.Equal(t, claimtest.Events(t, conn, id, a.ClaimID-1)[0].Comment.String,
		"bd-claim lease until "+a.Lease.Until.Format("2006-01-02T15:04:05Z")+" (30s)")

	_, err := s.Claim(ctx, claim.Request{Agent: "b", ID: id})
	var ce *claim.Error
	assert.Assert(t, errors.As(err, &ce))
	assert.Equal(t, ce.Code, claim.EAlready)
	assert.Equal(t, ce.Holder, "a")
	assert.Equal(t, ce.HolderClaimID, a.ClaimID)
	assert.ErrorContains(t, err, "leased until")
	next := conformance.MustClaim(t, s, claim.Request{Agent: "b", DryRun: true})
	assert.Assert(t, next.Issue.ID != id, "a live lease is not taken over")

	c.advance(30 * time.Second)
	dry := conformance.MustClaim(t, s, claim.Request{Agent: "b", DryRun: true})
	assert.Equal(t, dry.Issue.ID, id, "the expired claim is first in claim order again")
	assert.DeepEqual(t, *dry.TookOver, claim.Holder{Agent: "a", ClaimID: a.ClaimID, LeaseUntil: &a.Lease.Until})
	assert.Equal(t, dry.ClaimID, int64(0))

	b := conformance.MustClaim(t, s, claim.Request{Agent: "b", Lease: time.Minute})
	assert.Equal(t, b.Issue.ID, id)
	assert.Equal(t, b.TookOver.Agent, "a")
	assert.Equal(t, b.Issue.Assignee, "b")
	evs := claimtest.Events(t, conn, id, a.ClaimID)
	assert.Equal(t, len(evs), 2)
	assert.Equal(t, evs[0].Type, "status_changed")
	assert.Equal(t, evs[0].NewValue.String, `{"assignee":"","status":"open"}`)
	assert.Assert(t, strings.HasPrefix(evs[0].Comment.String, "bd-claim expired: lease of a (claim "))
	assert.Assert(t, strings.HasSuffix(evs[0].Comment.String, "; taken over by b"))
	assert.Equal(t, evs[1].ID, b.ClaimID)
	assert.Equal(t, evs[1].Type, "claimed")
	var old map[string]any
	assert.NilError(t, json.Unmarshal([]byte(evs[1].OldValue.String), &old))
	assert.Equal(t, old["status"], "open", "the takeover claims the issue as released")
	assert.Assert(t, is.Contains(comments(t, conn, id)[0], "taken over by b"))

	// a's claim is over: every fenced or unfenced operation of a is refused.
	_, err = s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "a", ID: id, ClaimID: a.ClaimID})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: id})
	assert.ErrorContains(t, err, "held by b")
	// The same agent name on a later claim is a different holder.
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "b", ID: id, ClaimID: a.ClaimID})
	assert.Assert(t, errors.As(err, &ce))
	assert.Equal(t, ce.Code, claim.EAlready)
	assert.Equal(t, ce.HolderClaimID, b.ClaimID)
	assert.ErrorContains(t, err, "claim "+strconv.FormatInt(a.ClaimID, 10)+" no longer holds issue "+id)
}

// An expired lease on an issue more urgent than every claimable open one
// is taken over first: claim-next's narrowing to the most urgent priority
// looks at held issues too.
func TestLeaseTakeoverMoreUrgent(t *testing.T) {
	t.Parallel()
	s, _, c := lifecycle(t, "0.49.6", nil)
	a := conformance.MustClaim(t, s, claim.Request{Agent: "a", Lease: 30 * time.Second})
	for { // the other issues of a's priority go to c, without a lease
		next := conformance.MustClaim(t, s, claim.Request{Agent: "c", DryRun: true})
		assert.Assert(t, next.Issue != nil)
		if next.Issue.Priority != a.Issue.Priority {
			break
		}
		conformance.MustClaim(t, s, claim.Request{Agent: "c", ID: next.Issue.ID})
	}
	c.advance(30 * time.Second)
	b := conformance.MustClaim(t, s, claim.Request{Agent: "b"})
	assert.Equal(t, b.Issue.ID, a.Issue.ID)
	assert.Equal(t, b.TookOver.Agent, "a")
}

// A heartbeat rewrites the lease in the claim event: no row per beat, no
// change to the issue. It keeps the claim's lease length unless told.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	s, conn, c := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	got := conformance.MustClaim(t, s, claim.Request{Agent: "h", Lease: 10 * time.Second})
	id := got.Issue.ID
	events := claimtest.Count(t, conn, "SELECT count(*) FROM events")
	var updated string
	assert.NilError(t, conn.QueryRow("SELECT CAST(updated_at AS TEXT) FROM issues WHERE id = ?", id).Scan(&updated))
	for range 5 {
		c.advance(7 * time.Second)
		hb, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "h", ID: id, ClaimID: got.ClaimID})
		assert.NilError(t, err)
		assert.Equal(t, hb.ClaimID, got.ClaimID)
		assert.Equal(t, hb.Lease.Until, c.now().Add(10*time.Second))
	}
	hb, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "h", ID: id, Lease: 90 * time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, hb.Lease.Until, c.now().Add(90*time.Minute))
	assert.Equal(t, hb.Issue.ID, id)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events"), events, "no row per beat")
	var after string
	assert.NilError(t, conn.QueryRow("SELECT CAST(updated_at AS TEXT) FROM issues WHERE id = ?", id).Scan(&after))
	assert.Equal(t, after, updated)
	assert.Equal(t, claimtest.Events(t, conn, id, got.ClaimID-1)[0].Comment.String,
		"bd-claim lease until "+hb.Lease.Until.Format("2006-01-02T15:04:05Z")+" (1h30m0s)")

	// An expired lease nobody took over can still be renewed.
	c.advance(2 * time.Hour)
	_, err = s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "h", ID: id})
	assert.NilError(t, err)

	// Without a lease, a heartbeat needs a length; a claim bd made has none to renew.
	plain := conformance.MustClaim(t, s, claim.Request{Agent: "h"})
	_, err = s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "h", ID: plain.Issue.ID})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
	assert.ErrorContains(t, err, "has no lease: give its length with --lease")
	hb, err = s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "h", ID: plain.Issue.ID, Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, hb.Lease.Duration, time.Minute)
	bdMade := cases(t, "0.49.6")["S_INPROG"]
	status, holder := state(t, conn, bdMade.ID)
	assert.Equal(t, status, "in_progress")
	_, err = s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: holder, ID: bdMade.ID, Lease: time.Minute})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable)
	assert.ErrorContains(t, err, "was assigned to "+holder+` by "fixture-builder", not claimed by `+holder+" itself")
}

// reap returns every expired claim to open in one transaction; a dry run
// lists them and writes nothing.
func TestReap(t *testing.T) {
	t.Parallel()
	s, conn, c := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	start := c.now()
	short := conformance.MustClaim(t, s, claim.Request{Agent: "short", Lease: 10 * time.Second})
	long := conformance.MustClaim(t, s, claim.Request{Agent: "long", Lease: time.Hour})
	none, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper"})
	assert.NilError(t, err)
	assert.Equal(t, len(none), 0)
	c.advance(time.Minute)
	events := claimtest.Count(t, conn, "SELECT count(*) FROM events")
	list, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true})
	assert.NilError(t, err)
	assert.DeepEqual(t, list, []claim.Expired{{ID: short.Issue.ID, Holder: "short", ClaimID: short.ClaimID, LeaseUntil: &short.Lease.Until, ClaimedAt: &start}})
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events"), events, "a dry run writes nothing")
	reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper"})
	assert.NilError(t, err)
	assert.DeepEqual(t, reaped, list)
	st, who := state(t, conn, short.Issue.ID)
	assert.Equal(t, st+"/"+who, "open/")
	st, who = state(t, conn, long.Issue.ID)
	assert.Equal(t, st+"/"+who, "in_progress/long")
	e := claimtest.Events(t, conn, short.Issue.ID, short.ClaimID)
	assert.Equal(t, len(e), 1)
	assert.Equal(t, e[0].Actor, "reaper")
	assert.Assert(t, strings.HasSuffix(e[0].Comment.String, "; reaped by reaper"), e[0].Comment.String)
	// Reaping is not a failed attempt: the issue is claimable at once.
	next := conformance.MustClaim(t, s, claim.Request{Agent: "again", DryRun: true})
	assert.Equal(t, next.Issue.ID, short.Issue.ID)
	_, err = s.Reap(ctx, claim.ReapRequest{Actor: ""})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
}

// Bad requests are refused before anything is read or written.
func TestLifecycleBadRequests(t *testing.T) {
	t.Parallel()
	s, _, _ := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	id := expectedClaims(t, "0.49.6", claim.SortPriority)[0]
	for _, req := range []claim.Request{
		{Agent: "x", ID: id, ClaimID: -1},
		{Agent: "x", ClaimID: 5},
		{Agent: "x", Lease: -time.Second},
		{Agent: "x", Lease: claim.MaxLease + time.Second},
		{Agent: "x", Lease: 10 * time.Millisecond},
		{Agent: "x", Lease: time.Minute, DryRun: true},
		{Agent: "x", MaxHeld: -1},
		{Agent: "x", Wait: -time.Second},
		{Agent: "x", Wait: claim.MaxWait + time.Second},
		{Agent: "x", Filters: claim.Filters{Sort: "random"}},
		{Agent: ""},
	} {
		_, err := s.Claim(ctx, req)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%+v: %v", req, err)
		_, err = s.Explain(ctx, req)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%+v: %v", req, err)
	}
	for _, req := range []claim.ReleaseRequest{
		{Agent: "", ID: id}, {Agent: "x", ID: " "}, {Agent: "x", ID: id, ClaimID: -2},
		{Agent: "x", ID: id, Reason: strings.Repeat("é", claim.MaxReasonLen+1)},
		{Agent: "x", ID: id, Reason: "bad \x00 byte"}, {Agent: "x", ID: id, Reason: "\xff"},
	} {
		_, err := s.Release(ctx, req)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%+v: %v", req, err)
	}
	for _, req := range []claim.HeartbeatRequest{
		{Agent: "", ID: id}, {Agent: "x", ID: ""}, {Agent: "x", ID: id, ClaimID: -1},
		{Agent: "x", ID: id, Lease: -time.Second}, {Agent: "x", ID: id, Lease: time.Millisecond},
	} {
		_, err := s.Heartbeat(ctx, req)
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%+v: %v", req, err)
	}
	_, err := s.Reset(ctx, claim.ResetRequest{Actor: "", ID: id})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
	_, err = s.Reset(ctx, claim.ResetRequest{Actor: "x", ID: ""})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "x", ID: id, Reason: "multi\nline\tok"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "newlines and tabs are fine in a reason")
}

// --explain counts, rule by rule, the open issues each excludes.
func TestExplain(t *testing.T) {
	t.Parallel()
	s, conn, _ := lifecycle(t, "0.49.6", nil)
	ctx := context.Background()
	open := claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE status = 'open'")
	blocked := claimtest.Count(t, conn, "SELECT count(*) FROM issues i WHERE status = 'open' AND EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)")
	e, err := s.Explain(ctx, claim.Request{Agent: "why", Filters: claim.Filters{IncludeLabels: []string{"nope"}}})
	assert.NilError(t, err)
	assert.Equal(t, e.Open, open)
	assert.Equal(t, e.Claimable, 0)
	assert.Equal(t, e.Excluded["label:nope"], open)
	assert.Equal(t, e.Excluded["blocked"], blocked)
	assert.Equal(t, e.Excluded["backoff"], 0)
	_, hasCapacity := e.Excluded["capacity"]
	assert.Assert(t, !hasCapacity, "no capacity rule without --max-held")

	all, err := s.Explain(ctx, claim.Request{Agent: "why"})
	assert.NilError(t, err)
	assert.Equal(t, all.Claimable, len(expectedClaims(t, "0.49.6", claim.SortPriority)), "what a drain claims")

	conformance.MustClaim(t, s, claim.Request{Agent: "why"})
	capped, err := s.Explain(ctx, claim.Request{Agent: "why", MaxHeld: 1})
	assert.NilError(t, err)
	assert.Equal(t, capped.Held, 1)
	assert.Equal(t, capped.Claimable, 0)
	assert.Equal(t, capped.Excluded["capacity"], all.Claimable-1)
	roomy, err := s.Explain(ctx, claim.Request{Agent: "why", MaxHeld: 5})
	assert.NilError(t, err)
	assert.Equal(t, roomy.Excluded["capacity"], 0)
	assert.Equal(t, roomy.Claimable, all.Claimable-1)
}
