package workspace_test

import (
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// A Dolt workspace's server is found as bd v1.3.0 finds it: environment,
// then the port file, then metadata.json, then bd's defaults; the password
// from BEADS_DOLT_PASSWORD or bd's credentials file. Embedded and
// proxied-server workspaces are refused before anything is opened.
func TestFindWorkspaceDolt(t *testing.T) {
	t.Parallel()
	const proxied = `{"database":"dolt","backend":"dolt","dolt_mode":"proxied-server","dolt_database":"px","project_id":"p-3"}`
	const server = `{"database":"dolt","backend":"dolt","dolt_mode":"server","dolt_server_host":"127.0.0.1","dolt_server_port":33310,"dolt_server_user":"root","dolt_database":"fx","project_id":"p-1"}`
	for _, tc := range []struct {
		name     string
		files    map[string]string
		env      []string
		want     claim.DoltServer
		embedded *claim.EmbeddedDolt
		proxied  *claim.ProxiedDolt
		code     claim.Code
		msg      string
	}{
		{
			name:  "metadata.json alone (the deprecated port)",
			files: map[string]string{"ws/.beads/metadata.json": server},
			want:  claim.DoltServer{Host: "127.0.0.1", Port: 33310, User: "root", Database: "fx", ProjectID: "p-1", PortFrom: "dolt_server_port in .beads/metadata.json"},
		},
		{
			name:  "the port file wins over metadata.json",
			files: map[string]string{"ws/.beads/metadata.json": server, "ws/.beads/dolt-server.port": "40001\n"},
			want:  claim.DoltServer{Host: "127.0.0.1", Port: 40001, User: "root", Database: "fx", ProjectID: "p-1", PortFrom: ".beads/dolt-server.port"},
		},
		{
			name:  "the environment wins over both",
			files: map[string]string{"ws/.beads/metadata.json": server, "ws/.beads/dolt-server.port": "40001"},
			env: []string{"BEADS_DOLT_SERVER_HOST", "db.example.com", "BEADS_DOLT_SERVER_PORT", "3306", "BEADS_DOLT_SERVER_USER", "agent",
				"BEADS_DOLT_SERVER_DATABASE", "other", "BEADS_DOLT_PASSWORD", "s3cret", "BEADS_DOLT_SERVER_TLS", "1"},
			want: claim.DoltServer{Host: "db.example.com", Port: 3306, User: "agent", Password: "s3cret", Database: "other", TLS: true, ProjectID: "p-1", PortFrom: "BEADS_DOLT_SERVER_PORT"},
		},
		{
			name:  "a remote host in the environment makes an embedded workspace a server one; bd's defaults fill the rest",
			files: map[string]string{"ws/.beads/metadata.json": `{"backend":"dolt","dolt_mode":"embedded"}`},
			env:   []string{"BEADS_DOLT_SERVER_HOST", "10.0.0.7"},
			want:  claim.DoltServer{Host: "10.0.0.7", Port: 3307, User: "root", Database: "beads"},
		},
		{
			name:  "BEADS_DOLT_SERVER_MODE with the legacy port variable and a socket",
			files: map[string]string{"ws/.beads/metadata.json": `{"backend":"dolt","dolt_database":"fx","dolt_server_socket":"/run/dolt.sock"}`},
			env:   []string{"BEADS_DOLT_SERVER_MODE", "1", "BEADS_DOLT_PORT", "3400"},
			want:  claim.DoltServer{Host: "127.0.0.1", Port: 3400, Socket: "/run/dolt.sock", User: "root", Database: "fx", PortFrom: "BEADS_DOLT_PORT"},
		},
		{
			name: "the password from bd's credentials file, section [host:port]",
			files: map[string]string{"ws/.beads/metadata.json": server, "home/.config/beads/credentials": "# bd credentials\n[db:1]\npassword = wrong\n" +
				"[127.0.0.1:33310]\nuser = x\npassword = from-file # a comment\n[other:2]\npassword=no\n"},
			env:  []string{"HOME", "$DIR/home"},
			want: claim.DoltServer{Host: "127.0.0.1", Port: 33310, User: "root", Password: "from-file", Database: "fx", ProjectID: "p-1", PortFrom: "dolt_server_port in .beads/metadata.json"},
		},
		{
			name:  "BEADS_CREDENTIALS_FILE names another file; this server's section has no password",
			files: map[string]string{"ws/.beads/metadata.json": server, "creds": "[127.0.0.1:1]\npassword=p\n[127.0.0.1:33310]\nuser=x\n[127.0.0.1:2]\npassword=q\n"},
			env:   []string{"BEADS_CREDENTIALS_FILE", "$DIR/creds"},
			want:  claim.DoltServer{Host: "127.0.0.1", Port: 33310, User: "root", Database: "fx", ProjectID: "p-1", PortFrom: "dolt_server_port in .beads/metadata.json"},
		},
		{
			name:     "embedded mode: the database dolt_database names in .beads/embeddeddolt",
			files:    map[string]string{"ws/.beads/metadata.json": `{"database":"dolt","backend":"dolt","dolt_mode":"embedded","dolt_database":"em","project_id":"p-2"}`, "ws/.beads/embeddeddolt/": ""},
			embedded: &claim.EmbeddedDolt{Database: "em", ProjectID: "p-2"},
		},
		{
			name:     "embedded mode: BEADS_DOLT_SERVER_DATABASE names the database, as for bd",
			files:    map[string]string{"ws/.beads/metadata.json": `{"backend":"dolt","dolt_database":"em"}`},
			env:      []string{"BEADS_DOLT_SERVER_DATABASE", "other"},
			embedded: &claim.EmbeddedDolt{Database: "other"},
		},
		{
			name:     "an embeddeddolt directory without metadata.json is embedded, database beads",
			files:    map[string]string{"ws/.beads/embeddeddolt/": "", "ws/.beads/dolt/": ""},
			embedded: &claim.EmbeddedDolt{Database: "beads"},
		},
		{
			name:  "a dolt directory without metadata.json is a local server's, on bd's default port",
			files: map[string]string{"ws/.beads/dolt/": ""},
			want:  claim.DoltServer{Host: "127.0.0.1", Port: 3307, User: "root", Database: "beads"},
		},
		{
			name:    "proxied-server mode: the proxy's root is .beads/dolt, the database dolt_database",
			files:   map[string]string{"ws/.beads/metadata.json": proxied, "ws/.beads/proxied_server_client_info.json": `{"idle_timeout":-1}`},
			proxied: &claim.ProxiedDolt{Root: "$DIR/ws/.beads/dolt", Database: "px", ProjectID: "p-3"},
		},
		{
			name:    "proxied-server mode: the sidecar's root_path, relative to .beads; BEADS_DOLT_SERVER_DATABASE",
			files:   map[string]string{"ws/.beads/metadata.json": proxied, "ws/.beads/proxied_server_client_info.json": `{"root_path":"../shared"}`},
			env:     []string{"BEADS_DOLT_SERVER_DATABASE", "other", "BEADS_DOLT_DATA_DIR", "/not/this"},
			proxied: &claim.ProxiedDolt{Root: "$DIR/ws/shared", Database: "other", ProjectID: "p-3"},
		},
		{
			name:    "proxied-server mode: BEADS_PROXIED_SERVER_ROOT_PATH wins over the sidecar",
			files:   map[string]string{"ws/.beads/metadata.json": proxied, "ws/.beads/proxied_server_client_info.json": `{"root_path":"/not/this"}`},
			env:     []string{"BEADS_PROXIED_SERVER_ROOT_PATH", "$DIR/root"},
			proxied: &claim.ProxiedDolt{Root: "$DIR/root", Database: "px", ProjectID: "p-3"},
		},
		{
			name:    "proxied-server mode without a sidecar: the Dolt data directory, BEADS_DOLT_DATA_DIR first",
			files:   map[string]string{"ws/.beads/metadata.json": `{"backend":"dolt","dolt_mode":"proxied-server","dolt_data_dir":"/not/this"}`},
			env:     []string{"BEADS_DOLT_DATA_DIR", "data"},
			proxied: &claim.ProxiedDolt{Root: "$DIR/ws/.beads/data", Database: "beads"},
		},
		{
			name:    "proxied-server mode: metadata.json's dolt_data_dir",
			files:   map[string]string{"ws/.beads/metadata.json": `{"backend":"dolt","dolt_mode":"proxied-server","dolt_data_dir":"$DIR/fast"}`},
			proxied: &claim.ProxiedDolt{Root: "$DIR/fast", Database: "beads"},
		},
		{
			name:  "proxied-server mode: a sidecar bd cannot read is refused",
			files: map[string]string{"ws/.beads/metadata.json": proxied, "ws/.beads/proxied_server_client_info.json": `{"root_path":`},
			code:  claim.ESchema, msg: "proxied_server_client_info.json: unexpected end of JSON input (bd refuses it too",
		},
		{
			name:  "a port that is not a number",
			files: map[string]string{"ws/.beads/metadata.json": server, "ws/.beads/dolt-server.port": "http"},
			code:  claim.EInvalid, msg: `the Dolt server port "http"`,
		},
		{
			name:  "a port out of range",
			files: map[string]string{"ws/.beads/metadata.json": server},
			env:   []string{"BEADS_DOLT_SERVER_PORT", "70000"},
			code:  claim.EInvalid, msg: `port "70000"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t, tc.files)
			kv := append([]string{"HOME", "$DIR/nohome"}, tc.env...)
			for i := range kv {
				kv[i] = filepathReplace(kv[i], dir)
			}
			ws, err := find(t, dir, workspace.Locate{Start: filepath.Join(dir, "ws"), Getenv: env(kv...)})
			if tc.code != "" {
				assert.Equal(t, claim.ErrorCode(err), tc.code, "%v", err)
				assert.ErrorContains(t, err, tc.msg)
				return
			}
			assert.NilError(t, err)
			if tc.proxied != nil {
				want := *tc.proxied
				want.Root = filepathReplace(want.Root, dir)
				assert.DeepEqual(t, *ws.Proxied, want)
				assert.Equal(t, ws.DBPath, filepath.Join(want.Root, want.Database))
				assert.Assert(t, ws.Dolt == nil && ws.Embedded == nil)
				return
			}
			if tc.embedded != nil {
				want := *tc.embedded
				want.Dir = filepath.Join(ws.BeadsDir, "embeddeddolt")
				assert.DeepEqual(t, *ws.Embedded, want)
				assert.Equal(t, ws.DBPath, filepath.Join(want.Dir, want.Database))
				assert.Assert(t, ws.Dolt == nil)
				return
			}
			assert.DeepEqual(t, *ws.Dolt, tc.want)
			assert.Equal(t, ws.DBPath, tc.want.String())
			assert.Equal(t, ws.BeadsDir, filepath.Join(dir, "ws", ".beads"))
			assert.Equal(t, ws.Source, "walk")
		})
	}
}

// An explicit connection (--dsn, then $BD_CLAIM_DSN) needs no workspace;
// --db and $BD_DB still come first. The password never shows in DBPath.
func TestFindWorkspaceDSN(t *testing.T) {
	t.Parallel()
	ws, err := workspace.Find(workspace.Locate{DSN: "agent:pw@tcp(db.example.com:3306)/fx?tls=true", Getenv: env("BD_CLAIM_DSN", "x:y@tcp(other:1)/no")})
	assert.NilError(t, err)
	assert.DeepEqual(t, ws, claim.Workspace{DBPath: "mysql://agent@db.example.com:3306/fx", Source: "--dsn",
		Dolt: &claim.DoltServer{Host: "db.example.com", Port: 3306, User: "agent", Password: "pw", Database: "fx", TLS: true, PortFrom: "--dsn"}})

	ws, err = workspace.Find(workspace.Locate{Getenv: env("BD_CLAIM_DSN", "root@unix(/run/dolt.sock)/fx")})
	assert.NilError(t, err)
	assert.DeepEqual(t, ws, claim.Workspace{DBPath: "mysql://root@/run/dolt.sock/fx", Source: "BD_CLAIM_DSN",
		Dolt: &claim.DoltServer{Socket: "/run/dolt.sock", User: "root", Database: "fx", PortFrom: "BD_CLAIM_DSN"}})

	ws, err = workspace.Find(workspace.Locate{Getenv: env("BD_CLAIM_DSN", "root@tcp(db)/fx")})
	assert.NilError(t, err)
	assert.Equal(t, ws.Dolt.Port, 3306, "the driver's default port")

	dir := tree(t, map[string]string{"my.db": "x"})
	ws, err = workspace.Find(workspace.Locate{DB: filepath.Join(dir, "my.db"), DSN: "root@tcp(db:1)/fx", Getenv: env()})
	assert.NilError(t, err)
	assert.Assert(t, ws.Dolt == nil && ws.Source == "--db")

	for _, bad := range []string{"root@tcp(db:1)/", "not a dsn", "root@udp(db:1)/fx", "root@tcp(db:port)/fx", "root@tcp(:3306)/fx"} {
		_, err := workspace.Find(workspace.Locate{DSN: bad, Getenv: env()})
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%q: %v", bad, err)
		assert.ErrorContains(t, err, "--dsn is not a Dolt server DSN of the form user:password@tcp(host:port)/database")
	}
}

func filepathReplace(s, dir string) string {
	if len(s) >= 4 && s[:4] == "$DIR" {
		return dir + s[4:]
	}
	return s
}
