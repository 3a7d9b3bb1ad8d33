// Package conformance is the one behaviour suite that every engine of
// bd-claim passes (Run): each engine package's TestConformance runs it
// with its setups, workspaces made by the real bd that writes them. What
// each move writes, cell by cell, is the engines' own fidelity tests'
// (twins against the real bd); the suite checks what the library
// promises, on every engine alike.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// Setup makes new workspaces of one engine with the real bd that writes
// them.
type Setup struct {
	Name string
	New  func(t *testing.T) *claimtest.BdRunner
	// ExactIDs: the setup's bd takes whole ids only (bd v1.3.0 in
	// proxied-server mode resolves no short id); bd-claim resolves them
	// there all the same.
	ExactIDs bool
	// NoClose is set for a bd whose close bd-claim does not write: it
	// refuses it (SCHEMA_INCOMPATIBLE) and says to close the issue with
	// bd close. It renders every row of a workspace of the setup, so that
	// the checks, which then assert the refusal instead of the close, show
	// that it wrote nothing.
	NoClose func(t *testing.T, w *claimtest.BdRunner) any
}

// Workspace is a new workspace of one setup, and its bd.
type Workspace struct {
	*claimtest.BdRunner
	exactIDs bool                                          // Setup.ExactIDs
	noClose  func(t *testing.T, w *claimtest.BdRunner) any // Setup.NoClose
}

// Create is bd create TITLE FLAGS; it returns the new issue's id.
func (w *Workspace) Create(t *testing.T, title string, flags ...string) string {
	t.Helper()
	var iss struct{ ID string }
	w.JSON(&iss, append([]string{"create", title}, flags...)...)
	assert.Assert(t, iss.ID != "", "bd create %q", title)
	return iss.ID
}

// Ready is bd ready's ids, unassigned ones, in sort order, with flags.
func (w *Workspace) Ready(t *testing.T, sort string, flags ...string) []string {
	t.Helper()
	var list []struct{ ID string }
	w.JSON(&list, append([]string{"ready", "-u", "--limit", "1000", "--sort", sort}, flags...)...)
	var ids []string
	for _, iss := range list {
		ids = append(ids, iss.ID)
	}
	return ids
}

// Show is bd show ID: status and assignee.
func (w *Workspace) Show(t *testing.T, id string) string {
	t.Helper()
	var list []struct{ Status, Assignee string }
	w.JSON(&list, "show", id)
	assert.Equal(t, len(list), 1)
	return list[0].Status + "/" + list[0].Assignee
}

// Store opens a Store on the workspace as the CLI would.
func (w *Workspace) Store(t *testing.T, o claim.Options) *claim.Store {
	t.Helper()
	return OpenAt(t, w.Dir, w.Getenv, o)
}

// OpenAt opens a Store on the workspace at dir as the CLI would: discovery
// from that directory with bd's environment; closed at the end of t.
func OpenAt(t testing.TB, dir string, getenv func(string) string, o claim.Options) *claim.Store {
	t.Helper()
	ws, err := workspace.Find(workspace.Locate{Start: dir, Getenv: getenv})
	assert.NilError(t, err)
	s, err := engines.Open(context.Background(), ws, o)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// Run runs every check of the suite on new workspaces of each setup, the
// setups in parallel.
func Run(t *testing.T, setups ...Setup) {
	for _, setup := range setups {
		t.Run(setup.Name, func(t *testing.T) {
			t.Parallel()
			for _, check := range checks {
				t.Run(check.name, func(t *testing.T) {
					check.run(t, &Workspace{setup.New(t), setup.ExactIDs, setup.NoClose})
				})
			}
		})
	}
}

var checks = []struct {
	name string
	run  func(t *testing.T, w *Workspace)
}{
	{"claim order and filters as bd ready", confOrder},
	{"claim by id: refusals and re-claims", confByID},
	{"short ids, as bd resolves them", confShortIDs},
	{"leases: heartbeat, expiry, takeover, reap", confLeases},
	{"claims without --lease: never taken over, reaped past a grace", confUnleased},
	{"release, backoff, abandonment, reset", confFailures},
	{"claim id fencing and max held", confFencing},
	{"resume: the held issue back, its lease renewed, nothing new", confResume},
	{"wait wakes on a release", confWait},
	{"stats and explain agree", confFigures},
	{"close: the fence, and bd ready as after bd close", confClose},
	{"bd's JSON of a claim", confBdJSON},
}

// Claim-next takes bd ready's head for each sort and filter, and what
// --dry-run named just before; claim after claim, it drains the
// workspace in bd ready's order.
func confOrder(t *testing.T, w *Workspace) {
	ctx := context.Background()
	for i, p := range []string{"2", "1", "3", "1", "2", "0"} {
		flags := []string{"-p", p}
		if i%2 == 0 {
			flags = append(flags, "-l", "front")
		}
		w.Create(t, "issue "+p, flags...)
	}
	s := w.Store(t, claim.Options{})
	head := func(req claim.Request) string {
		t.Helper()
		assert.NilError(t, req.Filters.Validate())
		res, err := s.Claim(ctx, req)
		assert.NilError(t, err)
		assert.Assert(t, res.Issue != nil && res.ClaimID == 0, "%+v", res)
		return res.Issue.ID
	}
	for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest, claim.SortHybrid} {
		want := w.Ready(t, string(sort))
		assert.Equal(t, len(want), 6)
		assert.Equal(t, head(claim.Request{Agent: "o", DryRun: true, Filters: claim.Filters{Sort: sort}}), want[0], "sort %s", sort)
		labelled := w.Ready(t, string(sort), "--label", "front")
		assert.Equal(t, len(labelled), 3)
		assert.Equal(t, head(claim.Request{Agent: "o", DryRun: true, Filters: claim.Filters{Sort: sort, IncludeLabels: []string{"front"}}}), labelled[0],
			"sort %s, label front", sort)
	}
	order := w.Ready(t, "priority")
	for i, id := range order {
		dry := head(claim.Request{Agent: "o", DryRun: true})
		res, err := s.Claim(ctx, claim.Request{Agent: "o"})
		assert.NilError(t, err)
		assert.Equal(t, dry, id, "dry run %d", i)
		assert.Equal(t, res.Issue.ID, id, "claim %d", i)
		assert.Assert(t, res.ClaimID > 0)
		assert.Equal(t, w.Show(t, id), "in_progress/o")
	}
	res, err := s.Claim(ctx, claim.Request{Agent: "o"})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil, "drained: %+v", res.Issue)
}

