package dolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// doltStore opens a Store on a Dolt workspace as the CLI would: discovery
// from the workspace directory with bd's environment.
func doltStore(t testing.TB, w *claimtest.DoltWorkspace, o claim.Options) *claim.Store {
	t.Helper()
	return conformance.OpenAt(t, w.Dir, w.Getenv, o)
}

// bdCreate creates an issue with the real bd and returns its id.
func bdCreate(t *testing.T, w *claimtest.DoltWorkspace, title string, flags ...string) string {
	t.Helper()
	var out struct{ ID string }
	w.JSON(&out, append([]string{"create", title}, flags...)...)
	return out.ID
}

func TestDoltClaimSmoke(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "sm")
	low := bdCreate(t, w, "low", "-p", "3")
	high := bdCreate(t, w, "high", "-p", "1")
	s := doltStore(t, w, claim.Options{})
	res, err := s.Claim(context.Background(), claim.Request{Agent: "agent-1"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, high)
	conn := w.DB(t)
	var status, assignee, holder, msg, author string
	assert.NilError(t, conn.QueryRow("SELECT status, assignee FROM issues WHERE id = ?", high).Scan(&status, &assignee))
	assert.Equal(t, status+"/"+assignee, "in_progress/agent-1")
	assert.NilError(t, conn.QueryRow("SELECT holder FROM leases WHERE issue_id = ?", high).Scan(&holder))
	assert.Equal(t, holder, "agent-1")
	assert.NilError(t, conn.QueryRow("SELECT message, committer FROM dolt_log LIMIT 1").Scan(&msg, &author))
	assert.Equal(t, msg, "bd: claim ready "+high)
	var shown []struct{ Status, Assignee string }
	w.JSON(&shown, "show", high)
	assert.Equal(t, shown[0].Status, "in_progress")
	_ = low
	_ = strings.Contains
}

