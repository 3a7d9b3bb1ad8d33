package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
)

// walks says whether a claim with sort on s's workspace may walk the age
// index (tx.crowded), and checks that its statement says the same.
func walks(t *testing.T, s *claim.Store, sort claim.Sort) bool {
	t.Helper()
	w, err := engineOf(s).tx(context.Background(), nil).crowded(readySpec(s, "walker", claim.Filters{Sort: sort}))
	assert.NilError(t, err)
	query, _ := nextK(w, 1).MustSql()
	assert.Equal(t, strings.Contains(query, "walked"), w.byAge, query)
	return w.byAge
}

// A workspace with fewer open issues than crowdSize has no crowd to walk:
// its claims prepare and run the plain sort, whichever the order.
func TestNarrowSortsFewOpenIssues(t *testing.T) {
	s := openFixture(t, "0.49.6")
	assert.Assert(t, engineOf(s).flavor.byAge)
	for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest} {
		assert.Assert(t, !walks(t, s, sort), "sort %s", sort)
	}
}

// With crowdSize open issues or more but fewer of the most urgent
// priority, the age order may walk and the priority order sorts.
func TestNarrowCrowdOfTopPriority(t *testing.T) {
	ctx := context.Background()
	d, err := CreateDemo(ctx, t.TempDir(), 3000, 1)
	assert.NilError(t, err)
	s, err := open(ctx, claim.Workspace{DBPath: d.Path}, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()
	conn := claimtest.Open(t, d.Path)
	assert.Assert(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE status = 'open'") >= crowdSize)
	assert.Assert(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE status = 'open' AND priority = 0") < crowdSize)
	assert.Assert(t, walks(t, s, claim.SortOldest))
	assert.Assert(t, !walks(t, s, claim.SortPriority))
}

// The age walk (nextK) hands out the claim order that sorting every
// candidate gives, whether it finds its issues among the walkSize oldest or
// falls back to the sort: a crowd of one priority (every issue P2), the
// same with the oldest issues closed (the walk finds nothing and the
// candidates are sorted), and the oldest order; with --label, few issues
// labelled (sorted alone) or every one (the walk or the sort, as without).
func TestNextWalkKeepsClaimOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 8000
	d, err := CreateDemo(ctx, t.TempDir(), n, 7)
	assert.NilError(t, err)
	conn := claimtest.Open(t, d.Path)
	_, err = conn.Exec("UPDATE issues SET priority = 2")
	assert.NilError(t, err)
	// One instant for the specification and the claims: the hybrid order
	// puts the issues of the last 48 hours first, and a demo workspace has
	// one issue a minute, so its head moves every minute of the clock.
	now := time.Now()
	s, err := open(ctx, claim.Workspace{DBPath: d.Path}, claim.Options{Now: func() time.Time { return now }})
	assert.NilError(t, err)
	defer s.Close()
	assert.Assert(t, engineOf(s).flavor.byAge)
	assert.Assert(t, walks(t, s, claim.SortPriority), "a crowd of open issues may be walked")

	// ids runs b and returns the ids it selects, in order.
	ids := func(b sq.SelectBuilder) []string {
		var out []string
		var id string
		err := engine.Each(ctx, engineOf(s).conn, b, []any{&id}, func() { out = append(out, id) })
		assert.NilError(t, err)
		return out
	}
	// rank is the place of issue id in the age order, from 1.
	rank := func(id string) int {
		return claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE created_at <= (SELECT created_at FROM issues WHERE id = ?)", id)
	}
	check := func(t *testing.T, sort claim.Sort, labels ...string) []string {
		f := claim.Filters{Sort: sort, IncludeLabels: labels}
		assert.NilError(t, f.Validate())
		spec := claim.ReadySpec(engineOf(s).flavor.Flavor, claim.DefaultPolicy, "walker", f, now)
		byAge := engineOf(s).flavor.byAge
		want := ids(spec.Candidates().Limit(headSize))
		assert.Assert(t, len(want) > 1)
		assert.DeepEqual(t, ids(nextK(walk{Spec: spec.Without(engine.Rule.Costly), byAge: byAge}, headSize)), want)
		assert.DeepEqual(t, ids(nextK(walk{Spec: spec, byAge: byAge}, 1)), want[:1])
		res, err := s.Claim(ctx, claim.Request{Agent: "walker", DryRun: true, Filters: f})
		assert.NilError(t, err)
		assert.Equal(t, res.Issue.ID, want[0])
		return want
	}
	for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest} {
		t.Run("crowd/"+string(sort), func(t *testing.T) {
			want := check(t, sort)
			assert.Assert(t, rank(want[len(want)-1]) < walkSize, "the walk finds them among the oldest")
		})
	}
	// --label: few issues with every label (the labelled ones sorted
	// alone), and a label on every issue (the walk, or the sort).
	_, err = conn.Exec(`INSERT INTO labels (issue_id, label) SELECT id, 'every' FROM issues;
		INSERT INTO labels (issue_id, label) SELECT id, 'some' FROM issues WHERE rowid % 97 = 0`)
	assert.NilError(t, err)
	assert.Assert(t, claimtest.Count(t, conn, "SELECT count(*) FROM labels WHERE label = 'some'") < fewLabelled)
	for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest, claim.SortHybrid} {
		t.Run("few labelled/"+string(sort), func(t *testing.T) { check(t, sort, "some", "every") })
		t.Run("every issue labelled/"+string(sort), func(t *testing.T) { check(t, sort, "every") })
	}
	// Every issue among the walkSize oldest (and a few more) closed: the
	// walk finds none, and the claim sorts what is left.
	_, err = conn.Exec(`UPDATE issues SET status = 'closed', closed_at = created_at
		WHERE id IN (SELECT id FROM issues ORDER BY created_at, id LIMIT ?)`, walkSize+400)
	assert.NilError(t, err)
	for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest} {
		t.Run("old issues closed/"+string(sort), func(t *testing.T) {
			want := check(t, sort)
			assert.Assert(t, rank(want[0]) > walkSize, "the walk finds nothing")
		})
	}
}