// A claim or a dry run that asks for bd's JSON gets the issue as bd show
// has it (after the claim, or as it is): for a claim-next and a claim by
// id (of an issue without labels, which bd update --claim leaves out in
// proxied-server mode); none without an issue, nor unasked. What else it
// holds, byte for byte, is against the real bd in cli's parity tests.
func confBdJSON(t *testing.T, w *Workspace) {
	ctx := context.Background()
	a := w.Create(t, "first <a>", "-p", "1", "-l", "x,y")
	b := w.Create(t, "second", "-p", "2")
	s := w.Store(t, claim.Options{})
	type shown struct {
		ID, Title, Status, Assignee string
		Priority                    int
		Labels                      []string
	}
	show := func(id string) shown {
		t.Helper()
		var list []shown
		w.JSON(&list, "show", id)
		assert.Equal(t, len(list), 1)
		return list[0]
	}
	bd := func(res claim.Result) shown {
		t.Helper()
		var iss shown
		assert.NilError(t, json.Unmarshal(res.BdJSON, &iss), "%s", res.BdJSON)
		return iss
	}
	for _, req := range []claim.Request{{Agent: "j", DryRun: true, BdJSON: true}, {Agent: "j", BdJSON: true},
		{Agent: "j", ID: b, DryRun: true, BdJSON: true}, {Agent: "j", ID: b, BdJSON: true}, {Agent: "j", ID: b, BdJSON: true}} {
		res, err := s.Claim(ctx, req)
		assert.NilError(t, err)
		assert.DeepEqual(t, bd(res), show(res.Issue.ID))
	}
	assert.Equal(t, w.Show(t, a)+" "+w.Show(t, b), "in_progress/j in_progress/j")
	res, err := s.Claim(ctx, claim.Request{Agent: "j", BdJSON: true})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil && res.BdJSON == nil, "%+v", res)
	w.Create(t, "third", "-p", "3")
	res, err = s.Claim(ctx, claim.Request{Agent: "j"})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue != nil && res.BdJSON == nil, "%+v", res)
}

// An --id claim refuses, with its code and reason, what claim-next would
// not take; the holder's own re-claim returns its claim unchanged.
func confByID(t *testing.T, w *Workspace) {
	ctx := context.Background()
	blocker := w.Create(t, "blocker", "-p", "1")
	blocked := w.Create(t, "blocked", "-p", "1")
	w.OK("dep", "add", blocked, blocker)
	closed := w.Create(t, "closed", "-p", "1")
	w.OK("close", closed)
	s := w.Store(t, claim.Options{})
	refused := func(id string, code claim.Code, reason string) {
		t.Helper()
		res, err := s.Claim(ctx, claim.Request{Agent: "b", ID: id})
		assert.Equal(t, claim.ErrorCode(err), code, "%v", err)
		assert.ErrorContains(t, err, reason)
		assert.Assert(t, res.Issue == nil)
	}
	refused(blocked, claim.ENotClaimable, "it is blocked by an open dependency")
	refused(closed, claim.ENotClaimable, "its status is closed")
	refused("bt-nosuch", claim.ENotFound, "no issue bt-nosuch")

	first, err := s.Claim(ctx, claim.Request{Agent: "a", ID: blocker})
	assert.NilError(t, err)
	again, err := s.Claim(ctx, claim.Request{Agent: "a", ID: blocker})
	assert.NilError(t, err)
	assert.Equal(t, again.ClaimID, first.ClaimID, "a re-claim is the same claim")
	_, err = s.Claim(ctx, claim.Request{Agent: "b", ID: blocker})
	var e *claim.Error
	assert.Assert(t, errors.As(err, &e) && e.Code == claim.EAlready && e.Holder == "a" && e.HolderClaimID == first.ClaimID, "%v", err)
	assert.Equal(t, w.Show(t, blocker), "in_progress/a")
}

// An id given short, as bd show takes it (no prefix, or the start of the
// hash), names the issue for a claim by id, a heartbeat, a release and a
// close, also where the workspace's bd takes whole ids only (ExactIDs);
// every result names the whole id. One that starts several ids is
// refused, listing them; one that names none is not found.
func confShortIDs(t *testing.T, w *Workspace) {
	ctx := context.Background()
	prefix, _, _ := strings.Cut(w.Create(t, "first", "-p", "3"), "-")
	abc, abd := prefix+"-abc12", prefix+"-abd34"
	for _, id := range []string{abc, abd} {
		w.Create(t, "issue "+id, "--id", id, "-p", "1")
	}
	if w.exactIDs {
		r := w.Bd("show", "abc12", "--json")
		assert.Assert(t, r.ExitCode != 0 && strings.Contains(r.Stdout(), "no issues found"), "bd show takes whole ids only: %s", r.Combined())
	} else {
		var shown []struct{ ID string }
		w.JSON(&shown, "show", "abc12")
		assert.Equal(t, shown[0].ID, abc, "bd show takes the short id")
	}
	s := w.Store(t, claim.Options{})
	got, err := s.Claim(ctx, claim.Request{Agent: "a", ID: "abc12", Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, got.Issue.ID, abc)
	beat, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "a", ID: "abc1", ClaimID: got.ClaimID})
	assert.NilError(t, err)
	assert.Equal(t, beat.Issue.ID, abc)
	rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: "abc", ClaimID: got.ClaimID, Reason: "short"})
	assert.NilError(t, err)
	assert.Equal(t, rel.Issue.ID, abc)
	assert.Equal(t, w.Show(t, abc), "open/")

	_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: "ab"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound, "%v", err)
	assert.ErrorContains(t, err, `"ab" is the start of 2 issue ids: `+abc+", "+abd)
	_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: "zz9"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound, "%v", err)
	assert.ErrorContains(t, err, "no issue zz9")

	second, err := s.Claim(ctx, claim.Request{Agent: "b", ID: prefix + "-abd"})
	assert.NilError(t, err)
	assert.Equal(t, second.Issue.ID, abd)
	closed, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "b", ID: "abd34", ClaimID: second.ClaimID})
	if w.noClose != nil {
		closeRefused(t, err, abd)
		assert.Equal(t, w.Show(t, abd), "in_progress/b")
		return
	}
	assert.NilError(t, err)
	assert.Equal(t, closed.Issue.ID, abd)
	assert.Equal(t, w.Show(t, abd), "closed/b")
}