// The failure policy, takeover, reap, reset and stats on a Dolt workspace,
// at a clock the test moves: a failed release is bd unclaim's move with
// bd-claim's reason, backoff and abandonment follow it, the abandoned label
// and the reclaims are bd's own footprints, and bd sees every step.
func TestDoltLifecycle(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "lc")
	conn := w.DB(t)
	ctx := context.Background()
	a := bdCreate(t, w, "flaky", "-p", "1")
	var offset time.Duration
	now := func() time.Time { return time.Now().Add(offset) }
	policy := claim.Policy{BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour, MaxFailures: 2, AbandonedLabel: "claim:abandoned"}
	s := doltStore(t, w, claim.Options{Now: now, Policy: &policy})
	lastCommit := func() (msg string) {
		assert.NilError(t, conn.QueryRow("SELECT message FROM dolt_log LIMIT 1").Scan(&msg))
		return msg
	}
	row := func(id string) (r struct {
		status, assignee string
		leases           int
	}) {
		assert.NilError(t, conn.QueryRow("SELECT status, COALESCE(assignee, '<null>'), (SELECT count(*) FROM leases WHERE issue_id = ?) FROM issues WHERE id = ?", id, id).
			Scan(&r.status, &r.assignee, &r.leases))
		return r
	}

	// A failed attempt: bd unclaim's footprint, the reason in the comment,
	// then backoff (what each engine promises of the failure policy is
	// TestConformance's; this test checks what bd v1.3.0 sees of it).
	c := conformance.MustClaim(t, s, claim.Request{Agent: "agent-1"})
	assert.Equal(t, c.Issue.ID, a)
	_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "agent-1", ID: a, Failed: true, Reason: "boom"})
	assert.NilError(t, err)
	assert.Equal(t, row(a), struct {
		status, assignee string
		leases           int
	}{"open", "", 0})
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'unclaimed' AND comment = 'bd-claim failed: boom'", a), 1)
	assert.Equal(t, lastCommit(), "bd: unclaim "+a)
	// The reason is a bd comment too, in the release's Dolt commit: bd
	// comments lists it.
	var comments []struct{ Author, Text string }
	w.JSON(&comments, "comments", a)
	assert.DeepEqual(t, comments, []struct{ Author, Text string }{{"agent-1", "bd-claim: attempt 1 by agent-1 failed: boom"}})
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status"), 0, "the comment is in the Dolt commit")

	// After the backoff, the second failure abandons it: bd's label add.
	offset = 2 * time.Minute
	conformance.MustClaim(t, s, claim.Request{Agent: "agent-2", ID: a})
	rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "agent-2", ID: a, Failed: true})
	assert.NilError(t, err)
	assert.Assert(t, rel.Abandoned, "%+v", rel)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM labels WHERE issue_id = ? AND label = 'claim:abandoned'", a), 1)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'label_added' AND comment = 'Added label: claim:abandoned'", a), 1)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status"), 0, "the label is in the Dolt commit")
	assert.Equal(t, lastCommit(), "bd: unclaim "+a)
	var shown []struct{ Labels []string }
	w.JSON(&shown, "show", a)
	assert.DeepEqual(t, shown[0].Labels, []string{"claim:abandoned"})
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.LastHour, claim.EventCounts{Claims: 2, Releases: 0, Failures: 2, Reclaims: 0}, "counted from bd's events")
	offset = 3 * time.Hour

	// A reset clears both; the label goes as bd's label remove.
	reset, err := s.Reset(ctx, claim.ResetRequest{Actor: "human", ID: a})
	assert.NilError(t, err)
	assert.Assert(t, reset.Cleared == 2 && reset.Label, "%+v", reset)
	assert.Equal(t, lastCommit(), "bd: label remove "+a)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM labels WHERE issue_id = ?", a), 0)

	// Takeover at the lease's expiry: bd reclaim's footprint, then the claim.
	offset += time.Second
	first := conformance.MustClaim(t, s, claim.Request{Agent: "agent-3", Lease: time.Minute})
	assert.Equal(t, first.Issue.ID, a)
	offset += 2 * time.Minute
	took := conformance.MustClaim(t, s, claim.Request{Agent: "agent-4"})
	assert.Equal(t, took.Issue.ID, a)
	assert.Equal(t, row(a), struct {
		status, assignee string
		leases           int
	}{"in_progress", "agent-4", 1})
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'lease_reclaimed' AND old_value = 'agent-3' AND new_value = '' AND comment LIKE 'bd-claim expired: lease of agent-3 (claim %) ended %; taken over by agent-4'", a), 1)
	assert.Equal(t, lastCommit(), "bd: claim ready "+a)

	// bd's own claim (bd's 5-minute lease) expires and is reaped, with bd-claim's.
	b := bdCreate(t, w, "bd's", "-p", "2")
	w.As("agent-5").OK("update", b, "--claim")
	// agent-4 claimed without --lease: bd's lease, as bd-claim's. Once both
	// lapse, neither is taken over nor reaped by a plain reap; reap
	// --older-than reaps them, as bd reclaim does.
	offset += 10 * time.Minute
	st, err = s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(st.ExpiredLeases), 0, "%+v", st.ExpiredLeases)
	assert.Equal(t, len(st.InProgress), 2)
	assert.Assert(t, st.InProgress[0].Agent == "agent-4" && st.InProgress[0].Issues[0].ClaimedAt != nil && st.InProgress[0].Issues[0].Expired)
	held := st.InProgress[0].Issues[0]
	assert.Equal(t, held.ClaimID, took.ClaimID, "every digit of the claim id")
	assert.Equal(t, held.LeaseKind, claim.LeaseBd)
	assert.Equal(t, st.InProgress[1].Issues[0].LeaseKind, claim.LeaseBd)
	assert.Assert(t, held.LeaseUntil != nil && held.LeaseUntil.Equal(took.Lease.Until), "%v, %v", held.LeaseUntil, took.Lease)
	none, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, len(none), 0, "%+v", none)
	grace := time.Minute
	listed, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true, OlderThan: &grace})
	assert.NilError(t, err)
	assert.Equal(t, len(listed), 2)
	assert.Equal(t, row(b).status, "in_progress", "a dry run writes nothing")
	reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", OlderThan: &grace})
	assert.NilError(t, err)
	assert.DeepEqual(t, reaped, listed)
	assert.Equal(t, row(a), struct {
		status, assignee string
		leases           int
	}{"open", "<null>", 0})
	assert.Equal(t, row(b), struct {
		status, assignee string
		leases           int
	}{"open", "<null>", 0})
	assert.Equal(t, lastCommit(), "bd: reclaim 2 expired lease(s)")
	var ready []struct{ ID string }
	w.JSON(&ready, "ready")
	assert.Equal(t, len(ready), 2, "bd ready lists both again")
	st, err = s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.LastHour.Reclaims, 3)
	assert.Equal(t, st.Ready, 2)
}

