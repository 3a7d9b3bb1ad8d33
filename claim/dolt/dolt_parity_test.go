package dolt_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// readyIDs is `bd ready -n 0 --json ARGS` as a list of ids, in bd's order.
func readyIDs(t *testing.T, w *claimtest.DoltWorkspace, args ...string) []string {
	t.Helper()
	var list []struct{ ID string }
	w.JSON(&list, append([]string{"ready", "-n", "0"}, args...)...)
	ids := make([]string, len(list))
	for i, iss := range list {
		ids[i] = iss.ID
	}
	return ids
}

// Readiness on a Dolt workspace is bd ready v1.3.0's, on a workspace the
// real bd builds at random (the seed is logged; BD_CLAIM_PARITY_SEED
// replays one): for each sort, the issues bd-claim's claim-next takes one
// after the other are exactly `bd ready -u`'s list (what `bd ready --claim`
// scans), in its order; every issue and wisp bd ready lists is accepted by
// a dry run of --id (or refused as ALREADY_CLAIMED when bd ready lists it
// assigned to someone else), every other one refused.
//
// The workspace has every kind of row readiness depends on: priorities 0-4,
// the types bd ready never lists (gate, message, molecule) and those it
// does (epic, bug...), labels, blocks edges on open and closed blockers,
// children of a blocked parent and of a deferred parent, deferrals in the
// future and in the past (bd create --defer with a past date leaves the
// issue open; bd defer --until with a past date leaves it deferred, and
// the bd ready of bd's CLI opens its store read-only, so it never wakes
// it: the test checks that it stays deferred), issues assigned to someone
// else, in_progress (by hand, and claimed by bd), closed, pinned (the
// pinned column: bd v1.3.0's CLI has no flag for it, so the test sets it
// with SQL), ephemeral wisps and --no-history wisps.
func TestDoltReadyParity(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "par")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BD_CLAIM_PARITY_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		assert.NilError(t, err)
	}
	t.Logf("seed %d (BD_CLAIM_PARITY_SEED=%d replays this workspace)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(list []string) string { return list[rnd.IntN(len(list))] }
	creator := w.As("creator")

	// Every kind at least once, the rest at random, in a random order.
	kinds := []string{"blocked", "blocked", "child", "deferred-parent", "defer-future", "defer-past", "defer-expired",
		"assigned", "in-progress", "claimed", "closed", "closed", "pinned", "ephemeral", "no-history", "no-history"}
	filler := []string{"plain", "plain", "plain", "plain", "blocked", "child", "closed", "no-history", "assigned", "defer-future", "ephemeral"}
	for len(kinds) < 46 {
		kinds = append(kinds, pick(filler))
	}
	rnd.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	types := []string{"task", "task", "task", "bug", "feature", "chore", "epic", "gate", "message", "molecule"}
	labels := []string{"backend", "frontend", "ops"}

	var all, issues []string // every row; the rows of the issues table (blockers and parents)
	var closeLater, claimLater []string
	conn := w.DB(t)
	for i, kind := range kinds {
		flags := []string{"create", "p" + strconv.Itoa(i) + " " + kind, "-p", strconv.Itoa(rnd.IntN(5)), "-t", pick(types)}
		if rnd.IntN(3) == 0 {
			flags = append(flags, "-l", pick(labels))
		}
		wisp := false
		switch kind {
		case "blocked":
			if len(issues) > 0 {
				flags = append(flags, "--deps", "blocked-by:"+pick(issues))
			}
		case "child":
			if len(issues) > 0 {
				flags = append(flags, "--parent", pick(issues))
			}
		case "deferred-parent":
			flags = append(flags, "--defer", "+3d")
		case "defer-future":
			flags = append(flags, "--defer", "+"+strconv.Itoa(1+rnd.IntN(48))+"h")
		case "defer-past":
			flags = append(flags, "--defer", "2020-01-0"+strconv.Itoa(1+rnd.IntN(9)))
		case "defer-expired":
			flags = append(flags, "-t", "task") // a later -t wins: not message, which bd makes an ephemeral wisp
		case "assigned":
			flags = append(flags, "-a", "someone-else")
		case "in-progress":
			flags = append(flags, "-s", "in_progress")
		case "ephemeral":
			flags, wisp = append(flags, "--ephemeral"), true
		case "no-history":
			flags, wisp = append(flags, "--no-history"), true
		}
		var out struct{ ID string }
		creator.JSON(&out, flags...)
		all = append(all, out.ID)
		if !wisp {
			issues = append(issues, out.ID)
		}
		switch kind {
		case "deferred-parent":
			for range 2 {
				creator.JSON(&out, "create", "child of a deferred parent", "--parent", all[len(all)-1], "-p", strconv.Itoa(rnd.IntN(5)))
				all = append(all, out.ID)
				issues = append(issues, out.ID)
			}
		case "defer-expired":
			creator.OK("defer", out.ID, "--until", "2020-02-02") // bd warns, and defers
		case "closed":
			closeLater = append(closeLater, out.ID) // after its dependents exist
		case "claimed":
			claimLater = append(claimLater, out.ID)
		case "pinned":
			_, err := conn.Exec("UPDATE issues SET pinned = 1 WHERE id = ?", out.ID)
			assert.NilError(t, err)
		}
	}
	for _, id := range closeLater {
		creator.OK("close", id, "--force") // a parent with open children too
	}
	for _, id := range claimLater {
		w.As("someone-else").OK("update", id, "--claim")
	}
	expiredDeferred := claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE status = 'deferred' AND defer_until <= UTC_TIMESTAMP()")
	assert.Assert(t, expiredDeferred > 0)

	s := doltStore(t, w, claim.Options{})
	ctx := context.Background()
	const agent = "parity-agent"
	listed := readyIDs(t, w)
	unassigned := readyIDs(t, w, "-u")
	assert.Check(t, is.Equal(claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE status = 'deferred' AND defer_until <= UTC_TIMESTAMP()"), expiredDeferred),
		"bd ready woke an expired deferral")
	assert.Assert(t, len(unassigned) >= 5, "too few ready issues to compare: %v", unassigned)
	t.Logf("%d rows, bd ready lists %d, unassigned %d", len(all), len(listed), len(unassigned))

	// --id --dry-run of every row.
	for _, id := range all {
		res, err := s.Claim(ctx, claim.Request{Agent: agent, ID: id, DryRun: true})
		switch {
		case slices.Contains(unassigned, id):
			if assert.Check(t, err, "bd ready lists %s", id) {
				assert.Check(t, is.Equal(res.Issue.ID, id))
			}
		case slices.Contains(listed, id):
			assert.Check(t, is.Equal(claim.ErrorCode(err), claim.EAlready), "bd ready lists %s, assigned to someone else: %v", id, err)
		default:
			code := claim.ErrorCode(err)
			assert.Check(t, code == claim.ENotClaimable || code == claim.EAlready, "bd ready does not list %s: %v (%v)", id, code, res.Issue)
		}
	}
	e, err := s.Explain(ctx, claim.Request{Agent: agent})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(e.Claimable, len(unassigned)), "%+v", e)

	// Claim-next, one issue after the other, in each of bd's sort orders:
	// the dry run's issue is claimed by --id, then all are released.
	for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest, claim.SortHybrid} {
		want := readyIDs(t, w, "-u", "-s", string(sort))
		assert.Check(t, is.DeepEqual(claimOrder(t, s, agent, claim.Filters{Sort: sort}, len(all)), want), "sort %s", sort)
		assert.Check(t, is.DeepEqual(readyIDs(t, w, "-u", "-s", string(sort)), want), "the releases gave back bd ready's list")
	}
}

