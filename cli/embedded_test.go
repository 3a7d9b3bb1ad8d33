//go:build embedded

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/dolt"
)

// embeddedIssues inserts n open issues PREFIX-r1..rN into an embedded
// workspace's database directly, with bd's column defaults, as doltIssues
// does on a server: enough for races, which test exclusivity.
func embeddedIssues(t *testing.T, w *claimtest.BdWorkspace, prefix string, n int) {
	t.Helper()
	ws, err := claim.FindWorkspace(claim.Locate{Start: w.Dir, Getenv: w.Getenv})
	assert.NilError(t, err)
	ctx := context.Background()
	conn, end, err := dolt.OpenEmbedded(ctx, ws.Embedded.Dir, ws.Embedded.Database, 10*time.Second, nil)
	assert.NilError(t, err)
	defer end()
	for i := 1; i <= n; i++ {
		_, err := conn.ExecContext(ctx, "INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, row_lock) VALUES (?, ?, '', '', '', '', ?, 'task', ?)",
			fmt.Sprintf("%s-r%d", prefix, i), "race "+strconv.Itoa(i), i%4, i)
		assert.NilError(t, err)
	}
}

// Embedded Dolt: 16 bd-claim processes and 8 `bd ready --claim` processes
// drain one workspace of 40 issues: every issue is claimed once, by its
// assignee, and no more of bd's processes fail than in a round of bd alone
// (8 bd processes on 40 issues, no bd-claim), within a quarter (noise).
func TestEmbeddedRaceWithBd(t *testing.T) {
	_, aloneFailed := embeddedRace(t, "solo", 8, 0)
	claims, failed := embeddedRace(t, "mix", 8, 16)
	assert.Equal(t, len(claims), 40)
	t.Logf("bd ready --claim processes that failed: %d of 8 beside 16 bd-claim processes, %d of 8 alone", failed, aloneFailed)
	assert.Assert(t, float64(failed)/8 <= float64(aloneFailed)/8+0.25, "beside bd-claim %d of 8 bd processes failed; alone, %d of 8", failed, aloneFailed)
}

// embeddedRace races bds `bd ready --claim` processes against claimers
// bd-claim loops on a new embedded workspace of 40 open issues and checks
// that no issue is held twice and that each holder is the assignee. It
// returns the holders by issue and how many bd processes failed.
func embeddedRace(t *testing.T, prefix string, bds, claimers int) (map[string][]string, int) {
	w := claimtest.EmbeddedWorkspace(t, prefix)
	embeddedIssues(t, w, prefix, 40)
	var mu sync.Mutex
	claims := map[string][]string{}
	failed := 0
	var wg sync.WaitGroup
	for p := range claimers {
		wg.Go(func() {
			agent := fmt.Sprint("claim-", p)
			for {
				r := run(t, w.Dir, w.Env, "--agent", agent, "--quiet")
				if r.ExitCode != 0 {
					assert.Check(t, r.ExitCode == 3, r.Combined())
					return
				}
				var out struct{ Issue struct{ ID string } }
				assert.Check(t, json.Unmarshal([]byte(r.Stdout()), &out))
				mu.Lock()
				claims[out.Issue.ID] = append(claims[out.Issue.ID], agent)
				mu.Unlock()
			}
		})
	}
	for p := range bds {
		wg.Go(func() {
			agent := fmt.Sprint("bd-", p)
			r := w.As(agent).Bd("ready", "--claim", "--json")
			var out []struct{ ID string }
			if r.ExitCode != 0 {
				t.Logf("bd ready --claim failed: %s", r.Combined())
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			assert.Check(t, json.Unmarshal([]byte(r.Stdout()), &out), r.Stdout())
			mu.Lock()
			for _, i := range out {
				claims[i.ID] = append(claims[i.ID], agent)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for id, agents := range claims {
		assert.Equal(t, len(agents), 1, "%s claimed by %v", id, agents)
		var shown []struct{ Assignee string }
		w.JSON(&shown, "show", id)
		assert.Equal(t, shown[0].Assignee, agents[0], id)
	}
	return claims, failed
}