// stats lists the held wisps with the held issues, under their holders:
// bd-claim's wisp claims and bd's, with the time of the claim and no lease,
// as many as --max-held counts; reap leaves them alone.
func TestDoltStatsListsHeldWisps(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "sw")
	issue := bdCreate(t, w, "an issue", "-p", "1")
	wisp := bdCreate(t, w, "a wisp", "--no-history", "-p", "2")
	theirs := bdCreate(t, w, "bd's wisp", "--no-history", "-p", "3")
	s := doltStore(t, w, claim.Options{})
	ctx := context.Background()
	for _, id := range []string{issue, wisp} {
		conformance.MustClaim(t, s, claim.Request{Agent: "agent-a", ID: id})
	}
	w.As("agent-b").OK("update", theirs, "--claim")
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	var got []string
	for _, a := range st.InProgress {
		for _, h := range a.Issues {
			assert.Assert(t, h.ClaimedAt != nil && h.ClaimID > 0, "%s: %+v", h.ID, h)
			got = append(got, fmt.Sprintf("%s %s lease:%t", a.Agent, h.ID, h.LeaseUntil != nil))
		}
	}
	want := []string{"agent-a " + issue + " lease:true", "agent-a " + wisp + " lease:false", "agent-b " + theirs + " lease:false"}
	slices.Sort(want) // by agent, then id
	assert.DeepEqual(t, got, want)
	res, err := s.Claim(ctx, claim.Request{Agent: "agent-a", MaxHeld: 2})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil, "--max-held 2 counts the two that stats lists: %+v", res.Issue)
	reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, len(reaped), 0)
	// Nor does a grace window reap a wisp, however long ago it was claimed
	// (bd reclaims only leases): the issue's lease has not ended yet.
	zero := time.Duration(0)
	reaped, err = s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true, OlderThan: &zero})
	assert.NilError(t, err)
	assert.Equal(t, len(reaped), 0, "%+v", reaped)
}

// An issue `bd defer --until` left deferred with a date now passed is not
// claimed, by bd-claim's claim-next or by `bd ready --claim`, and neither
// wakes it.
func TestDoltExpiredDeferralStaysDeferred(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "ed")
	id := bdCreate(t, w, "snoozed", "-p", "1")
	w.OK("defer", id, "--until", "2020-02-02")
	res, err := doltStore(t, w, claim.Options{}).Claim(context.Background(), claim.Request{Agent: "agent-1"})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil, "claimed %v", res.Issue)
	var out []struct{ ID string }
	w.As("agent-2").JSON(&out, "ready", "--claim")
	assert.Equal(t, len(out), 0, "bd ready --claim took %v", out)
	assert.Equal(t, claimtest.Count(t, w.DB(t), "SELECT count(*) FROM issues WHERE id = ? AND status = 'deferred' AND defer_until IS NOT NULL", id), 1)
}

// With no other writer, a claim takes exactly the issue --dry-run named
// just before, bd ready's head (FIFO within a priority), claim after claim:
// spreading over the first candidates is only for a try after a lost race.
func TestDoltDryRunNamesTheClaim(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "dr")
	for i := range 8 {
		bdCreate(t, w, fmt.Sprintf("same priority %d", i), "-p", "2")
	}
	var ready []struct{ ID string }
	w.JSON(&ready, "ready", "-u", "--sort", "priority")
	assert.Equal(t, len(ready), 8)
	s := doltStore(t, w, claim.Options{})
	ctx := context.Background()
	for i := range 6 {
		dry, err := s.Claim(ctx, claim.Request{Agent: "fifo", DryRun: true})
		assert.NilError(t, err)
		res, err := s.Claim(ctx, claim.Request{Agent: "fifo"})
		assert.NilError(t, err)
		assert.Equal(t, dry.Issue.ID, ready[i].ID)
		assert.Equal(t, res.Issue.ID, ready[i].ID)
	}
}