// A lease is renewed by a heartbeat; once it ends, a claim-next takes the
// issue over (naming the old holder, who is fenced off) and reap returns
// the other expired claims to open.
func confLeases(t *testing.T, w *Workspace) {
	ctx := context.Background()
	one := w.Create(t, "one", "-p", "1")
	two := w.Create(t, "two", "-p", "2")
	c := newClock(time.Now().UTC().Truncate(time.Second))
	s := w.Store(t, claim.Options{Now: c.now})
	a, err := s.Claim(ctx, claim.Request{Agent: "a", Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, a.Issue.ID, one)
	assert.Assert(t, a.Lease != nil && a.Lease.Until.Sub(c.now()) <= time.Minute+time.Second, "%+v", a.Lease)
	c.advance(50 * time.Second)
	beat, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "a", ID: one, ClaimID: a.ClaimID, Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, beat.ClaimID, a.ClaimID)
	assert.Assert(t, beat.Lease.Until.After(a.Lease.Until), "%v after %v", beat.Lease.Until, a.Lease.Until)
	c.advance(30 * time.Second) // past the first lease, within the renewed one
	b, err := s.Claim(ctx, claim.Request{Agent: "b", Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, b.Issue.ID, two, "the renewed lease still holds %s", one)
	assert.Assert(t, b.TookOver == nil)

	c.advance(2 * time.Minute) // both leases have ended
	_, err = s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "b", ID: two, ClaimID: b.ClaimID + 1})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "a claim id that is not the holder's: %v", err)
	took, err := s.Claim(ctx, claim.Request{Agent: "c", Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, took.Issue.ID, one)
	assert.Assert(t, took.TookOver != nil && took.TookOver.Agent == "a" && took.TookOver.ClaimID == a.ClaimID, "%+v", took.TookOver)
	assert.Assert(t, took.ClaimID != a.ClaimID)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: one, ClaimID: a.ClaimID})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "the old holder is fenced off: %v", err)

	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(st.ExpiredLeases), 1)
	assert.Equal(t, st.ExpiredLeases[0].ID+"/"+st.ExpiredLeases[0].Holder, two+"/b")
	listed, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, w.Show(t, two), "in_progress/b", "a dry run writes nothing")
	reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper"})
	assert.NilError(t, err)
	assert.DeepEqual(t, reaped, listed)
	assert.Equal(t, len(reaped), 1)
	assert.Equal(t, w.Show(t, two), "open/")
	assert.Equal(t, w.Show(t, one), "in_progress/c")
}

// A claim made without --lease (on Dolt it carries bd's 5-minute lease,
// as bd writes one) is never taken over, however long its holder works
// without a heartbeat: claim-next and --id pass it by, plain reap leaves
// it, stats names its lease bd's. reap --older-than recovers it once its
// lease ended (or, without one, it was made) that long ago; an asked lease
// is reaped past the same grace window, not before.
func confUnleased(t *testing.T, w *Workspace) {
	ctx := context.Background()
	plain := w.Create(t, "plain", "-p", "1")
	leased := w.Create(t, "leased", "-p", "2")
	w.Create(t, "spare", "-p", "3")
	c := newClock(time.Now().UTC().Truncate(time.Second))
	s := w.Store(t, claim.Options{Now: c.now})
	a, err := s.Claim(ctx, claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, a.Issue.ID, plain)
	c.advance(10 * time.Minute)
	b, err := s.Claim(ctx, claim.Request{Agent: "b", Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, b.Issue.ID, leased)

	c.advance(time.Hour) // a has worked 70 minutes without a heartbeat; b's lease ended 59 minutes ago
	next, err := s.Claim(ctx, claim.Request{Agent: "x", DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, next.Issue.ID, leased, "the asked lease is taken over, the plain claim is not")
	_, err = s.Claim(ctx, claim.Request{Agent: "x", ID: plain})
	var held *claim.Error
	assert.Assert(t, errors.As(err, &held) && held.Code == claim.EAlready && held.Holder == "a", "%v", err)
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(st.ExpiredLeases), 1)
	assert.Equal(t, st.ExpiredLeases[0].ID, leased)
	assert.Equal(t, st.ReadyTakeovers, 1)
	for _, ac := range st.InProgress {
		for _, h := range ac.Issues {
			switch h.ID {
			case plain: // no lease on SQLite; bd's own, lapsed, on Dolt
				assert.Assert(t, (h.LeaseUntil == nil && h.LeaseKind == "") || (h.LeaseKind == claim.LeaseBd && h.Expired), "%+v", h)
			case leased:
				assert.Assert(t, h.LeaseKind == claim.LeaseAsked && h.Expired, "%+v", h)
			}
		}
	}
	reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, len(reaped), 1, "%+v", reaped)
	assert.Equal(t, reaped[0].ID, leased)

	// The plain claim ended 70 minutes ago (SQLite: made then, without a
	// lease) or 65 (Dolt: bd's lease of it); b's lease 59 minutes ago.
	reap := func(grace time.Duration) []string {
		t.Helper()
		reaped, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", OlderThan: &grace})
		assert.NilError(t, err)
		ids := []string{}
		for _, e := range reaped {
			ids = append(ids, e.ID+"/"+e.Holder)
		}
		return ids
	}
	assert.DeepEqual(t, reap(75*time.Minute), []string{})
	assert.DeepEqual(t, reap(time.Hour), []string{plain + "/a"})
	assert.Equal(t, w.Show(t, plain), "open/")
	assert.Equal(t, w.Show(t, leased), "in_progress/b", "within the grace window")
	assert.DeepEqual(t, reap(30*time.Minute), []string{leased + "/b"})
	assert.Equal(t, w.Show(t, leased), "open/")
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: plain, ClaimID: a.ClaimID})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "the reaped holder is fenced off: %v", err)
}

