package workspace

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// Locate says where to look for a workspace.
type Locate struct {
	DB     string              // --db: the database file itself
	DSN    string              // --dsn: a Dolt server's database, user:password@tcp(host:port)/database
	Start  string              // --workspace: where the walk up starts ("" = working directory)
	Getenv func(string) string // the environment (BD_DB, BEADS_DIR, BEADS_DB)
}

// Find finds the Beads database in bd's order: --db, $BD_DB,
// --dsn, $BD_CLAIM_DSN, $BEADS_DIR (following its redirect), $BEADS_DB,
// then a walk up from Start to the first .beads directory, stopping at the
// git root. A Dolt workspace's server is resolved as bd resolves it, with
// the same environment (see doltWorkspace). It never creates anything.
func Find(l Locate) (Workspace, error) {
	for _, c := range []struct{ source, dsn string }{
		{"--dsn", l.DSN}, {"BD_CLAIM_DSN", l.Getenv("BD_CLAIM_DSN")},
	} {
		if c.dsn != "" && l.DB == "" && l.Getenv("BD_DB") == "" {
			return dsnServer(c.source, c.dsn)
		}
	}
	for _, c := range []struct{ source, path string }{
		{"--db", l.DB}, {"BD_DB", l.Getenv("BD_DB")},
	} {
		if c.path != "" {
			return dbFile(c.source, c.path)
		}
	}
	if dir := l.Getenv("BEADS_DIR"); dir != "" {
		if !isDir(dir) {
			return Workspace{}, engine.Errorf(engine.EWorkspace, "BEADS_DIR=%s is not a directory", dir)
		}
		return inBeadsDir("BEADS_DIR", dir, l.Getenv)
	}
	if path := l.Getenv("BEADS_DB"); path != "" {
		return dbFile("BEADS_DB", path)
	}
	start := l.Start
	if start == "" {
		start = "."
	}
	dir, err := filepath.Abs(start)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil || !isDir(dir) {
		return Workspace{}, engine.Errorf(engine.EWorkspace, "workspace directory %s does not exist", start)
	}
	for {
		if isDir(filepath.Join(dir, ".beads")) {
			return inBeadsDir("walk", filepath.Join(dir, ".beads"), l.Getenv)
		}
		parent := filepath.Dir(dir)
		if exists(filepath.Join(dir, ".git")) || parent == dir {
			return Workspace{}, engine.Errorf(engine.EWorkspace, "no .beads directory in %s or above it (up to the git root); run `bd init`, or pass --workspace or --db", start)
		}
		dir = parent
	}
}

func dbFile(source, path string) (Workspace, error) {
	abs, err := filepath.Abs(path)
	if err != nil || !isFile(abs) {
		return Workspace{}, engine.Errorf(engine.EDBNotFound, "database %s (from %s) does not exist or is not a file", path, source)
	}
	return Workspace{DBPath: abs, Source: source}, nil
}

// inBeadsDir resolves the database inside a .beads directory: a redirect is
// followed one level, a Dolt workspace's server is resolved, else the file
// named by metadata.json, beads.db, or the only other *.db is used.
func inBeadsDir(source, dir string, getenv func(string) string) (Workspace, error) {
	dir, _ = filepath.Abs(dir) // dir exists, so Abs cannot fail
	if target, ok, err := readRedirect(dir); err != nil {
		return Workspace{}, err
	} else if ok {
		if !isDir(target) {
			return Workspace{}, engine.Errorf(engine.EWorkspace, "%s redirects to %s, which is not a directory", filepath.Join(dir, "redirect"), target)
		}
		dir = target
	}
	ws := Workspace{Root: filepath.Dir(dir), BeadsDir: dir, Source: source}
	meta, err := readMetadata(dir)
	if err != nil {
		return ws, err
	}
	if isDolt(dir, meta) {
		return doltWorkspace(ws, meta, getenv)
	}
	name := meta.Database
	if name == "" {
		name = "beads.db"
		if !isFile(filepath.Join(dir, name)) {
			name, err = singleDB(dir)
			if err != nil {
				return ws, err
			}
		}
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	if !isFile(name) {
		return ws, engine.Errorf(engine.EDBNotFound, "no database at %s; run `bd init` or pass --db", name)
	}
	ws.DBPath = name
	return ws, nil
}

// metadata is .beads/metadata.json as bd writes it (configfile.Config).
type metadata struct {
	Database         string `json:"database"`
	Backend          string `json:"backend"`
	DoltMode         string `json:"dolt_mode"` // embedded (the default), server or proxied-server
	DoltServerHost   string `json:"dolt_server_host"`
	DoltServerPort   int    `json:"dolt_server_port"`
	DoltServerSocket string `json:"dolt_server_socket"`
	DoltServerUser   string `json:"dolt_server_user"`
	DoltDatabase     string `json:"dolt_database"`
	DoltServerTLS    bool   `json:"dolt_server_tls"`
	DoltDataDir      string `json:"dolt_data_dir"`
	ProjectID        string `json:"project_id"`
}

func readMetadata(dir string) (metadata, error) {
	var m metadata
	b, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return m, engine.Errorf(engine.ESchema, "cannot read %s: %v", filepath.Join(dir, "metadata.json"), err)
	}
	return m, nil
}

// readRedirect reads .beads/redirect: the first line that is neither blank
// nor a # comment, a path relative to the directory holding .beads.
func readRedirect(dir string) (string, bool, error) {
	f, err := os.Open(filepath.Join(dir, "redirect"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", false, engine.Errorf(engine.EWorkspace, "cannot read %s: %v", filepath.Join(dir, "redirect"), err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(filepath.Dir(dir), line)
		}
		return filepath.Clean(line), true, nil
	}
	return "", false, engine.Errorf(engine.EWorkspace, "%s names no directory", filepath.Join(dir, "redirect"))
}

// singleDB finds the one *.db in dir that is neither a backup nor vc.db.
func singleDB(dir string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.db")) // the pattern is valid
	var dbs []string
	for _, m := range matches {
		base := filepath.Base(m)
		if base != "vc.db" && !strings.Contains(base, ".backup") {
			dbs = append(dbs, base)
		}
	}
	switch len(dbs) {
	case 0:
		return "", engine.Errorf(engine.EDBNotFound, "no database in %s; run `bd init` or pass --db", dir)
	case 1:
		return dbs[0], nil
	default:
		return "", engine.Errorf(engine.EDBNotFound, "%s holds several databases (%s); pass --db to choose one", dir, strings.Join(dbs, ", "))
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
func isDir(p string) bool  { st, err := os.Stat(p); return err == nil && st.IsDir() }
func isFile(p string) bool { st, err := os.Stat(p); return err == nil && st.Mode().IsRegular() }