// A reset of a wisp (bd's wisps table) finds nothing to clear: bd-claim
// keeps no failure history for wisps (their failed releases are refused),
// so it answers as for an issue without failures, and writes nothing.
func TestDoltWispReset(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "wr")
	wisp := bdCreate(t, w, "a wisp", "--no-history", "-p", "2")
	s := doltStore(t, w, claim.Options{})
	ctx := context.Background()
	conformance.MustClaim(t, s, claim.Request{Agent: "agent-a", ID: wisp})
	_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "agent-a", ID: wisp, Failed: true})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "agent-a", ID: wisp, Reason: "done for now"})
	assert.NilError(t, err)
	conn := w.DB(t)
	count := func() string {
		return fmt.Sprint(claimtest.Count(t, conn, "SELECT count(*) FROM wisp_events"), claimtest.Count(t, conn, "SELECT count(*) FROM events"),
			claimtest.Count(t, conn, "SELECT count(*) FROM dolt_log"), claimtest.Strings(t, conn, "SELECT CONCAT(status, '/', COALESCE(assignee, '')) FROM wisps WHERE id = ?", wisp))
	}
	before := count()
	r, err := s.Reset(ctx, claim.ResetRequest{ID: wisp, Actor: "operator"})
	assert.NilError(t, err)
	assert.Equal(t, r.Issue.ID, wisp)
	assert.Equal(t, r.Cleared, 0)
	assert.Equal(t, r.Label, false)
	assert.Equal(t, count(), before, "nothing written")
	res := conformance.MustClaim(t, s, claim.Request{Agent: "agent-b"})
	assert.Equal(t, res.Issue.ID, wisp, "still claimable")
}

// bd's gates in server mode: while a maintenance command holds the local
// server's gate (.beads/dolt.gate.lock) exclusively, a claim and a dry run
// stop at once, DB_UNAVAILABLE, naming it, and bd refuses too; nothing
// changes. Let go, the claim goes through.
func TestDoltMaintenanceGate(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "gate")
	id := bdCreate(t, w, "one")
	s := doltStore(t, w, claim.Options{})
	gate := filepath.Join(w.Dir, ".beads", "dolt.gate.lock")
	f := flock.New(gate) // as bd takes its gates
	locked, err := f.TryLock()
	assert.Assert(t, err == nil && locked, "%v", err)
	for _, dry := range []bool{true, false} {
		_, err = s.Claim(context.Background(), claim.Request{Agent: "a", DryRun: dry})
		assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
		assert.ErrorContains(t, err, "a maintenance operation is running on this workspace (another bd process holds "+gate+")")
	}
	_, err = s.Stats(context.Background())
	assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
	r := w.Bd("show", id)
	assert.Assert(t, strings.Contains(r.Combined(), "a maintenance operation is running"), "bd refuses too: %s", r.Combined())
	f.Close()
	var shown []struct{ Status string }
	w.JSON(&shown, "show", id)
	assert.Equal(t, shown[0].Status, "open")
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
}

// A writer that waits for the writers' lock past the busy timeout gives up
// busy (BUSY, exit 4) and changes nothing: it does not go on without the
// lock (writers that did raced each other and bd's own claims into lost
// commits). GET_LOCK waits whole seconds: a limit of 100 ms waits one.
// Once the lock is free the claim goes through.
func TestDoltWritersLockTimeout(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "wl")
	id := bdCreate(t, w, "one")
	conn, err := w.DB(t).Conn(context.Background())
	assert.NilError(t, err)
	defer conn.Close()
	var taken int
	assert.NilError(t, conn.QueryRowContext(context.Background(), "SELECT GET_LOCK(?, 0)", "bd-claim/"+w.Database).Scan(&taken))
	assert.Equal(t, taken, 1)
	s := doltStore(t, w, claim.Options{BusyTimeout: 100 * time.Millisecond})
	before := claimtest.DoltRows(t, w.DB(t))
	began := time.Now()
	_, err = s.Claim(context.Background(), claim.Request{Agent: "a"})
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "other bd-claim writers held the workspace's writers' lock, taking their turns, for all of --timeout-ms (100ms); nothing was written: retry, or raise --timeout-ms")
	assert.Assert(t, time.Since(began) >= time.Second, "it waited for the lock: %v", time.Since(began))
	assert.DeepEqual(t, claimtest.DoltRows(t, w.DB(t)), before)
	_, err = conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", "bd-claim/"+w.Database)
	assert.NilError(t, err)
	res, err := s.Claim(context.Background(), claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, id)
}

