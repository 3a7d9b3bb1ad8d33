package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// bd v0.34 to v0.49 leave out of bd ready the issues whose blocks
// dependency on external:PROJECT:CAPABILITY has not shipped: the project
// is configured (config.yaml external_projects, its names in lower case),
// its directory holds a Beads database (found through its metadata.json,
// or the legacy config.json), and that database has a closed issue
// labelled provides:CAPABILITY. bd-claim leaves the same issues out,
// claim after claim, in bd ready's order, on a copy of the workspace made
// before bd ready runs; an --id claim of an issue left out says why,
// --explain counts it, and stats' bd_ready is bd ready's count. Each
// version resolves projects as that bd does: bd v0.47.1 a relative path
// from its working directory and the database path as metadata.json gives
// it, bd v0.49.6 from the repository root, with a default database name,
// an absolute one, and none for a Dolt project.
func TestExternalDependenciesAsBdReady(t *testing.T) {
	for _, version := range []string{"v0.47.1", "v0.49.6"} {
		t.Run(version, func(t *testing.T) { externalParity(t, version) })
	}
}

func externalParity(t *testing.T, version string) {
	w := claimtest.SQLiteWorkspace(t, version)
	p := claimtest.SQLiteWorkspace(t, version) // the project that ships capabilities
	pw := &conformance.Workspace{BdRunner: &p.BdRunner}
	for _, l := range []string{"provides:api", "Provides:web"} {
		id := pw.Create(t, "shipped", "-l", l)
		p.OK("close", id)
	}
	pw.Create(t, "not yet", "-l", "provides:gui")
	pdb := filepath.Join(p.Dir, ".beads", "beads.db")

	// Projects beside the workspace: copies of p's database, found in
	// other ways.
	root := filepath.Dir(w.Dir)
	project := func(name string, files map[string]string) string {
		dir := filepath.Join(root, name)
		assert.NilError(t, os.MkdirAll(filepath.Join(dir, ".beads"), 0o755))
		for f, text := range files {
			if text == "" {
				claimtest.CopyFile(t, pdb, filepath.Join(dir, ".beads", f))
				continue
			}
			assert.NilError(t, os.WriteFile(filepath.Join(dir, ".beads", f), []byte(text), 0o644))
		}
		return dir
	}
	rel := func(dir string) string {
		r, err := filepath.Rel(w.Dir, dir)
		assert.NilError(t, err)
		return r
	}
	cfg := map[string]string{
		"prov":     rel(p.Dir),
		"absprov":  p.Dir,
		"Upper":    p.Dir,
		"legacy":   rel(project("legacy", map[string]string{"beads.db": "", "config.json": `{"database": "beads.db"}`})),
		"nometa":   rel(project("nometa", map[string]string{"beads.db": ""})),
		"badmeta":  rel(project("badmeta", map[string]string{"beads.db": "", "metadata.json": "{"})),
		"emptydb":  rel(project("emptydb", map[string]string{"beads.db": "", "metadata.json": `{"database": ""}`})),
		"absdb":    rel(project("absdb", map[string]string{"metadata.json": `{"database": "` + pdb + `"}`})),
		"doltproj": rel(project("doltproj", map[string]string{"beads.db": "", "metadata.json": `{"backend": "dolt", "database": "beads.db"}`})),
		"missing":  "../no-such-dir",
		"colon:x":  p.Dir,
	}
	var yaml strings.Builder
	yaml.WriteString("\nexternal_projects:\n")
	for name, path := range cfg {
		yaml.WriteString("  \"" + name + "\": \"" + path + "\"\n")
	}
	f, err := os.OpenFile(filepath.Join(w.Dir, ".beads", "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	assert.NilError(t, err)
	_, err = f.WriteString(yaml.String())
	assert.NilError(t, err)
	assert.NilError(t, f.Close())

	// An issue per reference, each of its own priority and age.
	ww := &conformance.Workspace{BdRunner: &w.BdRunner}
	issues := map[string]string{} // title → id
	for _, ref := range []string{"", "prov:api", "prov:gui", "prov:web", "absprov:api", "Upper:api", "upper:api", "legacy:api", "nometa:api",
		"badmeta:api", "emptydb:api", "absdb:api", "doltproj:api", "missing:api", "elsewhere:api", "colon:x:api", "prov:api prov:gui"} {
		id := ww.Create(t, "refs "+ref, "-p", "2")
		issues[ref] = id
		for _, r := range strings.Fields(ref) {
			w.OK("dep", "add", id, "external:"+r)
		}
	}
	conn := claimtest.Open(t, filepath.Join(w.Dir, ".beads", "beads.db"))
	raw := ww.Create(t, "an upper-case EXTERNAL:", "-p", "2")
	related := ww.Create(t, "related, not blocks", "-p", "2")
	for _, d := range [][3]string{{raw, "EXTERNAL:prov:api", "blocks"}, {related, "external:prov:gui", "related"}} {
		_, err := conn.Exec("INSERT INTO dependencies (issue_id, depends_on_id, type, created_at, created_by) VALUES (?, ?, ?, '2025-01-01T00:00:00Z', 't')", d[0], d[1], d[2])
		assert.NilError(t, err)
	}
	assert.NilError(t, conn.Close())

	// What each version lists: bd v0.47.1 joins metadata.json's database
	// to .beads as it is; bd v0.49.6 defaults an empty one, takes an
	// absolute one, and reads no Dolt project.
	ready := []string{issues[""], issues["prov:api"], issues["absprov:api"], issues["upper:api"], issues["legacy:api"], related}
	if version == "v0.49.6" {
		ready = append(ready, issues["emptydb:api"], issues["absdb:api"])
	} else {
		ready = append(ready, issues["doltproj:api"])
	}
	check := func(sub string) {
		t.Helper()
		twin := filepath.Join(root, "twin-"+strings.ReplaceAll(sub, "/", "-"))
		assert.NilError(t, os.MkdirAll(filepath.Join(twin, ".beads"), 0o755))
		assert.NilError(t, os.MkdirAll(filepath.Join(twin, sub), 0o755))
		assert.NilError(t, os.MkdirAll(filepath.Join(w.Dir, sub), 0o755))
		for _, name := range claimtest.Names(t, filepath.Join(w.Dir, ".beads")) {
			if fi, err := os.Stat(filepath.Join(w.Dir, ".beads", name)); err == nil && fi.Mode().IsRegular() {
				claimtest.CopyFile(t, filepath.Join(w.Dir, ".beads", name), filepath.Join(twin, ".beads", name))
			}
		}
		t.Chdir(filepath.Join(twin, sub)) // bd v0.47.1 resolves a relative path from here
		s := conformance.OpenAt(t, filepath.Join(twin, sub), w.Getenv, claim.Options{})
		var drained []string
		for {
			res, err := s.Claim(context.Background(), claim.Request{Agent: "x"})
			assert.NilError(t, err)
			if res.Issue == nil {
				break
			}
			drained = append(drained, res.Issue.ID)
		}
		bd := w.BdRunner
		bd.Dir = filepath.Join(w.Dir, sub)
		listed := (&conformance.Workspace{BdRunner: &bd}).Ready(t, "priority")
		assert.DeepEqual(t, drained, listed)
		want := ready
		if sub != "." && version == "v0.47.1" { // only the absolute paths lead somewhere
			want = []string{issues[""], issues["absprov:api"], issues["upper:api"], related}
		}
		assert.Equal(t, strings.Join(sortedCopy(listed), " "), strings.Join(sortedCopy(want), " "), "%v", issues)
	}
	check(".")
	check("sub/dir") // bd v0.47.1 resolves relative paths from here: they lead nowhere

	// An --id claim of an issue left out says why; explain and stats count
	// them.
	t.Chdir(w.Dir)
	s := conformance.OpenAt(t, w.Dir, w.Getenv, claim.Options{})
	_, err = s.Claim(context.Background(), claim.Request{Agent: "x", ID: issues["prov:gui"]})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotClaimable, "%v", err)
	assert.ErrorContains(t, err, "it depends on another project's capability that has not shipped")
	ex, err := s.Explain(context.Background(), claim.Request{Agent: "x"})
	assert.NilError(t, err)
	assert.Equal(t, ex.Excluded["external"], len(issues)+2-len(ready), "%+v", ex)
	st, err := s.Stats(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, st.BdReady, len(ready))
}

func sortedCopy(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
