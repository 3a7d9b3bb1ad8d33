package dolt_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofrs/flock"
	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// A proxied-server workspace whose proxy is not running is refused,
// DB_UNAVAILABLE (exit 4), with the fix in the message (bd-claim never
// starts the proxy); so is one whose proxy.pid is stale and names the
// ports another workspace's proxy now listens on (ports are reused): that
// proxy does not prove to be this workspace's, and bd-claim writes nothing
// there. Once a bd command has started the workspace's proxy again (bd
// quarantines the stale record), bd-claim claims, under bd's gates.
func TestProxiedRefusals(t *testing.T) {
	a, b := claimtest.ProxiedWorkspace(t, "ra"), claimtest.ProxiedWorkspace(t, "rb")
	var iss, other struct{ ID string }
	a.JSON(&iss, "create", "one", "-p", "1")
	b.JSON(&other, "create", "two", "-p", "1")
	bconn := b.DB(t)
	before := claimtest.DoltRows(t, bconn)
	ctx := context.Background()
	ws, err := workspace.Find(workspace.Locate{Start: a.Dir, Getenv: a.Getenv})
	assert.NilError(t, err)
	assert.DeepEqual(t, *ws.Proxied, claim.ProxiedDolt{Root: a.Root, Database: "ra", ProjectID: ws.Proxied.ProjectID})
	refused := func(reason string) {
		t.Helper()
		_, err := engines.Open(ctx, ws, claim.Options{})
		assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
		for _, s := range []string{"proxy is not running", "bd-claim never starts it", "`bd list`",
			"`bd init --proxied-server --proxied-server-idle-timeout 0`", reason} {
			assert.ErrorContains(t, err, s)
		}
	}

	stale, err := os.ReadFile(filepath.Join(a.Root, "proxy.pid"))
	assert.NilError(t, err)
	a.OK("dolt", "stop")
	refused("no proxy.pid")

	var rec map[string]any
	assert.NilError(t, json.Unmarshal(stale, &rec))
	brec, err := os.ReadFile(filepath.Join(b.Root, "proxy.pid"))
	assert.NilError(t, err)
	var bports struct {
		Port        int `json:"port"`
		ControlPort int `json:"control_port"`
	}
	assert.NilError(t, json.Unmarshal(brec, &bports))
	rec["port"], rec["control_port"] = bports.Port, bports.ControlPort
	stale, err = json.Marshal(rec)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(a.Root, "proxy.pid"), stale, 0o644))
	refused("does not prove the workspace's identity")
	assert.DeepEqual(t, claimtest.DoltRows(t, bconn), before)

	a.OK("list")
	s, err := engines.Open(ctx, ws, claim.Options{})
	assert.NilError(t, err)
	defer s.Close()

	// bd's gate of the proxy's root (.beads/dolt.gate.lock), held by a
	// maintenance command: the claim stops at once, as bd does.
	gate := filepath.Join(a.Dir, ".beads", "dolt.gate.lock")
	f := flock.New(gate) // as bd takes its gates
	locked, err := f.TryLock()
	assert.Assert(t, err == nil && locked, "%v", err)
	_, err = s.Claim(ctx, claim.Request{Agent: "x"})
	assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
	assert.ErrorContains(t, err, "a maintenance operation is running on this workspace (another bd process holds "+gate+")")
	r := a.Bd("show", iss.ID)
	assert.Assert(t, strings.Contains(r.Combined(), "a maintenance operation is running"), "bd refuses too: %s", r.Combined())
	f.Close()

	res, err := s.Claim(ctx, claim.Request{Agent: "x"})
	assert.NilError(t, err)
	assert.Equal(t, res.Issue.ID, iss.ID)
	assert.DeepEqual(t, claimtest.DoltRows(t, bconn), before)
}