// A claim that waited for other bd-claim writers (a swarm is claiming)
// takes one of the first 8 candidates of the most urgent priority at
// random, not always the head that every `bd ready --claim` goes for;
// never a less urgent issue while a more urgent one is ready. Without
// waiting, it takes the head.
func TestDoltQueuedClaimSpreads(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "qs")
	urgent := bdCreate(t, w, "urgent", "-p", "0")
	var tier []string
	for i := range 8 {
		tier = append(tier, bdCreate(t, w, fmt.Sprint("tier ", i), "-p", "1"))
	}
	ctx := context.Background()
	s := doltStore(t, w, claim.Options{})
	lock, err := w.DB(t).Conn(ctx)
	assert.NilError(t, err)
	defer lock.Close()
	queued := func() string {
		var taken int
		assert.NilError(t, lock.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", "bd-claim/"+w.Database).Scan(&taken))
		assert.Equal(t, taken, 1)
		time.AfterFunc(300*time.Millisecond, func() { lock.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", "bd-claim/"+w.Database) })
		began := time.Now()
		res, err := s.Claim(ctx, claim.Request{Agent: "a"})
		assert.NilError(t, err)
		assert.Assert(t, time.Since(began) >= 300*time.Millisecond, "the claim waited for the lock")
		return res.Issue.ID
	}
	assert.Equal(t, queued(), urgent, "never a less urgent issue")
	heads := 0
	for range 5 {
		var ready []struct{ ID string }
		w.JSON(&ready, "ready", "-n", "0")
		got := queued()
		assert.Assert(t, slices.Contains(tier, got), got)
		if got == ready[0].ID {
			heads++
		}
	}
	assert.Assert(t, heads < 5, "5 waiting claims all took bd ready's head (chance 1 in 6,720 if they spread)")
	var ready []struct{ ID string }
	w.JSON(&ready, "ready", "-n", "0")
	res, err := s.Claim(ctx, claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, ready[0].ID, "a claim that did not wait takes the head")
}

// Leases beside the real bd v1.3.0: bd's claims and bd-claim's claims made
// without --lease carry bd's 5-minute lease, and neither side takes the
// other's over when it lapses; `bd ready --claim` passes every in_progress
// issue by; a lease bd-claim's agent asked for is taken over at its end;
// and `bd reclaim --older-than` recovers bd-claim's plain claims as it
// recovers bd's.
func TestDoltLeasesBesideBd(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "lb")
	plain := bdCreate(t, w, "plain", "-p", "0")
	leased := bdCreate(t, w, "leased", "-p", "0")
	bds := bdCreate(t, w, "bd's", "-p", "1")
	rest := bdCreate(t, w, "the rest", "-p", "2")
	ctx := context.Background()
	past := doltStore(t, w, claim.Options{Now: func() time.Time { return time.Now().Add(-20 * time.Minute) }})
	assert.Equal(t, conformance.MustClaim(t, past, claim.Request{Agent: "agent-p", ID: plain}).Issue.ID, plain)
	assert.Equal(t, conformance.MustClaim(t, past, claim.Request{Agent: "agent-l", ID: leased, Lease: time.Minute}).Issue.ID, leased)
	// Both leases ended 15 and 19 minutes ago. bd's claim takes neither.
	var got []struct{ ID string }
	w.As("bd-agent").JSON(&got, "ready", "--claim")
	assert.Equal(t, len(got), 1)
	assert.Equal(t, got[0].ID, bds, "bd ready --claim takes open issues only")

	later := doltStore(t, w, claim.Options{Now: func() time.Time { return time.Now().Add(time.Hour) }})
	took := conformance.MustClaim(t, later, claim.Request{Agent: "x"})
	assert.Equal(t, took.Issue.ID, leased, "the asked lease is taken over")
	assert.Equal(t, took.TookOver.Agent, "agent-l")
	next := conformance.MustClaim(t, later, claim.Request{Agent: "y"})
	assert.Equal(t, next.Issue.ID, rest, "bd-claim's plain claim and bd's, their leases lapsed, are passed by")
	none, err := later.Claim(ctx, claim.Request{Agent: "z"})
	assert.NilError(t, err)
	assert.Assert(t, none.Issue == nil, "%+v", none.Issue)

	// bd's reaper recovers bd-claim's plain claim, whose lease ended 15
	// minutes ago; the claims made within its window stay.
	w.As("supervisor").OK("reclaim", "--older-than", "10m")
	conn := w.DB(t)
	status := func(id string) (s string) {
		assert.NilError(t, conn.QueryRow("SELECT CONCAT(status, '/', COALESCE(assignee, '')) FROM issues WHERE id = ?", id).Scan(&s))
		return s
	}
	assert.Equal(t, status(plain), "open/")
	assert.Equal(t, status(bds), "in_progress/bd-agent")
	assert.Equal(t, status(leased), "in_progress/x")
	again := conformance.MustClaim(t, later, claim.Request{Agent: "z"})
	assert.Equal(t, again.Issue.ID, plain, "reclaimed by bd, claimable again")
}
