package claimtest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// Every fixture was made by the bd that `make bd` builds for its version:
// that bd says the version the fixture recorded, its bd init makes the
// fixture's schema, and on a copy of the fixture its bd ready --json
// prints the recorded expected-ready-*.json byte for byte. bd's default,
// hybrid order depends on the clock: more than 48 hours after the fixture
// was recorded (as every fixture now is) it is --sort oldest's, and the
// recorded hybrid list holds the same issues in another order.
func TestFixturesAsTheBuiltBd(t *testing.T) {
	for _, v := range claimtest.Versions {
		t.Run("v"+v, func(t *testing.T) {
			t.Parallel()
			w := claimtest.FixtureWorkspace(t, v)
			version, err := os.ReadFile(filepath.Join(claimtest.FixtureDir(v), "version.txt"))
			assert.NilError(t, err)
			assert.Equal(t, w.OK("version").Stdout(), string(version))
			fresh := claimtest.SQLiteWorkspace(t, "v"+v)
			assert.DeepEqual(t, schemaOf(t, claimtest.DBPath(fresh.Dir)), schemaOf(t, claimtest.DBPath(claimtest.Fixture(t, v))))
			ready := func(flags ...string) string {
				return w.OK(append([]string{"ready", "--json", "-n", "1000"}, flags...)...).Stdout()
			}
			recorded := func(sort string) string {
				b, err := os.ReadFile(filepath.Join(claimtest.FixtureDir(v), "expected-ready-"+sort+".json"))
				assert.NilError(t, err)
				return string(b)
			}
			for _, sort := range []string{"priority", "oldest"} {
				assert.Equal(t, ready("--sort", sort), recorded(sort), "bd ready --sort %s", sort)
			}
			taken := claimtest.ReadyTime(t, v)
			assert.Assert(t, time.Since(taken) > 48*time.Hour, "fixture recorded at %s", taken)
			assert.Equal(t, ready(), recorded("oldest"), "bd ready, every issue older than 48 hours")
			assert.DeepEqual(t, byID(t, recorded("oldest")), byID(t, recorded("hybrid")))
		})
	}
}

// byID is a bd ready --json list as its JSON objects, sorted by id.
func byID(t *testing.T, list string) []map[string]any {
	t.Helper()
	var issues []map[string]any
	assert.NilError(t, json.Unmarshal([]byte(list), &issues))
	slices.SortFunc(issues, func(a, b map[string]any) int {
		return strings.Compare(a["id"].(string), b["id"].(string))
	})
	return issues
}

// schemaOf lists a database's tables, indexes, views and triggers, with
// their SQL, sorted.
func schemaOf(t *testing.T, path string) []string {
	t.Helper()
	return claimtest.Strings(t, claimtest.Open(t, path), "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY 1")
}
