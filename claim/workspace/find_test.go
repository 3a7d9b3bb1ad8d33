package workspace_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

var (
	env  = claimtest.Env
	tree = claimtest.Tree
)

// listing is every path under root with its mode, size and modification
// time: two listings differ when anything was created, removed or written.
func listing(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	assert.NilError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, fmt.Sprintf("%s %s %d %d", rel, info.Mode(), info.Size(), info.ModTime().UnixNano()))
		return nil
	}))
	slices.Sort(out)
	return out
}

// find runs Find and checks that it created, removed and wrote
// nothing under root.
func find(t *testing.T, root string, l workspace.Locate) (claim.Workspace, error) {
	t.Helper()
	before := listing(t, root)
	if l.Getenv == nil {
		l.Getenv = env()
	}
	ws, err := workspace.Find(l)
	assert.DeepEqual(t, listing(t, root), before)
	return ws, err
}

func TestFindWorkspace(t *testing.T) {
	t.Parallel()
	type want struct {
		root, beadsDir, db, source string // relative to the temp dir; "" for root/beadsDir means none
		code                       claim.Code
		msg                        []string // substrings of the error message
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		// locate is called with the temp dir to build the request.
		locate func(dir string) workspace.Locate
		want   want
	}{
		{
			name:   "--db names an existing file",
			files:  map[string]string{"elsewhere/my.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{DB: filepath.Join(d, "elsewhere/my.db")} },
			want:   want{db: "elsewhere/my.db", source: "--db"},
		},
		{
			name:  "--db wins over every variable and the walk",
			files: map[string]string{"a.db": "x", "b.db": "x", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{DB: filepath.Join(d, "a.db"), Start: filepath.Join(d, "ws"),
					Getenv: env("BD_DB", filepath.Join(d, "b.db"), "BEADS_DIR", filepath.Join(d, "ws/.beads"), "BEADS_DB", filepath.Join(d, "b.db"))}
			},
			want: want{db: "a.db", source: "--db"},
		},
		{
			name:  "--db missing",
			files: map[string]string{"ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{DB: filepath.Join(d, "nope.db"), Start: filepath.Join(d, "ws")}
			},
			want: want{code: claim.EDBNotFound, msg: []string{"nope.db (from --db) does not exist or is not a file"}},
		},
		{
			name:   "--db is a directory",
			files:  map[string]string{"dir.db/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{DB: filepath.Join(d, "dir.db")} },
			want:   want{code: claim.EDBNotFound, msg: []string{"dir.db (from --db) does not exist or is not a file"}},
		},
		{
			name:  "BD_DB wins over BEADS_DIR",
			files: map[string]string{"b.db": "x", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BD_DB", filepath.Join(d, "b.db"), "BEADS_DIR", filepath.Join(d, "ws/.beads"))}
			},
			want: want{db: "b.db", source: "BD_DB"},
		},
		{
			name: "BD_DB missing",
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BD_DB", filepath.Join(d, "gone.db"))}
			},
			want: want{code: claim.EDBNotFound, msg: []string{"gone.db (from BD_DB)"}},
		},
		{
			name:  "BEADS_DIR wins over BEADS_DB and the walk",
			files: map[string]string{"store/beads.db": "x", "b.db": "x", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Start: filepath.Join(d, "ws"), Getenv: env("BEADS_DIR", filepath.Join(d, "store"), "BEADS_DB", filepath.Join(d, "b.db"))}
			},
			want: want{root: ".", beadsDir: "store", db: "store/beads.db", source: "BEADS_DIR"},
		},
		{
			name:  "BEADS_DIR is a file",
			files: map[string]string{"store": "not a dir"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BEADS_DIR", filepath.Join(d, "store"))}
			},
			want: want{code: claim.EWorkspace, msg: []string{"BEADS_DIR=", "store is not a directory"}},
		},
		{
			name: "BEADS_DIR missing",
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BEADS_DIR", filepath.Join(d, "nowhere"))}
			},
			want: want{code: claim.EWorkspace, msg: []string{"nowhere is not a directory"}},
		},
		{
			name: "BEADS_DIR redirect, relative to the directory holding .beads, comments and blanks skipped",
			files: map[string]string{
				"proj/.beads/redirect":   "# where the real workspace is\n\n   \n  # indented comment\n  ../shared/.beads  \nignored/second/line\n",
				"proj/.beads/beads.db":   "local, must not be used",
				"shared/.beads/beads.db": "x",
			},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BEADS_DIR", filepath.Join(d, "proj/.beads"))}
			},
			want: want{root: "shared", beadsDir: "shared/.beads", db: "shared/.beads/beads.db", source: "BEADS_DIR"},
		},
		{
			name: "redirect is followed one level only",
			files: map[string]string{
				"proj/.beads/redirect":   "../shared/.beads",
				"shared/.beads/redirect": "../third/.beads",
				"shared/.beads/beads.db": "x",
				"third/.beads/beads.db":  "x",
			},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "proj")} },
			want:   want{root: "shared", beadsDir: "shared/.beads", db: "shared/.beads/beads.db", source: "walk"},
		},
		{
			name:  "redirect names no directory",
			files: map[string]string{"proj/.beads/redirect": "# only a comment\n\n", "proj/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BEADS_DIR", filepath.Join(d, "proj/.beads"))}
			},
			want: want{code: claim.EWorkspace, msg: []string{filepath.Join("proj", ".beads", "redirect") + " names no directory"}},
		},
		{
			name:  "redirect to a missing directory",
			files: map[string]string{"proj/.beads/redirect": "../moved/.beads\n", "proj/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BEADS_DIR", filepath.Join(d, "proj/.beads"))}
			},
			want: want{code: claim.EWorkspace, msg: []string{"redirects to ", filepath.Join("moved", ".beads") + ", which is not a directory"}},
		},
		{
			name:  "BEADS_DB names the file",
			files: map[string]string{"legacy/issues.db": "x", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Start: filepath.Join(d, "ws"), Getenv: env("BEADS_DB", filepath.Join(d, "legacy/issues.db"))}
			},
			want: want{db: "legacy/issues.db", source: "BEADS_DB"},
		},
		{
			name: "BEADS_DB missing",
			locate: func(d string) workspace.Locate {
				return workspace.Locate{Getenv: env("BEADS_DB", filepath.Join(d, "legacy.db"))}
			},
			want: want{code: claim.EDBNotFound, msg: []string{"legacy.db (from BEADS_DB)"}},
		},
		{
			name:   "walk up from a nested subdirectory",
			files:  map[string]string{"ws/.beads/beads.db": "x", "ws/src/pkg/deep/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws/src/pkg/deep")} },
			want:   want{root: "ws", beadsDir: "ws/.beads", db: "ws/.beads/beads.db", source: "walk"},
		},
		{
			name:   "walk finds the nearest .beads",
			files:  map[string]string{"ws/.beads/beads.db": "x", "ws/inner/.beads/beads.db": "x", "ws/inner/a/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws/inner/a")} },
			want:   want{root: "ws/inner", beadsDir: "ws/inner/.beads", db: "ws/inner/.beads/beads.db", source: "walk"},
		},
		{
			name:   "walk finds .beads in the git root itself",
			files:  map[string]string{"repo/.git/": "", "repo/.beads/beads.db": "x", "repo/a/b/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "repo/a/b")} },
			want:   want{root: "repo", beadsDir: "repo/.beads", db: "repo/.beads/beads.db", source: "walk"},
		},
		{
			name:   "walk stops at a .git directory",
			files:  map[string]string{".beads/beads.db": "x", "repo/.git/": "", "repo/a/b/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "repo/a/b")} },
			want:   want{code: claim.EWorkspace, msg: []string{"no .beads directory in", "up to the git root"}},
		},
		{
			name:   "walk stops at a .git file (worktree or submodule)",
			files:  map[string]string{".beads/beads.db": "x", "repo/.git": "gitdir: ../elsewhere\n", "repo/a/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "repo/a")} },
			want:   want{code: claim.EWorkspace, msg: []string{"no .beads directory in"}},
		},
		{
			name:   "a .beads file is not a workspace",
			files:  map[string]string{"repo/.git/": "", "repo/.beads": "file", "repo/a/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "repo/a")} },
			want:   want{code: claim.EWorkspace, msg: []string{"no .beads directory in"}},
		},
		{
			name:   "--workspace missing",
			files:  map[string]string{".beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "missing")} },
			want:   want{code: claim.EWorkspace, msg: []string{"missing does not exist"}},
		},
		{
			name:   "--workspace is a file",
			files:  map[string]string{".beads/beads.db": "x", "file": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "file")} },
			want:   want{code: claim.EWorkspace, msg: []string{"file does not exist"}},
		},
		{
			name:   "metadata.json names the database (relative)",
			files:  map[string]string{"ws/.beads/metadata.json": `{"database":"custom.db","jsonl_export":"issues.jsonl"}`, "ws/.beads/custom.db": "x", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{root: "ws", beadsDir: "ws/.beads", db: "ws/.beads/custom.db", source: "walk"},
		},
		{
			name:   "metadata.json names the database (absolute)",
			files:  map[string]string{"ws/.beads/metadata.json": `{"database":"$DIR/data/real.db"}`, "ws/.beads/beads.db": "x", "data/real.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{root: "ws", beadsDir: "ws/.beads", db: "data/real.db", source: "walk"},
		},
		{
			name:   "redirect to an absolute path",
			files:  map[string]string{"proj/.beads/redirect": "$DIR/shared/.beads\n", "shared/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "proj")} },
			want:   want{root: "shared", beadsDir: "shared/.beads", db: "shared/.beads/beads.db", source: "walk"},
		},
		{
			name:   "metadata.json names a missing file",
			files:  map[string]string{"ws/.beads/metadata.json": `{"database":"renamed.db"}`, "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{code: claim.EDBNotFound, msg: []string{"no database at", "renamed.db"}},
		},
		{
			name:   "metadata.json malformed",
			files:  map[string]string{"ws/.beads/metadata.json": `{"database": "beads.db",`, "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{code: claim.ESchema, msg: []string{"cannot read", "metadata.json", "unexpected end of JSON input"}},
		},
		{
			name:   "metadata.json unreadable (a directory)",
			files:  map[string]string{"ws/.beads/metadata.json/": "", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{code: claim.ESchema, msg: []string{"cannot read", "metadata.json"}},
		},
		{
			name:   "Dolt backend in metadata.json, embedded mode",
			files:  map[string]string{"ws/.beads/metadata.json": `{"database":"beads.db","backend":"Dolt"}`, "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{root: "ws", beadsDir: "ws/.beads", db: "ws/.beads/embeddeddolt/beads", source: "walk"},
		},
		{
			name:   "Dolt directory",
			files:  map[string]string{"ws/.beads/embeddeddolt/": "", "ws/.beads/beads.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{root: "ws", beadsDir: "ws/.beads", db: "ws/.beads/embeddeddolt/beads", source: "walk"},
		},
		{
			name: "the single other *.db, ignoring backups and vc.db",
			files: map[string]string{"ws/.beads/fx.db": "x", "ws/.beads/vc.db": "x", "ws/.beads/beads.backup.db": "x",
				"ws/.beads/fx.backup-20250101.db": "x", "ws/.beads/notes.txt": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{root: "ws", beadsDir: "ws/.beads", db: "ws/.beads/fx.db", source: "walk"},
		},
		{
			name:   "several *.db",
			files:  map[string]string{"ws/.beads/one.db": "x", "ws/.beads/two.db": "x", "ws/.beads/vc.db": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{code: claim.EDBNotFound, msg: []string{"holds several databases (one.db, two.db); pass --db"}},
		},
		{
			name:   "no database at all",
			files:  map[string]string{"ws/.beads/vc.db": "x", "ws/.beads/beads.backup.db": "x", "ws/.beads/config.yaml": "x"},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{code: claim.EDBNotFound, msg: []string{"no database in", "run `bd init`"}},
		},
		{
			name:   "beads.db that is a directory",
			files:  map[string]string{"ws/.beads/beads.db/": ""},
			locate: func(d string) workspace.Locate { return workspace.Locate{Start: filepath.Join(d, "ws")} },
			want:   want{code: claim.EDBNotFound, msg: []string{"no database at"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t, tc.files)
			ws, err := find(t, dir, tc.locate(dir))
			if tc.want.code != "" {
				assert.Equal(t, claim.ErrorCode(err), tc.want.code, "%v", err)
				for _, m := range tc.want.msg {
					assert.ErrorContains(t, err, m)
				}
				return
			}
			assert.NilError(t, err)
			abs := func(rel string) string {
				if rel == "" {
					return ""
				}
				return filepath.Join(dir, filepath.FromSlash(rel))
			}
			want := claim.Workspace{Root: abs(tc.want.root), BeadsDir: abs(tc.want.beadsDir), DBPath: abs(tc.want.db), Source: tc.want.source}
			if ws.Embedded != nil {
				want.Embedded = &claim.EmbeddedDolt{Dir: filepath.Dir(want.DBPath), Database: filepath.Base(want.DBPath)}
			}
			assert.DeepEqual(t, ws, want)
		})
	}
}

// BEADS_DIR and --db may be relative to the working directory; a walk with no
// start begins in the working directory.
func TestFindWorkspaceRelativeToWorkingDirectory(t *testing.T) {
	dir := tree(t, map[string]string{
		"ws/.beads/beads.db":     "x",
		"ws/sub/":                "",
		"target/.beads/beads.db": "x",
		"jump/.beads/redirect":   "../target/.beads",
		"rel.db":                 "x",
	})
	t.Chdir(filepath.Join(dir, "ws", "sub"))

	ws, err := find(t, dir, workspace.Locate{})
	assert.NilError(t, err)
	assert.DeepEqual(t, ws, claim.Workspace{Root: filepath.Join(dir, "ws"), BeadsDir: filepath.Join(dir, "ws/.beads"),
		DBPath: filepath.Join(dir, "ws/.beads/beads.db"), Source: "walk"})

	ws, err = find(t, dir, workspace.Locate{Getenv: env("BEADS_DIR", "../../jump/.beads")})
	assert.NilError(t, err)
	assert.DeepEqual(t, ws, claim.Workspace{Root: filepath.Join(dir, "target"), BeadsDir: filepath.Join(dir, "target/.beads"),
		DBPath: filepath.Join(dir, "target/.beads/beads.db"), Source: "BEADS_DIR"})

	ws, err = find(t, dir, workspace.Locate{DB: "../../rel.db"})
	assert.NilError(t, err)
	assert.DeepEqual(t, ws, claim.Workspace{DBPath: filepath.Join(dir, "rel.db"), Source: "--db"})
}

// The walk resolves symlinks first, as bd does: a link to a directory inside
// a workspace finds that workspace, not whatever lies above the link.
func TestFindWorkspaceSymlinkedStart(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"real/.beads/beads.db": "x", "real/src/deep/": "", "links/.git/": ""})
	link := filepath.Join(dir, "links", "deep")
	if err := os.Symlink(filepath.Join(dir, "real/src/deep"), link); err != nil {
		t.Skipf("symlinks unsupported: %v", err)
	}
	ws, err := find(t, dir, workspace.Locate{Start: link})
	assert.NilError(t, err)
	assert.DeepEqual(t, ws, claim.Workspace{Root: filepath.Join(dir, "real"), BeadsDir: filepath.Join(dir, "real/.beads"),
		DBPath: filepath.Join(dir, "real/.beads/beads.db"), Source: "walk"})
}

// Without a git root the walk goes up to the filesystem root and gives up.
func TestFindWorkspaceWalkReachesFilesystemRoot(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"a/b/": ""})
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, ".beads")); err == nil {
			t.Skipf("%s has a .beads above the temp dir", p)
		}
		if _, err := os.Stat(filepath.Join(p, ".git")); err == nil {
			t.Skipf("%s has a .git above the temp dir", p)
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	_, err := find(t, dir, workspace.Locate{Start: filepath.Join(dir, "a/b")})
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspace)
	assert.ErrorContains(t, err, "no .beads directory in")
}

// The workspace found for a real bd fixture opens and claims.
func TestFindWorkspaceOnFixtureOpens(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	real, err := filepath.EvalSymlinks(root)
	assert.NilError(t, err)
	assert.NilError(t, os.MkdirAll(filepath.Join(root, "cmd", "tool"), 0o755))
	ws, err := find(t, root, workspace.Locate{Start: filepath.Join(root, "cmd", "tool")})
	assert.NilError(t, err)
	assert.Equal(t, ws.DBPath, filepath.Join(real, ".beads", "beads.db"))
	assert.Equal(t, ws.Root, real)
	s := conformance.OpenAt(t, root, env(), claim.Options{})
	assert.Equal(t, s.Workspace, ws)
}

// A redirect that cannot be read is an error, not a silent fall-back to the
// local database.
func TestFindWorkspaceUnreadableRedirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	beads := filepath.Join(dir, ".beads")
	assert.NilError(t, os.Mkdir(beads, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(beads, "beads.db"), nil, 0o644))
	assert.NilError(t, os.Symlink("redirect", filepath.Join(beads, "redirect"))) // a loop: open fails with ELOOP
	_, err := workspace.Find(workspace.Locate{Start: dir, Getenv: func(string) string { return "" }})
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspace)
	assert.ErrorContains(t, err, "cannot read "+filepath.Join(beads, "redirect"))
}
