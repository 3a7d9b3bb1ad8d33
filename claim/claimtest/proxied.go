package claimtest

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gotest.tools/v3/assert"
)

// Proxied is a workspace in bd v1.3.0's proxied-server mode, made by the
// real `bd init --proxied-server`: bd's proxy (`bd db-proxy-child`) in front
// of a dolt sql-server it starts, both rooted at .beads/dolt.
type Proxied struct {
	BdRunner
	Prefix string
	Root   string // the proxy's root, .beads/dolt
}

// ProxiedWorkspace makes a new proxied-server workspace as Gas City makes
// its scopes: `git init`, then `bd init --proxied-server
// --proxied-server-idle-timeout 0 --prefix prefix` (the proxy never stops
// by itself). bd finds dolt on PATH: a directory of the test's own holds
// the real dolt 2.2.0 as `dolt`. The proxy and its server are stopped
// (`bd dolt stop`) at the end of t. bd runs as actor bd-test unless told
// otherwise (As). Under -short, it skips.
func ProxiedWorkspace(t testing.TB, prefix string) *Proxied {
	t.Helper()
	return ProxiedWorkspaceIdle(t, prefix, "0")
}

// ProxiedWorkspaceIdle is ProxiedWorkspace whose proxy stops idle after
// its last connection closed (`--proxied-server-idle-timeout idle`, a Go
// duration; bd's default is 30s), as a plain `bd init --proxied-server`
// makes it.
func ProxiedWorkspaceIdle(t testing.TB, prefix, idle string) *Proxied {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real bd v1.3.0 and dolt 2.2.0 (skipped under -short)")
	}
	for _, bin := range []string{DoltBin(), BdDoltBin()} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: the proxied-server tests need bd v1.3.0 and dolt 2.2.0: run `make dolt`", err)
		}
	}
	w := &Proxied{Prefix: prefix, BdRunner: v13Repo(t, true)}
	w.Root = filepath.Join(w.Dir, ".beads", "dolt")
	t.Cleanup(func() { w.Bd("dolt", "stop") })
	w.OK("init", "--proxied-server", "--proxied-server-idle-timeout", idle, "--prefix", prefix,
		"--non-interactive", "--skip-hooks", "--skip-agents", "--quiet")
	return w
}

// As is the same workspace with bd acting as another actor (BEADS_ACTOR).
func (w *Proxied) As(actor string) *Proxied {
	c := *w
	c.BdRunner = w.as(actor)
	return &c
}

// Port is the data port the workspace's proxy publishes in proxy.pid.
func (w *Proxied) Port(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.Root, "proxy.pid"))
	assert.NilError(t, err)
	var pid struct{ Port int }
	assert.NilError(t, json.Unmarshal(b, &pid))
	return pid.Port
}

// DB connects to the workspace's database through its proxy, as bd does
// (user root, no password), for inspecting rows; closed at the end of t.
func (w *Proxied) DB(t testing.TB) *sql.DB {
	t.Helper()
	conn, err := sql.Open("mysql", "root@tcp(127.0.0.1:"+strconv.Itoa(w.Port(t))+")/"+w.Prefix+"?parseTime=true")
	assert.NilError(t, err)
	t.Cleanup(func() { conn.Close() })
	assert.NilError(t, conn.Ping())
	return conn
}
