package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/db"
)

// bd v0.34 to v0.49 leave out of bd ready the issues that depend on a
// capability of another project that has not shipped: a blocks dependency
// on external:<project>:<capability> is satisfied when the workspace's
// config.yaml maps the project to a directory (external_projects) whose
// Beads database has a closed issue labelled provides:<capability>
// (GetReadyWork's filterByExternalDeps, checkExternalDeps). With no
// external_projects configured they never block; bd v1.3 never blocks on
// them at all.

// Where bd's resolution of external projects changed.
var (
	externalSince = engine.Version{0, 34, 0} // bd ready checks them
	rootSince     = engine.Version{0, 48, 0} // a relative path is the repository root's, no longer the working directory's
	dbPathSince   = engine.Version{0, 49, 0} // a project's database path as configfile.DatabasePath reads it since
)

// externals are the external projects of a workspace written by bd v:
// project name → path, as its config.yaml gives them.
type externals struct {
	v        engine.Version
	beadsDir string
	projects map[string]string
}

// readExternals reads external_projects of the workspace's config.yaml
// (in beadsDir) as bd's configuration does (viper: the names in lower
// case); nil when bd v has no such rule or none is configured.
func readExternals(v engine.Version, beadsDir string) *externals {
	m, _ := engine.ConfigValue(beadsDir, "external_projects").(map[string]any)
	if !v.AtLeast(externalSince[0], externalSince[1], externalSince[2]) || len(m) == 0 {
		return nil
	}
	x := &externals{v: v, beadsDir: beadsDir, projects: map[string]string{}}
	for name, path := range m {
		if !strings.Contains(name, ":") { // bd reads a reference's project up to its first colon
			x.projects[strings.ToLower(name)] = fmt.Sprint(path)
		}
	}
	return x
}

// rules are bd ready's rule on external dependencies, as of the call: an
// issue passes when each of its blocks dependencies on external:... is one
// whose capability its project has shipped (shipped reads them).
func (x *externals) rules() []engine.Rule {
	return []engine.Rule{{Name: "external", Reason: "it depends on another project's capability that has not shipped " +
		"(a blocks dependency on external:PROJECT:CAPABILITY, and the project of external_projects has no closed issue labelled provides:CAPABILITY)",
		Pred: sq.Expr("NOT EXISTS (SELECT 1 FROM dependencies x WHERE x.issue_id = i.id AND x.type = 'blocks' AND x.depends_on_id LIKE 'external:%' AND ?)",
			sq.NotEq{"x.depends_on_id": x.shipped()})}}
}

// shipped lists the external references that are satisfied now, as bd
// resolves them: external:PROJECT:CAPABILITY for each configured project
// whose database has a closed issue labelled provides:CAPABILITY. A
// project that cannot be read ships nothing.
func (x *externals) shipped() []string {
	var refs []string
	for _, name := range slices.Sorted(maps.Keys(x.projects)) {
		if path := x.database(name); path != "" {
			for _, c := range capabilities(path) {
				refs = append(refs, "external:"+name+":"+c)
			}
		}
	}
	return refs
}

// database is the Beads database of project name as bd v finds it
// (config.ResolveExternalProjectPath, configfile.Load, DatabasePath): its
// path, relative to the repository root (before v0.48, to the working
// directory), must exist; its .beads/metadata.json (else the legacy
// config.json) names the database file. "" when there is none to read.
func (x *externals) database(name string) string {
	dir := x.projects[name]
	if !filepath.IsAbs(dir) {
		base := filepath.Dir(x.beadsDir)
		if !x.v.AtLeast(rootSince[0], rootSince[1], rootSince[2]) {
			base, _ = os.Getwd()
		}
		dir = filepath.Join(base, dir)
	}
	beads := filepath.Join(dir, ".beads")
	data, err := os.ReadFile(filepath.Join(beads, "metadata.json"))
	if errors.Is(err, fs.ErrNotExist) {
		data, err = os.ReadFile(filepath.Join(beads, "config.json"))
	}
	var cfg struct{ Database, Backend string }
	if err != nil || json.Unmarshal(data, &cfg) != nil {
		return ""
	}
	if !x.v.AtLeast(dbPathSince[0], dbPathSince[1], dbPathSince[2]) {
		return filepath.Join(beads, cfg.Database)
	}
	db := strings.TrimSpace(cfg.Database)
	switch {
	case cfg.Backend == "dolt": // a Dolt directory, which bd's SQLite check cannot read
		return ""
	case db == "":
		db = "beads.db"
	case filepath.IsAbs(db):
		return db
	}
	return filepath.Join(beads, db)
}

// capabilities are the capabilities that the Beads database at path has
// shipped: each provides:CAPABILITY label of a closed issue (none when the
// database cannot be read, as bd counts it). It opens the file read-only.
func capabilities(path string) []string {
	conn, _ := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(1000)") // the driver is registered
	defer conn.Close()
	shipped, _ := db.New().ShippedLabels(context.Background(), conn)
	var labels, caps []string
	_ = json.Unmarshal([]byte(shipped), &labels) // none from an unreadable database: ""
	for _, l := range labels {
		if c, ok := strings.CutPrefix(l, "provides:"); ok && c != "" {
			caps = append(caps, c)
		}
	}
	return caps
}
