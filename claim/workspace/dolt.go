package workspace

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// dsnServer reads an explicit connection (--dsn, $BD_CLAIM_DSN) in the
// MySQL driver's DSN form, user:password@tcp(host:port)/database
// (user:password@unix(/path/to/socket)/database), as the driver reads it:
// the database after the last /, the user before the last @ (its password
// after the first :), parameters after ?, of which tls.
func dsnServer(source, dsn string) (Workspace, error) {
	bad := engine.Errorf(engine.EInvalid, "%s is not a Dolt server DSN of the form user:password@tcp(host:port)/database", source)
	slash := strings.LastIndex(dsn, "/")
	if slash < 0 {
		return Workspace{}, bad
	}
	head, tail := dsn[:slash], dsn[slash+1:]
	name, params, _ := strings.Cut(tail, "?")
	d := DoltServer{Database: name, PortFrom: source}
	if at := strings.LastIndex(head, "@"); at >= 0 {
		d.User, d.Password, _ = strings.Cut(head[:at], ":")
		head = head[at+1:]
	}
	netw, addr, ok := strings.Cut(head, "(")
	if !ok || !strings.HasSuffix(addr, ")") || name == "" {
		return Workspace{}, bad
	}
	addr = strings.TrimSuffix(addr, ")")
	switch netw {
	case "unix":
		d.Socket = addr
	case "tcp":
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			host, port = addr, "3306" // the driver's default
		}
		n, err := strconv.Atoi(port)
		if err != nil || host == "" {
			return Workspace{}, bad
		}
		d.Host, d.Port = host, n
	default:
		return Workspace{}, bad
	}
	for _, kv := range strings.Split(params, "&") {
		if k, v, _ := strings.Cut(kv, "="); k == "tls" {
			d.TLS = v == "true"
		}
	}
	return Workspace{DBPath: d.String(), Source: source, Dolt: &d}, nil
}

// isDolt says whether the .beads directory dir (its metadata.json meta)
// is a Dolt workspace: its backend says so, or it holds a Dolt data
// directory (server or proxied: dolt; embedded: embeddeddolt).
func isDolt(dir string, meta metadata) bool {
	return strings.EqualFold(meta.Backend, "dolt") || isDir(filepath.Join(dir, "dolt")) || isDir(filepath.Join(dir, "embeddeddolt"))
}

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
		engine.Remote(envHost) || meta.DoltMode == "server" || engine.Remote(meta.DoltServerHost) || layout
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
		{strings.TrimSpace(string(written)), engine.PortFile}, {metaPort, "dolt_server_port in .beads/metadata.json"},
		{"3307", ""}, // bd's default
	} {
		if p.port != "" {
			port, d.PortFrom = p.port, p.from
			break
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return ws, engine.Errorf(engine.EInvalid, "the Dolt server port %q (BEADS_DOLT_SERVER_PORT, .beads/dolt-server.port or metadata.json) is not a port number", port)
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
		return "", engine.Errorf(engine.ESchema, "cannot read %s: %v (bd refuses it too: repair or remove it)", filepath.Join(beadsDir, sidecar), err)
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
