package claim_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
)

// versions are the bd releases whose real workspaces are in testdata/fixtures.
var versions = []string{"0.27.2", "0.47.1", "0.49.6"}

func fixtureDir(version string) string {
	return filepath.Join("..", "testdata", "fixtures", "bd-v"+version)
}

// fixture copies a bd-made workspace into a temp dir (SQLite must be able to
// create -wal/-shm beside it) and returns the workspace root.
func fixture(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	assert.NilError(t, os.Mkdir(filepath.Join(dir, ".beads"), 0o755))
	for _, f := range []string{"beads.db", "metadata.json", "config.yaml"} {
		copyFile(t, filepath.Join(fixtureDir(version), f), filepath.Join(dir, ".beads", f))
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	assert.NilError(t, err)
	defer src.Close()
	dst, err := os.Create(to)
	assert.NilError(t, err)
	_, err = io.Copy(dst, src)
	assert.NilError(t, err)
	assert.NilError(t, dst.Close())
}

func openStore(t *testing.T, root string, o claim.Options) *claim.Store {
	t.Helper()
	ws, err := claim.FindWorkspace(claim.Locate{Start: root, Getenv: noEnv})
	assert.NilError(t, err)
	s, err := claim.Open(context.Background(), ws, o)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func noEnv(string) string { return "" }

type readyIssue struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Assignee string `json:"assignee"`
}

// expectedClaims is bd's own `bd ready` order for a sort, keeping the issues a
// claim may take: open and unassigned (bd ready also lists pre-assigned and,
// before v0.49.4, in_progress issues).
func expectedClaims(t *testing.T, version string, sort claim.Sort) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(version), "expected-ready-"+string(sort)+".json"))
	assert.NilError(t, err)
	var ready []readyIssue
	assert.NilError(t, json.Unmarshal(b, &ready))
	var ids []string
	for _, r := range ready {
		if r.Status == "open" && r.Assignee == "" {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// readyTime is when bd ready ran for the fixture: "now" for the hybrid order.
func readyTime(t *testing.T, version string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(version), "build-info.txt"))
	assert.NilError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ready_outputs_taken_at_utc: "); ok {
			at, err := time.Parse(time.RFC3339, v)
			assert.NilError(t, err)
			return at
		}
	}
	t.Fatal("no ready_outputs_taken_at_utc in build-info.txt")
	return time.Time{}
}

// Draining a real bd workspace claims exactly bd ready's issues, in bd
// ready's order, for every fixture and sort policy.
func TestClaimOrderMatchesBdReady(t *testing.T) {
	for _, v := range versions {
		for _, sort := range []claim.Sort{claim.SortPriority, claim.SortOldest, claim.SortHybrid} {
			t.Run(v+"/"+string(sort), func(t *testing.T) {
				at := readyTime(t, v)
				s := openStore(t, fixture(t, v), claim.Options{Now: func() time.Time { return at }})
				var got []string
				for {
					iss, err := s.Claim(context.Background(), claim.Request{Agent: "order-check", Filters: claim.Filters{Sort: sort}})
					assert.NilError(t, err)
					if iss == nil {
						break
					}
					assert.Equal(t, iss.Status, "in_progress")
					got = append(got, iss.ID)
				}
				want := expectedClaims(t, v, sort)
				assert.Assert(t, len(want) > 20)
				assert.DeepEqual(t, got, want)
			})
		}
	}
}