// A failed release starts a backoff; the failure that reaches
// max-failures abandons the issue (claim-next skips it, --id explains);
// reset hands it out again. A plain release returns the issue to open.
func confFailures(t *testing.T, w *Workspace) {
	ctx := context.Background()
	flaky := w.Create(t, "flaky", "-p", "1")
	c := newClock(time.Now().UTC().Truncate(time.Second))
	policy := claim.Policy{BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour, MaxFailures: 2, AbandonedLabel: "claim:abandoned"}
	s := w.Store(t, claim.Options{Now: c.now, Policy: &policy})
	claimIt := func(agent string) claim.Result {
		t.Helper()
		res, err := s.Claim(ctx, claim.Request{Agent: agent})
		assert.NilError(t, err)
		return res
	}

	first := claimIt("a")
	assert.Equal(t, first.Issue.ID, flaky)
	rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: flaky, ClaimID: first.ClaimID, Reason: "handing over"})
	assert.NilError(t, err)
	assert.Assert(t, rel.ClaimID == first.ClaimID && rel.Failures == 0 && rel.RetryAt == nil, "%+v", rel)
	assert.Equal(t, w.Show(t, flaky), "open/")

	claimIt("a")
	rel, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: flaky, Failed: true, Reason: "boom"})
	assert.NilError(t, err)
	assert.Assert(t, rel.Failures == 1 && !rel.Abandoned && rel.RetryAt != nil, "%+v", rel)
	assert.Assert(t, rel.RetryAt.Sub(c.now()) > 50*time.Second && rel.RetryAt.Sub(c.now()) <= time.Minute, "%v", rel.RetryAt)
	assert.Assert(t, claimIt("b").Issue == nil, "in backoff")
	_, err = s.Claim(ctx, claim.Request{Agent: "b", ID: flaky})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable)
	assert.ErrorContains(t, err, "in backoff until")
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, st.Backoff, []claim.Backoff{{ID: flaky, Failures: 1, RetryAt: *rel.RetryAt}})

	c.advance(2 * time.Minute)
	assert.Equal(t, claimIt("b").Issue.ID, flaky, "after the backoff")
	rel, err = s.Release(ctx, claim.ReleaseRequest{Agent: "b", ID: flaky, Failed: true})
	assert.NilError(t, err)
	assert.Assert(t, rel.Failures == 2 && rel.Abandoned && rel.RetryAt == nil, "%+v", rel)
	c.advance(3 * time.Hour)
	assert.Assert(t, claimIt("c").Issue == nil, "abandoned")
	_, err = s.Claim(ctx, claim.Request{Agent: "c", ID: flaky})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable)
	assert.ErrorContains(t, err, "it is abandoned")
	st, err = s.Stats(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, st.Abandoned, []claim.Abandoned{{ID: flaky, Failures: 2, Labelled: true}})
	var labels []struct{ Labels []string }
	w.JSON(&labels, "show", flaky)
	assert.DeepEqual(t, labels[0].Labels, []string{"claim:abandoned"})

	reset, err := s.Reset(ctx, claim.ResetRequest{Actor: "human", ID: flaky})
	assert.NilError(t, err)
	assert.Assert(t, reset.Cleared == 2 && reset.Label, "%+v", reset)
	reset, err = s.Reset(ctx, claim.ResetRequest{Actor: "human", ID: flaky})
	assert.NilError(t, err)
	assert.Assert(t, reset.Cleared == 0 && !reset.Label, "nothing left: %+v", reset)
	assert.Equal(t, claimIt("c").Issue.ID, flaky, "handed out again")
	_, err = s.Reset(ctx, claim.ResetRequest{Actor: "human", ID: "bt-nosuch"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound)
}

