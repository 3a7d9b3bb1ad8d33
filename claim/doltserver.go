package claim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DoltServer is where a Dolt-era Beads database lives (bd v1.3.x server
// mode): a dolt sql-server reached over the MySQL protocol, the database on
// it, and who connects.
type DoltServer struct {
	Host      string `json:"host,omitempty"`
	Port      int    `json:"port,omitempty"`
	Socket    string `json:"socket,omitempty"` // a Unix socket instead of host:port
	User      string `json:"user"`
	Password  string `json:"-"`
	Database  string `json:"database"`
	TLS       bool   `json:"tls,omitempty"`
	ProjectID string `json:"project_id,omitempty"` // metadata.json's project_id, checked against the database's
	// PortFrom says where Port came from, for messages: a variable, the
	// port file, metadata.json, --dsn; "" for bd's default, 3307.
	PortFrom string `json:"-"`
}

// EmbeddedDolt is a Dolt-era Beads database in embedded mode (bd v1.3's
// default): no server, the engine runs inside each process that opens it.
type EmbeddedDolt struct {
	Dir       string `json:"dir"` // .beads/embeddeddolt, which holds the database's directory
	Database  string `json:"database"`
	ProjectID string `json:"project_id,omitempty"` // metadata.json's project_id, checked against the database's
}

// ProxiedDolt is a Dolt-era Beads database in proxied-server mode (bd
// v1.3's `bd init --proxied-server`): a dolt sql-server that bd starts
// behind a proxy of its own, both rooted at Root; clients reach the server
// only through the proxy, on the port its pid file publishes once the proxy
// has proven who it is (dolt.VerifyProxy).
type ProxiedDolt struct {
	Root      string `json:"root"` // the proxy's and the server's directory (.beads/dolt by default)
	Database  string `json:"database"`
	ProjectID string `json:"project_id,omitempty"` // metadata.json's project_id, checked against the database's
}

// String names the database in messages, never with the password.
func (d DoltServer) String() string { return "mysql://" + d.User + "@" + d.addr() + "/" + d.Database }

func (d DoltServer) addr() string {
	if d.Socket != "" {
		return d.Socket
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// unreachable says of a server that cannot be reached where it was looked
// for and why there, and what to do; beadsDir is its workspace's .beads
// ("" for a --dsn connection). A local workspace's server is started with
// `bd dolt start` (bd v1.3.0 starts it on a port the system picks and
// writes that port to .beads/dolt-server.port, which it deletes when the
// server stops); bd-claim never starts one.
func (d DoltServer) unreachable(beadsDir string) string {
	if d.Socket != "" {
		return fmt.Sprintf("the Dolt server cannot be reached on the socket %s: is `dolt sql-server --socket %s` running? Then retry", d.Socket, d.Socket)
	}
	msg := "the Dolt server cannot be reached at " + d.addr()
	local := beadsDir != "" && !remote(d.Host)
	switch {
	case d.PortFrom != "":
		msg += " (the port from " + d.PortFrom + ")"
	case local:
		msg += ", bd's default port, tried because " + portFile + " is missing (bd deletes it when the server it started stops) and nothing else names a port"
	default:
		msg += ", bd's default port (nothing names another)"
	}
	if local {
		return msg + ": start the workspace's server with `bd dolt start`, then retry"
	}
	return msg + ": is `dolt sql-server` running there, and reachable from this machine? Then retry"
}

// config is the driver configuration bd itself connects with
// (doltutil.ServerDSN): parsed times, parameters interpolated client-side
// (one round trip per statement), a 5s dial timeout, 10s reads and writes,
// TLS only when asked for.
func (d DoltServer) config() *mysql.Config {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.DBName = d.User, d.Password, d.Database
	c.Net, c.Addr = "tcp", d.addr()
	if d.Socket != "" {
		c.Net = "unix"
	}
	c.ParseTime, c.InterpolateParams, c.AllowNativePasswords = true, true, true
	c.Timeout, c.ReadTimeout, c.WriteTimeout = 5*time.Second, 10*time.Second, 10*time.Second
	c.Logger = &mysql.NopLogger{} // the driver's own log lines would break bd-claim's stderr; its errors are returned anyway
	c.TLSConfig = "false"
	if d.TLS {
		c.TLSConfig = "true"
	}
	return c
}

// dsnServer reads an explicit connection (--dsn, $BD_CLAIM_DSN) in the
// driver's DSN form, user:password@tcp(host:port)/database.
func dsnServer(source, dsn string) (Workspace, error) {
	c, err := mysql.ParseDSN(dsn)
	if err != nil || c.DBName == "" || (c.Net != "tcp" && c.Net != "unix") {
		return Workspace{}, Errorf(EInvalid, "%s is not a Dolt server DSN of the form user:password@tcp(host:port)/database", source)
	}
	d := DoltServer{User: c.User, Password: c.Passwd, Database: c.DBName, TLS: c.TLSConfig == "true", PortFrom: source}
	if c.Net == "unix" {
		d.Socket = c.Addr
	} else {
		host, port, _ := net.SplitHostPort(c.Addr) // ParseDSN adds the default port
		d.Host = host
		d.Port, _ = strconv.Atoi(port)
	}
	return Workspace{DBPath: d.String(), Source: source, Dolt: &d}, nil
}

// isDolt says whether the .beads directory dir (its metadata.json meta)
// is a Dolt workspace: its backend says so, or it holds a Dolt data
// directory (server or proxied: dolt; embedded: embeddeddolt).
func isDolt(dir string, meta metadata) bool {
	return strings.EqualFold(meta.Backend, "dolt") || isDir(filepath.Join(dir, "dolt")) || isDir(filepath.Join(dir, "embeddeddolt"))
}

// doltLink is the link to the workspace's Dolt database, and the project
// id it must hold; nil for a SQLite workspace.
func (ws Workspace) doltLink(busy time.Duration) (doltLink, string) {
	switch {
	case ws.Dolt != nil:
		return newServerLink(ws.Dolt, ws.BeadsDir, busy), ws.Dolt.ProjectID
	case ws.Proxied != nil:
		return newProxiedLink(ws.Proxied, ws.BeadsDir, busy), ws.Proxied.ProjectID
	case ws.Embedded != nil:
		return newEmbeddedLink(ws.Embedded, ws.BeadsDir, busy), ws.Embedded.ProjectID
	}
	return nil, ""
}

// portFile is where bd v1.3 writes the port of the server it started
// for a workspace.
const portFile = ".beads/dolt-server.port"

// doltWorkspace resolves the database of a Dolt workspace as bd v1.3.0
// does (configfile.go, doltserver.DefaultConfig): in embedded mode (bd's
// default), .beads/embeddeddolt; in server mode, the server from the
// environment first, then the port file, then metadata.json; in
// proxied-server mode, the proxy's root (proxiedRoot).
func doltWorkspace(ws Workspace, meta metadata, getenv func(string) string) (Workspace, error) {
	envHost := getenv("BEADS_DOLT_SERVER_HOST")
	// Without metadata.json, bd goes by the directories: embeddeddolt is
	// embedded, else dolt is a server's (doltserver.ResolvePhysicalRoots).
	layout := !isFile(filepath.Join(ws.BeadsDir, "metadata.json")) && !isDir(filepath.Join(ws.BeadsDir, "embeddeddolt")) && isDir(filepath.Join(ws.BeadsDir, "dolt"))
	server := truthy(getenv("BEADS_DOLT_SERVER_MODE")) || truthy(getenv("BEADS_DOLT_SHARED_SERVER")) ||
		remote(envHost) || meta.DoltMode == "server" || remote(meta.DoltServerHost) || layout
	switch {
	case meta.DoltMode == "proxied-server":
		root, err := proxiedRoot(ws.BeadsDir, meta, getenv)
		p := ProxiedDolt{Root: root, ProjectID: meta.ProjectID, Database: first(getenv("BEADS_DOLT_SERVER_DATABASE"), meta.DoltDatabase, "beads")}
		ws.Proxied, ws.DBPath = &p, filepath.Join(p.Root, p.Database)
		return ws, err
	case !server:
		e := EmbeddedDolt{Dir: filepath.Join(ws.BeadsDir, "embeddeddolt"), ProjectID: meta.ProjectID,
			Database: first(getenv("BEADS_DOLT_SERVER_DATABASE"), meta.DoltDatabase, "beads")}
		ws.Embedded, ws.DBPath = &e, filepath.Join(e.Dir, e.Database)
		return ws, nil
	}
	d := DoltServer{
		Host:      first(envHost, meta.DoltServerHost, "127.0.0.1"),
		Socket:    first(getenv("BEADS_DOLT_SERVER_SOCKET"), meta.DoltServerSocket),
		User:      first(getenv("BEADS_DOLT_SERVER_USER"), meta.DoltServerUser, "root"),
		Database:  first(getenv("BEADS_DOLT_SERVER_DATABASE"), meta.DoltDatabase, "beads"),
		TLS:       truthy(getenv("BEADS_DOLT_SERVER_TLS")) || meta.DoltServerTLS,
		ProjectID: meta.ProjectID,
	}
	written, _ := os.ReadFile(filepath.Join(ws.BeadsDir, "dolt-server.port"))
	var metaPort, port string
	if meta.DoltServerPort != 0 {
		metaPort = strconv.Itoa(meta.DoltServerPort)
	}
	for _, p := range []struct{ port, from string }{
		{getenv("BEADS_DOLT_SERVER_PORT"), "BEADS_DOLT_SERVER_PORT"}, {getenv("BEADS_DOLT_PORT"), "BEADS_DOLT_PORT"},
		{strings.TrimSpace(string(written)), portFile}, {metaPort, "dolt_server_port in .beads/metadata.json"},
		{"3307", ""}, // bd's default
	} {
		if p.port != "" {
			port, d.PortFrom = p.port, p.from
			break
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return ws, Errorf(EInvalid, "the Dolt server port %q (BEADS_DOLT_SERVER_PORT, .beads/dolt-server.port or metadata.json) is not a port number", port)
	}
	d.Port = n
	d.Password = getenv("BEADS_DOLT_PASSWORD")
	if d.Password == "" {
		d.Password = credentialsPassword(getenv, d.Host+":"+port)
	}
	ws.Dolt, ws.DBPath = &d, d.String()
	return ws, nil
}

// proxiedRoot is the root of a proxied-server workspace as bd v1.3.0
// resolves it (doltserver.ResolveProxiedServerRootPath):
// $BEADS_PROXIED_SERVER_ROOT_PATH, else root_path in
// .beads/proxied_server_client_info.json, else the workspace's Dolt data
// directory ($BEADS_DOLT_DATA_DIR, metadata.json's dolt_data_dir, else
// .beads/dolt); a relative path is under .beads. A sidecar that cannot be
// read is refused, as bd refuses it.
func proxiedRoot(beadsDir string, meta metadata, getenv func(string) string) (string, error) {
	const sidecar = "proxied_server_client_info.json"
	var info struct {
		RootPath string `json:"root_path"`
	}
	b, err := os.ReadFile(filepath.Join(beadsDir, sidecar))
	if err == nil {
		err = json.Unmarshal(b, &info)
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return "", Errorf(ESchema, "cannot read %s: %v (bd refuses it too: repair or remove it)", filepath.Join(beadsDir, sidecar), err)
	}
	root := first(getenv("BEADS_PROXIED_SERVER_ROOT_PATH"), info.RootPath, getenv("BEADS_DOLT_DATA_DIR"), meta.DoltDataDir, "dolt")
	if !filepath.IsAbs(root) {
		root = filepath.Join(beadsDir, root)
	}
	return root, nil
}

// credentialsPassword reads bd's credentials file ($BEADS_CREDENTIALS_FILE,
// else ~/.config/beads/credentials): an INI file whose [host:port] section
// holds password=...; "" when there is none.
func credentialsPassword(getenv func(string) string, section string) string {
	path := getenv("BEADS_CREDENTIALS_FILE")
	if path == "" {
		path = filepath.Join(getenv("HOME"), ".config", "beads", "credentials")
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	in := false
	for s.Scan() {
		line, _, _ := strings.Cut(s.Text(), "#")
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "["); ok && strings.HasSuffix(name, "]") {
			if in {
				break
			}
			in = strings.TrimSuffix(name, "]") == section
			continue
		}
		if key, value, ok := strings.Cut(line, "="); in && ok && strings.TrimSpace(key) == "password" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// remote is true for a host other than this machine.
func remote(host string) bool {
	switch host {
	case "", "localhost", "127.0.0.1", "::1", "[::1]":
		return false
	}
	return true
}

func truthy(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// first is the first non-empty value.
func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