// claimOrder is the order in which agent's claim-next with filters takes
// the issues, up to most: the dry run's issue is claimed by --id, one
// after the other until none is left; then all are released.
func claimOrder(t *testing.T, s *claim.Store, agent string, f claim.Filters, most int) []string {
	t.Helper()
	ctx := context.Background()
	got := []string{}
	for len(got) <= most {
		res, err := s.Claim(ctx, claim.Request{Agent: agent, DryRun: true, Filters: f})
		assert.NilError(t, err)
		if res.Issue == nil {
			break
		}
		got = append(got, res.Issue.ID)
		conformance.MustClaim(t, s, claim.Request{Agent: agent, ID: res.Issue.ID})
	}
	for _, id := range got {
		_, err := s.Release(ctx, claim.ReleaseRequest{Agent: agent, ID: id})
		assert.NilError(t, err)
	}
	return got
}

// --parent on a Dolt workspace is bd ready --parent v1.3.0's: the
// descendants through the parent-child edges of issues and of wisps (an
// issue under a --no-history wisp under the epic included), and the
// epic's dotted children (E.N) that have no parent edge of their own: not
// a dotted child whose edge leads elsewhere (bd looks an issue's edge up
// in dependencies, a wisp's in both tables), nor a dotted grandchild. The
// real bd builds the tree; its edges are then cut or moved by hand, as an
// import or bd dep remove would leave them.
func TestDoltParentParity(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "pp")
	creator := w.As("creator")
	create := func(args ...string) string {
		var out struct{ ID string }
		creator.JSON(&out, append([]string{"create"}, args...)...)
		return out.ID
	}
	epic := create("epic", "-t", "epic", "-p", "1")
	child := create("child", "--parent", epic, "-p", "2")
	grandchild := create("grandchild", "--parent", child, "-p", "0")
	wisp := create("wisp child", "--no-history", "--parent", epic, "-p", "3")
	underWisp := create("under the wisp", "--parent", wisp, "-p", "1")
	wisp2 := create("second wisp child", "--no-history", "--parent", epic, "-p", "4")
	other := create("other epic", "-t", "epic")
	otherChild := create("child of the other epic", "--parent", other)
	create("unrelated")
	s := doltStore(t, w, claim.Options{})
	const agent = "parent-agent"
	check := func(root string, want ...string) {
		t.Helper()
		listed := readyIDs(t, w, "-u", "--parent", root)
		assert.Check(t, is.DeepEqual(listed, append([]string{}, want...)), "bd ready --parent %s", root)
		assert.Check(t, is.DeepEqual(claimOrder(t, s, agent, claim.Filters{Parent: root}, 10), listed), "--parent %s", root)
	}
	check(epic, grandchild, underWisp, child, wisp, wisp2)
	check(wisp, underWisp)
	check(grandchild)

	conn := w.DB(t)
	for _, q := range []string{
		"DELETE FROM dependencies WHERE issue_id = '" + child + "'",
		"DELETE FROM wisp_dependencies WHERE issue_id = '" + wisp2 + "'",
		"UPDATE wisp_dependencies SET depends_on_issue_id = '" + other + "' WHERE issue_id = '" + wisp + "'",
	} {
		_, err := conn.Exec(q)
		assert.NilError(t, err, q)
	}
	check(epic, child, wisp2)
	check(child, grandchild)
	check(other, underWisp, otherChild, wisp) // the wisp moved, with the issue under it
}