// A claim id names one claim: a re-claim, release or heartbeat under
// another is refused; a re-claim under it is the same claim (its lease
// renewed when it asks for one). --max-held stops a claim-next (with its
// reason) and refuses an --id claim, but not the re-claim of a held issue.
func confFencing(t *testing.T, w *Workspace) {
	ctx := context.Background()
	x := w.Create(t, "x", "-p", "1")
	y := w.Create(t, "y", "-p", "2")
	w.Create(t, "z", "-p", "3") // claimable, withheld at capacity
	closed := w.Create(t, "closed", "-p", "1")
	w.OK("close", closed)
	c := newClock(time.Now().UTC().Truncate(time.Second))
	s := w.Store(t, claim.Options{Now: c.now})
	first, err := s.Claim(ctx, claim.Request{Agent: "a", Lease: time.Minute})
	assert.NilError(t, err)
	assert.Equal(t, first.Issue.ID, x)
	same, err := s.Claim(ctx, claim.Request{Agent: "a", ID: x, ClaimID: first.ClaimID})
	assert.NilError(t, err)
	assert.Assert(t, same.ClaimID == first.ClaimID && same.Lease.Until.Equal(first.Lease.Until), "%+v", same)
	c.advance(30 * time.Second)
	renewed, err := s.Claim(ctx, claim.Request{Agent: "a", ID: x, Lease: time.Minute})
	assert.NilError(t, err)
	assert.Assert(t, renewed.ClaimID == first.ClaimID && renewed.Lease.Until.Equal(c.now().Add(time.Minute)), "%+v", renewed)
	dry, err := s.Claim(ctx, claim.Request{Agent: "a", ID: x, DryRun: true})
	assert.NilError(t, err)
	assert.Equal(t, dry.ClaimID, first.ClaimID)
	_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: x, ClaimID: first.ClaimID + 1})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "%v", err)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: x, ClaimID: first.ClaimID + 1})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "%v", err)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "b", ID: x})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "%v", err)
	assert.ErrorContains(t, err, "held by a")
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: y})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "%v", err)
	_, err = s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: closed})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "%v", err)
	assert.ErrorContains(t, err, "is closed, not held by a")
	for _, err := range []error{
		second(s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: "bt-nosuch"})),
		second(s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "a", ID: "bt-nosuch"})),
	} {
		assert.Equal(t, claim.ErrorCode(err), claim.ENotFound, "%v", err)
	}

	res, err := s.Claim(ctx, claim.Request{Agent: "a", MaxHeld: 1})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil, "%+v", res.Issue)
	assert.Equal(t, res.Reason, "agent a already holds 1 in_progress issue (max held 1)")
	res, err = s.Claim(ctx, claim.Request{Agent: "a", MaxHeld: 1, DryRun: true})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue == nil && res.Reason != "", "%+v", res)
	_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: y, MaxHeld: 1})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable)
	assert.ErrorContains(t, err, "(capacity): agent a already holds 1")
	again, err := s.Claim(ctx, claim.Request{Agent: "a", ID: x, MaxHeld: 1})
	assert.NilError(t, err)
	assert.Equal(t, again.ClaimID, first.ClaimID, "a held issue is re-claimed at capacity")
	ex, err := s.Explain(ctx, claim.Request{Agent: "a", MaxHeld: 1})
	assert.NilError(t, err)
	assert.Assert(t, ex.Held == 1 && ex.Claimable == 0 && ex.Excluded["capacity"] == 2, "%+v", ex)
	more, err := s.Claim(ctx, claim.Request{Agent: "a", MaxHeld: 2})
	assert.NilError(t, err)
	assert.Equal(t, more.Issue.ID, y, "room under a higher limit")

	rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: x, ClaimID: first.ClaimID})
	assert.NilError(t, err)
	assert.Equal(t, rel.ClaimID, first.ClaimID)
	_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: x, ClaimID: first.ClaimID})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "a fenced re-claim does not claim anew: %v", err)
	assert.ErrorContains(t, err, "claim "+strconv.FormatInt(first.ClaimID, 10)+" no longer holds issue "+x+": it is open and not held by a")
	later, err := s.Claim(ctx, claim.Request{Agent: "a", ID: x})
	assert.NilError(t, err)
	assert.Assert(t, later.ClaimID != first.ClaimID, "a new claim")
	_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: x, ClaimID: first.ClaimID})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "%v", err)
}

