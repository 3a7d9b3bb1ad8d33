package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	beadssql "github.com/bdclaim/bd-claim/sql"
)

// runDemo builds a workspace from the vendored schema, lets concurrent
// agents drain it, and checks that every ready issue was claimed exactly once.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("bd-claim demo", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	agents := fs.Int("agents", 8, "concurrent claimers, each with its own connection")
	issues := fs.Int("issues", 200, "issues in the generated workspace")
	keep := fs.Bool("keep", false, "keep the workspace and print its path")
	help := fs.BoolP("help", "h", false, "show this help")
	err := fs.Parse(args)
	switch {
	case err != nil:
		err = parseError("bd-claim demo --help", fs, err)
	case *help:
		fmt.Fprint(stdout, "Usage: bd-claim demo [--agents N] [--issues N] [--keep]\n\n"+fs.FlagUsages())
		return ExitClaimed
	case *agents < 1 || *agents > 256 || *issues < 1 || *issues > 100000:
		err = claim.Errorf(claim.EInvalid, "--agents must be 1-256 and --issues 1-100000")
	case fs.NArg() > 0:
		err = claim.Errorf(claim.EInvalid, "unexpected argument %q (see bd-claim demo --help)", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "bd-claim demo: %s: %s\n", claim.EInvalid, claim.ErrorMessage(err))
		return ExitInvalid
	}
	dir, err := os.MkdirTemp("", "bd-claim-demo-")
	if err == nil {
		if !*keep {
			defer os.RemoveAll(dir)
		}
		err = demo(ctx, dir, *agents, *issues, stdout)
	}
	if *keep {
		kept(stdout, dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bd-claim demo: %v\n", err)
		return ExitUnexpected
	}
	return ExitClaimed
}

// demoLooks are commands that look at a kept demo workspace from its
// directory.
var demoLooks = []string{
	"bd-claim stats --human",
	"bd-claim --agent me --dry-run --explain --human",
	"sqlite3 .beads/beads.db 'SELECT id, status, assignee FROM issues'",
}

// kept says where the demo's workspace was kept and how to look at it. It
// is a SQLite workspace of the newest vendored schema, which the SQLite
// bd releases bd-claim is tested with open; bd v1.3 keeps its workspaces
// in Dolt and refuses it.
func kept(w io.Writer, dir string) {
	vs := beadssql.Versions()
	bds := "v" + vs[0]
	if n := len(vs); n > 1 {
		bds = "v" + strings.Join(vs[:n-1], ", v") + " and v" + vs[n-1]
	}
	fmt.Fprintf(w, "workspace kept: %s\n  a SQLite workspace with bd v%s's schema (bd %s open it; bd v1.3 does not). Look at it with:\n    cd %s\n",
		dir, beadssql.SchemaVersion, bds, dir)
	for _, c := range demoLooks {
		fmt.Fprintf(w, "    %s\n", c)
	}
}

func demo(ctx context.Context, dir string, agents, issues int, w io.Writer) error {
	d, err := sqlite.CreateDemo(ctx, dir, issues, 1)
	if err != nil {
		return err
	}
	ws := claim.Workspace{Root: dir, BeadsDir: filepath.Dir(d.Path), DBPath: d.Path, Source: "demo"}
	fmt.Fprintf(w, "workspace: %s, %d ready, %d blocked; %s racing, each working 1ms per claimed issue\n",
		plural(issues, "issue", "issues"), len(d.Ready), len(d.Blocked), plural(agents, "agent", "agents"))
	start := time.Now()
	got, err := race(ctx, ws, agents)
	if err == nil {
		err = report(w, d, got, time.Since(start))
	}
	return err
}

// report prints who got what and the verdict, which is an error when the
// drain went wrong.
func report(w io.Writer, d sqlite.Demo, got [][]string, elapsed time.Duration) error {
	total := 0
	for a, ids := range got {
		total += len(ids)
		fmt.Fprintf(w, "  agent-%-3d claimed %3d  %s\n", a+1, len(ids), preview(ids))
	}
	fmt.Fprintf(w, "%s in %v: %.0f claims/s\n", plural(total, "claim", "claims"), elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	if problems := verdict(d, got); len(problems) > 0 {
		return fmt.Errorf("verdict: FAIL: %s", strings.Join(problems, "; "))
	}
	fmt.Fprintf(w, "verdict: PASS: every ready issue was claimed exactly once (%s), every blocked one left alone (%s)\n",
		plural(len(d.Ready), "ready issue", "ready issues"), plural(len(d.Blocked), "blocked issue", "blocked issues"))
	return nil
}

// race runs agents concurrent claimers, each with its own connection, until
// nothing is left; got[a] lists what agent a+1 claimed.
func race(ctx context.Context, ws claim.Workspace, agents int) (got [][]string, err error) {
	got = make([][]string, agents)
	errs := make([]error, agents)
	var wg sync.WaitGroup
	for a := range agents {
		wg.Go(func() { got[a], errs[a] = drain(ctx, ws, fmt.Sprintf("agent-%d", a+1)) })
	}
	wg.Wait()
	return got, errors.Join(errs...)
}

// verdict lists what went wrong in a drain: a ready issue not claimed
// exactly once, a blocked issue claimed, or a claim of anything else.
func verdict(d sqlite.Demo, got [][]string) []string {
	owner := map[string][]string{}
	total := 0
	for a, ids := range got {
		total += len(ids)
		for _, id := range ids {
			owner[id] = append(owner[id], fmt.Sprintf("agent-%d", a+1))
		}
	}
	var problems []string
	for _, id := range d.Ready {
		if len(owner[id]) != 1 {
			problems = append(problems, fmt.Sprintf("%s claimed %d times %v", id, len(owner[id]), owner[id]))
		}
	}
	for _, id := range d.Blocked {
		if len(owner[id]) != 0 {
			problems = append(problems, fmt.Sprintf("blocked %s claimed by %v", id, owner[id]))
		}
	}
	if total != len(d.Ready) {
		problems = append(problems, fmt.Sprintf("%s for %s", plural(total, "claim", "claims"), plural(len(d.Ready), "ready issue", "ready issues")))
	}
	return problems
}

// drain claims until nothing is left, with a connection of its own.
func drain(ctx context.Context, ws claim.Workspace, agent string) ([]string, error) {
	store, err := engines.Open(ctx, ws, claim.Options{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var ids []string
	for {
		res, err := store.Claim(ctx, claim.Request{Agent: agent, Filters: claim.Filters{OnlyUnassigned: true}})
		if err != nil || res.Issue == nil {
			return ids, err
		}
		ids = append(ids, res.Issue.ID)
		time.Sleep(time.Millisecond) // the agent works on it
	}
}

func preview(ids []string) string {
	if len(ids) > 6 {
		return fmt.Sprintf("%v ...", ids[:6])
	}
	return fmt.Sprint(ids)
}
