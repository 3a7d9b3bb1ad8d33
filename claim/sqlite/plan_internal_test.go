package sqlite

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

var (
	// The issues table, found through an index (its primary key included).
	planSearchIssues = regexp.MustCompile(`^SEARCH (i|issues) USING (COVERING )?(INDEX|PRIMARY KEY|INTEGER PRIMARY KEY)\b`)
	// Any full pass over a table: "SCAN i", and also "SCAN i USING INDEX x",
	// which walks the whole index. Only SQLite's constant row is harmless.
	// A SCAN of a co-routine reads rows a subquery yields one at a time
	// (an issue's failure count; the sorted candidates), not a table.
	planScan = regexp.MustCompile(`^SCAN (\S+)`)
)

// planDetails returns the detail column of EXPLAIN QUERY PLAN, one per row.
func planDetails(t *testing.T, path, query string, args []any) []string {
	t.Helper()
	conn := claimtest.Open(t, path)
	rows, err := conn.Query("EXPLAIN QUERY PLAN "+query, args...)
	assert.NilError(t, err, query)
	defer rows.Close()
	var details []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		assert.NilError(t, rows.Scan(&id, &parent, &unused, &detail))
		details = append(details, detail)
	}
	assert.NilError(t, rows.Err())
	return details
}

// The query that picks the next issue finds issues through an index and
// never reads a whole table, for the default filters and with --label,
// on bd-made workspaces of every supported schema and on a generated one,
// with and without the planner statistics of ANALYZE.
func TestClaimQueryPlanUsesIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	workspaces := map[string]func(t *testing.T) string{}
	for _, v := range claimtest.Versions {
		workspaces["bd-v"+v] = func(t *testing.T) string { return claimtest.DBPath(claimtest.Fixture(t, v)) }
	}
	demo := func(analyze bool) func(t *testing.T) string {
		return func(t *testing.T) string {
			d, err := CreateDemo(ctx, t.TempDir(), 2000, 1)
			assert.NilError(t, err)
			if analyze {
				_, err := claimtest.Open(t, d.Path).Exec("ANALYZE")
				assert.NilError(t, err)
			}
			return d.Path
		}
	}
	workspaces["demo-2000"] = demo(false)
	workspaces["demo-2000-analyzed"] = demo(true)

	filters := map[string]claim.Filters{
		"default":       {},
		"one label":     {IncludeLabels: []string{"backend"}},
		"three labels":  {IncludeLabels: []string{"backend", "infra", "urgent"}},
		"exclude label": {ExcludeLabels: []string{"docs"}},
	}
	for name, build := range workspaces {
		t.Run(name, func(t *testing.T) {
			path := build(t)
			s, err := open(ctx, claim.Workspace{DBPath: path}, claim.Options{})
			assert.NilError(t, err)
			defer s.Close()
			for fname, f := range filters {
				t.Run(fname, func(t *testing.T) {
					assert.NilError(t, f.Validate())
					spec := claim.ReadySpec(engineOf(s).flavor.Flavor, claim.DefaultPolicy, "plan-agent", f, time.Now())
					query, args := nextK(walk{Spec: spec, byAge: engineOf(s).flavor.byAge}, 1).MustSql() // what a claim-next runs
					plan := planDetails(t, path, query, args)
					t.Logf("query: %s\nplan:\n  %s", query, strings.Join(plan, "\n  "))
					searched := false
					coroutines := map[string]bool{"CONSTANT": true}
					for _, d := range plan {
						searched = searched || planSearchIssues.MatchString(d)
						if name, ok := strings.CutPrefix(d, "CO-ROUTINE "); ok {
							coroutines[name] = true
						}
						// A materialized CTE is one row (the pinned
						// priority); the age window's bound reads at most
						// walkSize entries of the created_at index.
						if name, ok := strings.CutPrefix(d, "MATERIALIZE "); ok {
							coroutines[name] = true
						}
						if d == "SCAN w USING COVERING INDEX idx_issues_created_at" {
							continue
						}
						if m := planScan.FindStringSubmatch(d); m != nil && !coroutines[m[1]] {
							t.Errorf("the claim query reads %s in full (%q)", m[1], d)
						}
					}
					assert.Assert(t, searched, "issues is not searched through an index:\n  %s", strings.Join(plan, "\n  "))
				})
			}
		})
	}
}