// --resume returns the issue the agent already holds that passes its
// filters, the oldest claim first, and renews its lease as a heartbeat
// does (by its own length, or by the lease asked); it claims nothing new,
// whatever --max-held says. An agent that holds none (or none that passes
// the filters) claims as usual. A dry run names the held issue without
// renewing anything; --resume with --id is refused. A claim without a
// lease keeps none unless one is asked (on Dolt every claim carries bd's
// own lease, which is renewed).
func confResume(t *testing.T, w *Workspace) {
	ctx := context.Background()
	older := w.Create(t, "older", "-p", "2", "-l", "front")
	newer := w.Create(t, "newer", "-p", "1")
	spare := w.Create(t, "spare", "-p", "3", "-l", "back")
	plain := w.Create(t, "plain", "-p", "4")
	c := newClock(time.Now().UTC().Truncate(time.Second))
	s := w.Store(t, claim.Options{Now: c.now})
	claims := func() int {
		t.Helper()
		st, err := s.Stats(ctx)
		assert.NilError(t, err)
		return st.LastHour.Claims
	}
	first, err := s.Claim(ctx, claim.Request{Agent: "a", Resume: true, Lease: time.Minute, Filters: claim.Filters{IncludeLabels: []string{"front"}}})
	assert.NilError(t, err)
	assert.Assert(t, first.Issue.ID == older && !first.Resumed && first.ClaimID > 0, "a holds nothing: a claim as usual: %+v", first)
	c.advance(10 * time.Second)
	later := MustClaim(t, s, claim.Request{Agent: "a", ID: newer, Lease: time.Minute})
	c.advance(20 * time.Second)
	before := claims()

	res, err := s.Claim(ctx, claim.Request{Agent: "a", Resume: true})
	assert.NilError(t, err)
	assert.Assert(t, res.Issue.ID == older && res.Resumed && res.ClaimID == first.ClaimID, "the oldest claim: %+v", res)
	assert.Assert(t, res.Issue.Status == "in_progress" && res.Issue.Assignee == "a", "%+v", res.Issue)
	assert.Assert(t, res.Lease != nil && res.Lease.Until.Equal(c.now().Add(time.Minute)), "renewed by its own length from now: %+v", res.Lease)
	assert.Equal(t, w.Show(t, spare), "open/", "nothing new is claimed")
	dry, err := s.Claim(ctx, claim.Request{Agent: "a", Resume: true, DryRun: true, MaxHeld: 2})
	assert.NilError(t, err)
	assert.Assert(t, dry.Resumed && dry.Issue.ID == older && dry.ClaimID == first.ClaimID && dry.Lease.Until.Equal(res.Lease.Until), "%+v", dry)
	c.advance(10 * time.Second)
	dry, err = s.Claim(ctx, claim.Request{Agent: "a", Resume: true, DryRun: true})
	assert.NilError(t, err)
	assert.Assert(t, dry.Lease.Until.Equal(res.Lease.Until), "a dry run renews nothing: %+v", dry.Lease)
	asked, err := s.Claim(ctx, claim.Request{Agent: "a", Resume: true, Lease: 5 * time.Minute, MaxHeld: 2, Filters: claim.Filters{MinPriority: new(1)}})
	assert.NilError(t, err)
	assert.Assert(t, asked.Resumed && asked.Issue.ID == newer && asked.ClaimID == later.ClaimID, "the filters choose among the held issues; capacity does not stop a resume: %+v", asked)
	assert.Assert(t, asked.Lease.Until.Equal(c.now().Add(5*time.Minute)), "renewed by the lease asked: %+v", asked.Lease)
	beat, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "a", ID: newer, ClaimID: later.ClaimID})
	assert.NilError(t, err)
	assert.Assert(t, beat.Lease.Until.Equal(asked.Lease.Until), "the lease a heartbeat renews: %+v", beat.Lease)
	assert.Equal(t, claims(), before, "resumes claim nothing")

	// None of the held issues passes: a claim as usual.
	other, err := s.Claim(ctx, claim.Request{Agent: "a", Resume: true, Filters: claim.Filters{IncludeLabels: []string{"back"}}})
	assert.NilError(t, err)
	assert.Assert(t, other.Issue.ID == spare && !other.Resumed && other.ClaimID != 0, "%+v", other)
	assert.Equal(t, claims(), before+1)
	_, err = s.Claim(ctx, claim.Request{Agent: "a", Resume: true, ID: older})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%v", err)

	// A claim without a lease: none is added, but bd's own (Dolt) is
	// renewed, as a heartbeat renews it; one asked for is given.
	bare := MustClaim(t, s, claim.Request{Agent: "b"})
	assert.Equal(t, bare.Issue.ID, plain)
	c.advance(4 * time.Minute)
	again, err := s.Claim(ctx, claim.Request{Agent: "b", Resume: true})
	assert.NilError(t, err)
	assert.Assert(t, again.Resumed && again.Issue.ID == plain && again.ClaimID == bare.ClaimID, "%+v", again)
	c.advance(2 * time.Minute) // past bd's 5 minutes from the claim, within them from the resume
	held := heldIssue(t, s, "b", plain)
	switch {
	case bare.Lease == nil: // SQLite: no lease, none added
		assert.Assert(t, again.Lease == nil && held.LeaseUntil == nil, "%+v %+v", again.Lease, held)
	default: // Dolt: bd's lease, renewed from the resume
		assert.Assert(t, again.Lease != nil && held.LeaseKind == claim.LeaseBd && !held.Expired, "%+v %+v", again.Lease, held)
	}
	leased, err := s.Claim(ctx, claim.Request{Agent: "b", Resume: true, Lease: time.Minute})
	assert.NilError(t, err)
	assert.Assert(t, leased.Resumed && leased.Lease != nil && leased.Lease.Until.Equal(c.now().Add(time.Minute)), "%+v", leased)
	assert.Equal(t, heldIssue(t, s, "b", plain).LeaseKind, claim.LeaseAsked)
	// a's lease of older has ended, and nobody took it over: a resume
	// renews it, as a heartbeat would.
	late, err := s.Claim(ctx, claim.Request{Agent: "a", Resume: true, Filters: claim.Filters{IncludeLabels: []string{"front"}}})
	assert.NilError(t, err)
	assert.Assert(t, late.Resumed && late.Issue.ID == older && late.ClaimID == first.ClaimID && late.Lease.Until.Equal(c.now().Add(time.Minute)), "%+v", late)
}

// heldIssue is how stats shows agent's claim of issue id.
func heldIssue(t *testing.T, s *claim.Store, agent, id string) claim.HeldIssue {
	t.Helper()
	st, err := s.Stats(context.Background())
	assert.NilError(t, err)
	for _, ac := range st.InProgress {
		for _, h := range ac.Issues {
			if ac.Agent == agent && h.ID == id {
				return h
			}
		}
	}
	t.Fatalf("%s does not hold %s: %+v", agent, id, st.InProgress)
	return claim.HeldIssue{}
}

// second is the error of a two-valued call.
func second[T any](_ T, err error) error { return err }

// A waiting claim is woken by another Store's commit (the engine's change
// signal), before the periodic look would have run, and claims what was
// released; a dry run only finds it.
func confWait(t *testing.T, w *Workspace) {
	ctx := context.Background()
	only := w.Create(t, "only", "-p", "1")
	// The waiter never looks again on its own (LookEvery): only the
	// database's change signal, moved by the holder's release, wakes it
	// before its wait ends.
	holder, waiter := w.Store(t, claim.Options{}), w.Store(t, claim.Options{LookEvery: time.Hour})
	for _, dry := range []bool{false, true} {
		first, err := holder.Claim(ctx, claim.Request{Agent: "a"})
		assert.NilError(t, err)
		assert.Equal(t, first.Issue.ID, only)
		released := make(chan error, 1)
		time.AfterFunc(300*time.Millisecond, func() { // the waiter looks and finds nothing
			_, err := holder.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: only})
			released <- err
		})
		res, err := waiter.Claim(ctx, claim.Request{Agent: "b", Wait: time.Minute, DryRun: dry})
		assert.NilError(t, <-released)
		assert.NilError(t, err)
		assert.Assert(t, res.Issue != nil && res.Issue.ID == only, "not woken by the release's commit: %+v", res)
		if dry {
			assert.Equal(t, w.Show(t, only), "open/")
			continue
		}
		assert.Equal(t, res.Issue.Assignee, "b")
		assert.Equal(t, w.Show(t, only), "in_progress/b")
		_, err = waiter.Release(ctx, claim.ReleaseRequest{Agent: "b", ID: only})
		assert.NilError(t, err)
	}
}

// stats' ready figure is what --explain counts claimable, and the blocked
// and held issues are where both say they are.
func confFigures(t *testing.T, w *Workspace) {
	ctx := context.Background()
	var ids []string
	for _, p := range []string{"0", "1", "2", "2", "3"} {
		ids = append(ids, w.Create(t, "issue "+p, "-p", p))
	}
	w.OK("dep", "add", ids[4], ids[3]) // ids[4] is blocked
	s := w.Store(t, claim.Options{})
	held, err := s.Claim(ctx, claim.Request{Agent: "a"})
	assert.NilError(t, err)
	assert.Equal(t, held.Issue.ID, ids[0])

	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.Open, 4)
	assert.Equal(t, st.Blocked, 1)
	assert.Equal(t, st.Ready, 3)
	assert.Equal(t, st.BdReady, 3)
	assert.Equal(t, st.ReadyTakeovers, 0)
	assert.DeepEqual(t, st.ReadyByPriority, map[string]int{"P0": 0, "P1": 1, "P2": 2, "P3": 0, "P4": 0})
	assert.Equal(t, len(st.InProgress), 1)
	assert.Equal(t, st.InProgress[0].Agent, "a")
	assert.Equal(t, st.InProgress[0].Issues[0].ID, ids[0])
	assert.Equal(t, st.InProgress[0].Issues[0].ClaimID, held.ClaimID)
	assert.Equal(t, st.LastHour.Claims, 1)

	ex, err := s.Explain(ctx, claim.Request{Agent: "b"})
	assert.NilError(t, err)
	assert.Equal(t, ex.Open, 4)
	assert.Equal(t, ex.Claimable, st.Ready)
	assert.Equal(t, ex.Excluded["blocked"], 1)
	assert.Equal(t, ex.Held, 0)
	ready := w.Ready(t, "priority")
	assert.Equal(t, len(ready), st.BdReady, "bd ready -u lists bd_ready issues")
	slices.Sort(ready)
	want := []string{ids[1], ids[2], ids[3]}
	slices.Sort(want)
	assert.DeepEqual(t, ready, want)
}

// CloseTwins is a chain (head blocks mid blocks tail) and an epic with
// one child, made twice: one set closed by bd-claim, its twin by bd close.
type CloseTwins struct{ Head, Mid, Tail, Epic, Child string }

func NewCloseTwins(t *testing.T, w *Workspace, tag string) CloseTwins {
	t.Helper()
	var c CloseTwins
	c.Head = w.Create(t, tag+" head", "-p", "1")
	c.Mid = w.Create(t, tag+" mid", "-p", "1")
	c.Tail = w.Create(t, tag+" tail", "-p", "1")
	w.OK("dep", "add", c.Mid, c.Head)
	w.OK("dep", "add", c.Tail, c.Mid)
	c.Epic = w.Create(t, tag+" epic", "-p", "2", "-t", "epic")
	c.Child = w.Create(t, tag+" child", "-p", "2", "--parent", c.Epic)
	return c
}

// TwinOf maps the ids of set a to those of set b.
func (a CloseTwins) TwinOf(b CloseTwins) map[string]string {
	return map[string]string{a.Head: b.Head, a.Mid: b.Mid, a.Tail: b.Tail, a.Epic: b.Epic, a.Child: b.Child}
}

// Close: bd-claim closes what its agent holds, and afterwards bd ready
// lists the twin of every issue it lists after bd's own close of the twin
// (the chain unblocked one link at a time, the epic as bd leaves it). A
// stale, foreign or unknown close is refused and changes nothing; a
// retried close is a no-op; a dry run writes nothing. On a bd whose close
// bd-claim does not write, the close is refused instead (confNoClose).
func confClose(t *testing.T, w *Workspace) {
	if w.noClose != nil {
		confNoClose(t, w)
		return
	}
	ctx := context.Background()
	ours, theirs := NewCloseTwins(t, w, "ours"), NewCloseTwins(t, w, "theirs")
	twin := ours.TwinOf(theirs)
	c := newClock(time.Now().UTC().Truncate(time.Second))
	s := w.Store(t, claim.Options{Now: c.now})
	parity := func(step string) {
		t.Helper()
		ready := w.Ready(t, "priority")
		in := map[string]bool{}
		for _, id := range ready {
			in[id] = true
		}
		for o, th := range twin {
			assert.Equal(t, in[o], in[th], "%s: %s ready %v, its twin %s ready %v (bd ready %v)", step, o, in[o], th, in[th], ready)
			assert.Equal(t, w.Show(t, o), strings.Replace(w.Show(t, th), "/bd", "/a", 1), "%s: %s as its twin %s", step, o, th)
		}
	}
	closeBoth := func(o string) claim.Closed {
		t.Helper()
		got, err := s.Claim(ctx, claim.Request{Agent: "a", ID: o})
		assert.NilError(t, err)
		dry, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: o, DryRun: true})
		assert.NilError(t, err)
		assert.Equal(t, w.Show(t, o), "in_progress/a", "a dry run writes nothing")
		assert.Equal(t, dry.ClaimID, got.ClaimID)
		done, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: o, ClaimID: got.ClaimID, Reason: "done"})
		assert.NilError(t, err)
		assert.Assert(t, done.ClaimID == got.ClaimID && !done.Already && done.Issue.Status == "closed", "%+v", done)
		_, err = s.Claim(ctx, claim.Request{Agent: "a", ID: twin[o]})
		assert.NilError(t, err)
		w.OK("--actor", "a", "close", twin[o], "--reason", "done")
		return done
	}
	parity("before any close")
	closeBoth(ours.Head)
	parity("after the head's close")
	closeBoth(ours.Mid)
	parity("after the middle's close")
	closeBoth(ours.Child)
	parity("after the child's close")

	again, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: ours.Head, Reason: "done"})
	assert.NilError(t, err)
	assert.Assert(t, again.Already && again.ClaimID == 0 && again.Issue.Status == "closed", "a retried close: %+v", again)
	_, err = s.CloseIssue(ctx, claim.CloseRequest{Agent: "b", ID: ours.Head})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "closed by a, not b's: %v", err)

	// The race: a's lease ends, b takes the issue over; a's close is
	// refused and b's claim is untouched.
	a, err := s.Claim(ctx, claim.Request{Agent: "a", ID: ours.Tail, Lease: time.Minute})
	assert.NilError(t, err)
	c.advance(2 * time.Minute)
	b, err := s.Claim(ctx, claim.Request{Agent: "b", ID: ours.Tail, Lease: time.Minute})
	assert.NilError(t, err)
	assert.Assert(t, b.TookOver != nil && b.TookOver.ClaimID == a.ClaimID, "%+v", b.TookOver)
	for _, req := range []claim.CloseRequest{
		{Agent: "a", ID: ours.Tail, ClaimID: a.ClaimID},
		{Agent: "a", ID: ours.Tail},
		{Agent: "a", ID: ours.Tail, DryRun: true},
	} {
		_, err = s.CloseIssue(ctx, req)
		assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "%+v: %v", req, err)
		assert.ErrorContains(t, err, "held by b")
	}
	_, err = s.CloseIssue(ctx, claim.CloseRequest{Agent: "b", ID: ours.Tail, ClaimID: a.ClaimID})
	assert.Equal(t, claim.ErrorCode(err), claim.EAlready, "a stale claim id: %v", err)
	assert.Equal(t, w.Show(t, ours.Tail), "in_progress/b")
	beat, err := s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "b", ID: ours.Tail, ClaimID: b.ClaimID})
	assert.NilError(t, err)
	assert.Equal(t, beat.ClaimID, b.ClaimID, "b's claim is untouched")
	_, err = s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: ours.Epic})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "not held: %v", err)
	_, err = s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: "bt-nosuch"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound, "%v", err)
	_, err = s.CloseIssue(ctx, claim.CloseRequest{Agent: "a", ID: " "})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%v", err)
	_, err = s.CloseIssue(ctx, claim.CloseRequest{Agent: "b", ID: ours.Tail, Reason: strings.Repeat("x", claim.MaxReasonLen+1)})
	assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%v", err)
	assert.Equal(t, w.Show(t, ours.Tail), "in_progress/b")
	closed, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "b", ID: ours.Tail, ClaimID: b.ClaimID})
	assert.NilError(t, err)
	assert.Equal(t, closed.ClaimID, b.ClaimID)
	assert.Equal(t, w.Show(t, ours.Tail), "closed/b")
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.LastHour.Closes, 7, "three closes each by bd-claim and bd, then b's")
}

// confNoClose is the close check on a bd whose close bd-claim does not
// write: the holder's close, under its claim id or none, and its dry run
// are refused (SCHEMA_INCOMPATIBLE, naming bd close of the issue) and
// change no row. The fence comes first, as on every bd: a foreign, stale,
// unknown or invalid close is refused as such. What the refusal says to
// do works: once released, bd close closes the issue and bd ready lists
// the one it blocked.
func confNoClose(t *testing.T, w *Workspace) {
	ctx := context.Background()
	c := NewCloseTwins(t, w, "ours")
	s := w.Store(t, claim.Options{})
	got := MustClaim(t, s, claim.Request{Agent: "a", ID: c.Head, Lease: time.Minute})
	rows := w.noClose(t, w.BdRunner)
	for _, req := range []claim.CloseRequest{
		{Agent: "a", ID: c.Head, ClaimID: got.ClaimID, Reason: "done"},
		{Agent: "a", ID: c.Head},
		{Agent: "a", ID: c.Head, DryRun: true},
	} {
		_, err := s.CloseIssue(ctx, req)
		closeRefused(t, err, c.Head)
	}
	for _, tc := range []struct {
		req  claim.CloseRequest
		code claim.Code
	}{
		{claim.CloseRequest{Agent: "b", ID: c.Head}, claim.EAlready},
		{claim.CloseRequest{Agent: "a", ID: c.Head, ClaimID: got.ClaimID + 1}, claim.EAlready},
		{claim.CloseRequest{Agent: "a", ID: c.Epic}, claim.ENotClaimable},
		{claim.CloseRequest{Agent: "a", ID: "bt-nosuch"}, claim.ENotFound},
		{claim.CloseRequest{Agent: "a", ID: " "}, claim.EInvalid},
	} {
		_, err := s.CloseIssue(ctx, tc.req)
		assert.Equal(t, claim.ErrorCode(err), tc.code, "%+v: %v", tc.req, err)
	}
	assert.DeepEqual(t, w.noClose(t, w.BdRunner), rows)
	assert.Equal(t, w.Show(t, c.Head), "in_progress/a")
	assert.Assert(t, !slices.Contains(w.Ready(t, "priority"), c.Mid), "blocked by %s", c.Head)

	_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: c.Head, ClaimID: got.ClaimID})
	assert.NilError(t, err)
	w.OK("close", c.Head, "--reason", "done")
	assert.Equal(t, w.Show(t, c.Head), "closed/")
	assert.Assert(t, slices.Contains(w.Ready(t, "priority"), c.Mid), "unblocked by bd close %s", c.Head)
	st, err := s.Stats(ctx)
	assert.NilError(t, err)
	assert.Equal(t, st.LastHour.Closes, 1, "bd's close only")
}

// closeRefused asserts that err is the refusal of a close that bd-claim
// does not write, naming bd close of the whole id.
func closeRefused(t *testing.T, err error, id string) {
	t.Helper()
	assert.Equal(t, claim.ErrorCode(err), claim.ESchema, "%v", err)
	assert.ErrorContains(t, err, "close it with `bd close "+id+"`")
}

// clock is a test clock the checks move.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.ns.Store(t.UnixNano()); return c }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// MustClaim claims req on s, which must claim an issue.
func MustClaim(t *testing.T, s *claim.Store, req claim.Request) claim.Result {
	t.Helper()
	res, err := s.Claim(context.Background(), req)
	assert.NilError(t, err)
	assert.Assert(t, res.Issue != nil, "nothing claimed: %s", res.Reason)
	return res
}
