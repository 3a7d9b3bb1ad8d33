package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

var (
	embeddedOnly  = flag.Bool("embedded-only", false, "run only the embedded Dolt section (6)")
	embeddedBin   = flag.String("embedded-bin", ".bin/bd-claim-embedded", "the embedded build of bd-claim (make embedded); section 6 is skipped when missing")
	embeddedRuns  = flag.Int("embedded-runs", 0, "runs of each single embedded claim (bd-claim, the floor, bd update --claim, bd ready --claim) per size (default 10, 3 with -quick)")
	embeddedDrain = flag.Int("embedded-drain", 0, "ready issues each 16-process embedded drain claims (default 48, 16 with -quick)")
)

// embeddedProcs is how many processes drain an embedded workspace at once.
const embeddedProcs = 16

// embeddedTags are the embedded build's tags (the Makefile's EMBEDDED_TAGS).
const embeddedTags = "embedded,gms_pure_go"

// embedded is section 6: bd v1.3.0's default mode, the Dolt engine
// embedded in each process that opens the database, one process at a time.
// Single claims of the embedded build, its floor (scripts/bench/
// embeddedfloor), `bd update --claim` and `bd ready --claim` interleaved at
// 1k and 10k issues, each on a fresh copy of the same seeded workspace (a
// claim's cost then depends on nothing the others did before it), with
// where the floor's time goes; then 16 bd-claim processes draining a
// workspace next to 16 `bd ready --claim` processes draining its twin, and
// 16 floor processes a third; then the default build's size and links.
func (b *bench) embedded() error {
	const sec = "6. Dolt embedded mode (bd v1.3.0, embedded engine)"
	start := time.Now()
	bin, err := filepath.Abs(*embeddedBin)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range []string{bin, claimtest.BdDoltBin(), claimtest.DoltBin()} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		logf("no %s (make embedded, make dolt): the embedded Dolt rows are skipped", strings.Join(missing, ", "))
		b.add(row{sec, "skipped: `make embedded` or `make dolt` was not run", "", "", "", "", ""})
		return b.defaultBuild(sec, bin)
	}
	if *embeddedRuns <= 0 {
		*embeddedRuns = 10
		if *quick {
			*embeddedRuns = 3
		}
	}
	if *embeddedDrain <= 0 {
		*embeddedDrain = 48
		if *quick {
			*embeddedDrain = 16
		}
	}
	e := &embeddedBench{b: b, bin: bin, dir: filepath.Join(b.tmp, "embedded")}
	if err := e.init(); err != nil {
		return err
	}
	seeded := map[int]time.Duration{}
	for _, n := range []int{sizeSmall, sizeMid} {
		t0 := time.Now()
		t, err := e.template(sizeName(n), n)
		if err != nil {
			return err
		}
		seeded[n] = time.Since(t0)
		if err := e.singles(sec, t, n); err != nil {
			return err
		}
	}
	if err := e.drains(sec); err != nil {
		return err
	}
	if err := b.defaultBuild(sec, bin); err != nil {
		return err
	}
	b.notes = append(b.notes, fmt.Sprintf("Section 6: embedded workspaces made by bd v1.3.0's `bd init` (%s) and seeded with the dolt CLI (1k %s, 10k %s); the section took %s.",
		e.initTime.Round(time.Millisecond), seeded[sizeSmall].Round(time.Millisecond), seeded[sizeMid].Round(time.Millisecond), time.Since(start).Round(time.Second)))
	return nil
}

// embeddedBench is section 6's tools, environment and workspaces.
type embeddedBench struct {
	b        *bench
	bin      string // the embedded build of bd-claim
	floor    string // scripts/bench/embeddedfloor, built with the same tags
	dir      string // everything of the section, under the bench's temp dir
	env      []string
	base     string // a `bd init` workspace without issues, copied for each template
	db       string // its database's name (metadata.json dolt_database)
	initTime time.Duration
	copies   int // names each fresh copy
}

// embeddedTemplate is a seeded workspace, copied for each run.
type embeddedTemplate struct {
	dir string
	ids []string // bd ready's order: priority, created_at, id
}

// init builds the floor and makes the base workspace: `git init`, then a
// plain `bd init` (embedded, bd v1.3.0's default) with the environment of
// the tests' EmbeddedWorkspace, and a HOME whose dolt config has an
// identity (the seeding's Dolt commit needs one) and metrics off.
func (e *embeddedBench) init() error {
	e.floor = filepath.Join(e.dir, "embeddedfloor")
	build := exec.Command("go", "build", "-tags", embeddedTags, "-o", e.floor, "./scripts/bench/embeddedfloor")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the minimal embedded claim program: %v\n%s", err, out)
	}
	home := filepath.Join(e.dir, "home")
	e.base = filepath.Join(e.dir, "base")
	for _, d := range []string{home, e.base} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	gitconfig := "[user]\n\tname = bd-bench\n\temail = bd-bench@example.invalid\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return err
	}
	e.env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TZ=UTC",
		"BD_DISABLE_METRICS=1", "DO_NOT_TRACK=1", "DOLT_METRICS_DISABLED=1", "BD_NO_PAGER=1", "NO_COLOR=1", "GIT_CONFIG_NOSYSTEM=1"}
	for _, kv := range [][2]string{{"user.name", "bd-bench"}, {"user.email", "bd-bench@example.invalid"}, {"metrics.disabled", "true"}} {
		if out, err := e.run(home, claimtest.DoltBin(), "", "config", "--global", "--add", kv[0], kv[1]); err != nil {
			return fmt.Errorf("dolt config %s: %v: %s", kv[0], err, out)
		}
	}
	t0 := time.Now()
	for _, args := range [][]string{{"git", "init", "-q"}, {claimtest.BdDoltBin(), "init", "--prefix", "eb", "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet"}} {
		if out, err := e.run(e.base, args[0], "bench-init", args[1:]...); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	e.initTime = time.Since(t0)
	meta, err := os.ReadFile(filepath.Join(e.base, ".beads", "metadata.json"))
	if err != nil {
		return err
	}
	var m struct {
		Mode     string `json:"dolt_mode"`
		Database string `json:"dolt_database"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		return fmt.Errorf("metadata.json: %w", err)
	}
	if m.Mode != "embedded" || m.Database == "" {
		return fmt.Errorf("bd init made no embedded workspace: metadata.json %s", meta)
	}
	e.db = m.Database
	return nil
}

// run runs bin in dir as actor ("" for none). It returns the standard
// output, or on failure both outputs.
func (e *embeddedBench) run(dir, bin, actor string, args ...string) ([]byte, error) {
	p := e.run2(dir, bin, actor, args...)
	if p.err != nil {
		return append(p.out, p.stderr...), p.err
	}
	return p.out, nil
}

// proc is one process that run2 ran: its wall and CPU time (user and
// system: on a machine shared with other work the CPU time says what the
// process did, the wall time also what it waited for), both outputs, and
// how it ended.
type proc struct {
	wall, cpu   time.Duration
	out, stderr []byte
	err         error
}

// run2 runs bin in dir as actor ("" for none) and times it.
func (e *embeddedBench) run2(dir, bin, actor string, args ...string) proc {
	cmd := exec.Command(bin, args...)
	var out, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, slices.Clone(e.env), &out, &stderr
	if actor != "" {
		cmd.Env = append(cmd.Env, "BEADS_ACTOR="+actor)
	}
	t0 := time.Now()
	err := cmd.Run()
	p := proc{wall: time.Since(t0), out: out.Bytes(), stderr: stderr.Bytes(), err: err}
	if cmd.ProcessState != nil {
		p.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return p
}

// dbDir is the database directory of the workspace at ws.
func (e *embeddedBench) dbDir(ws string) string {
	return filepath.Join(ws, ".beads", "embeddeddolt", e.db)
}

// template copies the base workspace and seeds it with n open issues
// through the dolt CLI (batched INSERTs with bd's column defaults, as the
// tests' doltIssues, then one Dolt commit): priority i mod 5, created one
// second apart, so bd ready's order is known without asking.
func (e *embeddedBench) template(name string, n int) (*embeddedTemplate, error) {
	t := &embeddedTemplate{dir: filepath.Join(e.dir, "tmpl-"+name)}
	if out, err := exec.Command("cp", "-a", e.base, t.dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy the base workspace: %v: %s", err, out)
	}
	var sqlText strings.Builder
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type issue struct {
		id   string
		prio int
	}
	var issues []issue
	for start := 0; start < n; start += 500 {
		var vals []string
		for i := start; i < min(start+500, n); i++ {
			id := fmt.Sprintf("eb-b%05d", i)
			at := created.Add(time.Duration(i) * time.Second).Format("2006-01-02 15:04:05")
			vals = append(vals, fmt.Sprintf("('%s', 'bench issue %d', '', '', '', '', %d, 'task', '%s', '%s', %d)", id, i, i%5, at, at, i+1))
			issues = append(issues, issue{id, i % 5})
		}
		sqlText.WriteString("INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, created_at, updated_at, row_lock) VALUES " +
			strings.Join(vals, ", ") + ";\n")
	}
	sqlText.WriteString("CALL DOLT_COMMIT('-Am', 'seed');\n")
	cmd := exec.Command(claimtest.DoltBin(), "sql")
	cmd.Dir, cmd.Env, cmd.Stdin = e.dbDir(t.dir), e.env, strings.NewReader(sqlText.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("seed %s: %v: %s", name, err, out)
	}
	// Ids ascend with created_at: a stable sort by priority is bd's order.
	slices.SortStableFunc(issues, func(a, b issue) int { return a.prio - b.prio })
	for _, is := range issues {
		t.ids = append(t.ids, is.id)
	}
	return t, nil
}

// copyOf is a fresh copy of template t (cp -a), for one run.
func (e *embeddedBench) copyOf(t *embeddedTemplate) (string, error) {
	e.copies++
	dir := filepath.Join(e.dir, fmt.Sprintf("run-%d", e.copies))
	if out, err := exec.Command("cp", "-a", t.dir, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy %s: %v: %s", t.dir, err, out)
	}
	return dir, nil
}

// single runs one command on a fresh copy of t and times it; it checks
// that the command claimed want (the claims compared do the same work).
func (e *embeddedBench) single(t *embeddedTemplate, what, want, bin, actor string, args ...string) (proc, error) {
	dir, err := e.copyOf(t)
	if err != nil {
		return proc{}, err
	}
	defer os.RemoveAll(dir)
	if bin == e.floor {
		args = append(args[:len(args):len(args)], filepath.Join(dir, ".beads", "embeddeddolt"), e.db, actor)
	}
	p := e.run2(dir, bin, actor, args...)
	if p.err != nil {
		return p, fmt.Errorf("%s: %v: %s%s", what, p.err, p.out, p.stderr)
	}
	var got string
	var one struct{ Issue struct{ ID string } }
	var list []struct{ ID string }
	switch {
	case bin == e.floor:
		got = strings.TrimSpace(string(p.out))
	case json.Unmarshal(p.out, &list) == nil && len(list) == 1:
		got = list[0].ID
	case json.Unmarshal(p.out, &one) == nil:
		got = one.Issue.ID
	}
	if got != want {
		return p, fmt.Errorf("%s claimed %q, want %q: %s", what, got, want, p.out)
	}
	return p, nil
}

// samples is the wall and CPU times of a command's runs.
type samples struct{ wall, cpu []time.Duration }

func (s *samples) add(p proc) {
	s.wall = append(s.wall, p.wall)
	s.cpu = append(s.cpu, p.cpu)
}

// String is the medians: "166.44 ms (CPU 150.12 ms)".
func (s *samples) String() string {
	return fmt.Sprintf("%s (CPU %s)", ms(median(s.wall)), ms(median(s.cpu)))
}

// singles measures one claim process at n issues, interleaved run by run:
// the embedded build, the floor, `bd update ID --claim` (of the last issue
// in bd ready's order) and `bd ready --claim`.
func (e *embeddedBench) singles(sec string, t *embeddedTemplate, n int) error {
	var mine, floor, update, ready samples
	floorPhases := []string{"open", "read", "write", "commit", "dolt", "close"} // the floor's names, in order
	phases := map[string][]time.Duration{}
	last := t.ids[len(t.ids)-1]
	for i := range *embeddedRuns {
		agent := fmt.Sprintf("bench-%d", i)
		p, err := e.single(t, "bd-claim", t.ids[0], e.bin, agent, "--agent", agent, "--quiet")
		if err != nil {
			return err
		}
		mine.add(p)
		if p, err = e.single(t, "embeddedfloor", t.ids[0], e.floor, agent+"-floor", "-phases"); err != nil {
			return err
		}
		floor.add(p)
		var ph map[string]float64
		if err := json.Unmarshal(p.stderr, &ph); err != nil {
			return fmt.Errorf("embeddedfloor's phases: %v: %s", err, p.stderr)
		}
		inside := time.Duration(0)
		for _, name := range floorPhases {
			d := time.Duration(ph[name] * 1e6)
			phases[name] = append(phases[name], d)
			inside += d
		}
		phases["start"] = append(phases["start"], p.wall-inside)
		if p, err = e.single(t, "bd update --claim", last, claimtest.BdDoltBin(), agent+"-up", "update", last, "--claim", "--json"); err != nil {
			return err
		}
		update.add(p)
		if p, err = e.single(t, "bd ready --claim", t.ids[0], claimtest.BdDoltBin(), agent+"-bd", "ready", "--claim", "--json"); err != nil {
			return err
		}
		ready.add(p)
	}
	m, f, r, u := median(mine.wall), median(floor.wall), median(ready.wall), median(update.wall)
	cpu := func(a, b samples) string { return x(float64(median(a.cpu))/float64(median(b.cpu))) + " in CPU" }
	size := sizeName(n)
	b := e.b
	b.add(row{sec, fmt.Sprintf("one claim process (bd-claim-embedded), %s issues (median of %d, interleaved, each run on a fresh copy)", size, *embeddedRuns), mine.String(),
		"`bd ready --claim` " + ready.String(), x(float64(r)/float64(m)) + " faster than `bd ready --claim` (" + cpu(ready, mine) + ")", "≥ 3×", verdict(float64(r) >= 3*float64(m))})
	b.add(row{sec, fmt.Sprintf("reference: `bd update ID --claim`, %s issues (median of %d)", size, *embeddedRuns), update.String(),
		"bd-claim " + ms(m), "bd-claim " + x(float64(u)/float64(m)) + " faster", "", ""})
	b.add(row{sec, fmt.Sprintf("minimal embedded claim program (scripts/bench/embeddedfloor: one open, a plain ready read, bd's writes and Dolt commit), %s issues (median of %d, interleaved)", size, *embeddedRuns),
		floor.String(), "bd-claim " + ms(m), "bd-claim " + x(float64(m)/float64(f)) + " the floor (" + cpu(mine, floor) + ")", "≤ 1.1×", verdict(float64(m) <= 1.1*float64(f))})
	names := map[string]string{"start": "process start, init and exit", "open": "engine open", "read": "ready read", "write": "writes",
		"commit": "SQL commit", "dolt": "DOLT_ADD + DOLT_COMMIT", "close": "engine close"}
	var parts []string
	for _, p := range append([]string{"start"}, floorPhases...) {
		parts = append(parts, names[p]+" "+ms(median(phases[p])))
	}
	b.add(row{sec, fmt.Sprintf("where the floor's time goes, %s issues (median of each phase; the start is the wall time less the phases timed inside)", size),
		strings.Join(parts, ", "), "floor " + ms(f), "", "", ""})
	return nil
}

// embeddedDrainResult is what one 16-process drain measured.
type embeddedDrainResult struct {
	wall    time.Duration
	cpu     time.Duration // of every process of the drain
	runs    int
	lat     []time.Duration // of each claim
	claimed map[string][]string
	dups    int
	fails   map[string]int // by kind
	aborted bool
	inDB    string // what the database says after the drain
	dbOK    bool
}

func (r *embeddedDrainResult) claims() int {
	n := 0
	for _, agents := range r.claimed {
		n += len(agents)
	}
	return n
}

func (r *embeddedDrainResult) rate() float64 { return float64(r.claims()) / r.wall.Seconds() }

func (r *embeddedDrainResult) failures() int {
	n := 0
	for _, c := range r.fails {
		n += c
	}
	return n
}

func (r *embeddedDrainResult) summary() string {
	fails := "0 failures"
	if len(r.fails) > 0 {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(r.fails)) {
			kinds = append(kinds, fmt.Sprintf("%d × %s", r.fails[k], k))
		}
		fails = fmt.Sprintf("%d failures (%s)", r.failures(), strings.Join(kinds, "; "))
	}
	if r.aborted {
		fails += ", stopped after 100 failures"
	}
	return fmt.Sprintf("%.2f claims/s (%d in %s), p50 %s, p99 %s, CPU %s per process (%d processes), %d duplicates, %s; %s",
		r.rate(), r.claims(), r.wall.Round(time.Millisecond), ms(pct(r.lat, 50)), ms(pct(r.lat, 99)),
		ms(r.cpu/time.Duration(max(r.runs, 1))), r.runs, r.dups, fails, r.inDB)
}

// drains makes one workspace of -embedded-drain ready issues and twin
// copies of it: 16 bd-claim processes drain one, 16 `bd ready --claim`
// processes another, each process claiming again until nothing is left
// (bd-claim and the floor exit 3; bd prints an empty list and exits 0),
// and 16 floor processes a third.
func (e *embeddedBench) drains(sec string) error {
	t, err := e.template("drain", *embeddedDrain)
	if err != nil {
		return err
	}
	mine, err := e.drain(t, "drain-%02d", e.bin, func(_, agent string) []string { return []string{"--agent", agent, "--quiet"} },
		func(p proc) (string, bool, string) {
			var ee *exec.ExitError
			isExit := errors.As(p.err, &ee)
			if isExit && ee.ExitCode() == 3 {
				return "", true, ""
			}
			var o struct {
				Issue struct{ ID string }
				Error struct{ Code string }
			}
			jerr := json.Unmarshal(p.out, &o)
			switch {
			case isExit:
				return "", false, fmt.Sprintf("exit %d %s", ee.ExitCode(), o.Error.Code)
			case p.err != nil:
				return "", false, p.err.Error()
			case jerr != nil || o.Issue.ID == "":
				return "", false, fmt.Sprintf("exit 0 without an issue: %.60s", p.out)
			}
			return o.Issue.ID, false, ""
		})
	if err != nil {
		return err
	}
	theirs, err := e.drain(t, "bd-%02d", claimtest.BdDoltBin(), func(string, string) []string { return []string{"ready", "--claim", "--json"} },
		func(p proc) (string, bool, string) {
			var list []struct{ ID string }
			jerr := json.Unmarshal(p.out, &list)
			switch {
			case p.err != nil:
				return "", false, failKind(p.err, p.stderr)
			case jerr != nil || len(list) > 1:
				return "", false, fmt.Sprintf("exit 0, printed %.60s", p.out)
			case len(list) == 0:
				return "", true, ""
			}
			return list[0].ID, false, ""
		})
	if err != nil {
		return err
	}
	// The floor drains a third twin: what one process per claim can do
	// here, whatever the tool (it waits for the engine with the driver's
	// backoff, bd-claim in its writers' queue).
	floor, err := e.drain(t, "floor-%02d", e.floor, func(dir, agent string) []string {
		return []string{filepath.Join(dir, ".beads", "embeddeddolt"), e.db, agent}
	}, func(p proc) (string, bool, string) {
		var ee *exec.ExitError
		switch {
		case errors.As(p.err, &ee) && ee.ExitCode() == 3:
			return "", true, ""
		case p.err != nil:
			return "", false, failKind(p.err, p.stderr)
		}
		return strings.TrimSpace(string(p.out)), false, ""
	})
	if err != nil {
		return err
	}
	b := e.b
	b.add(row{sec, fmt.Sprintf("%d processes drain %d ready issues: bd-claim-embedded", embeddedProcs, *embeddedDrain), mine.summary(),
		fmt.Sprintf("%d `bd ready --claim` processes on a twin: %s", embeddedProcs, theirs.summary()), x(mine.rate()/theirs.rate()) + " the throughput",
		"≥ 3×", verdict(mine.rate() >= 3*theirs.rate())})
	b.add(row{sec, fmt.Sprintf("%d minimal embedded claim programs (embeddedfloor) drain a third twin", embeddedProcs), floor.summary(),
		fmt.Sprintf("bd-claim %.2f claims/s, bd %.2f", mine.rate(), theirs.rate()),
		fmt.Sprintf("bd-claim %.0f%% of its rate, bd %.0f%%", 100*mine.rate()/floor.rate(), 100*theirs.rate()/floor.rate()), "", ""})
	b.add(row{sec, "the drains' duplicates (an id printed twice; a second claimed event of one issue in the database)",
		fmt.Sprintf("bd-claim %d, bd %d", mine.dups, theirs.dups), fmt.Sprintf("checked with `dolt sql` after each drain: bd-claim %s, bd %s, floor %s", okWord(mine.dbOK), okWord(theirs.dbOK), okWord(floor.dbOK)),
		"", "0, every claim in the database", verdict(mine.dups == 0 && theirs.dups == 0 && mine.dbOK && theirs.dbOK)})
	return nil
}

func okWord(ok bool) string {
	if ok {
		return "as printed"
	}
	return "NOT as printed"
}

// failKind names a failed run of bd: its exit status and the first line
// of what it printed, digits masked so that one kind counts once.
func failKind(err error, stderr []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(stderr)), "\n")
	line = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, line)
	return fmt.Sprintf("%v: %.80s", err, line)
}

// drain runs embeddedProcs workers on a fresh copy of t, each running bin
// (as the agent named by agentFormat and its number, with args) until read
// says nothing is left. A failed run is counted by kind and the worker
// tries again, as an orchestrator would; the drain stops after 100
// failures. Then the dolt CLI checks the database: every issue printed is
// in_progress, assigned to the agent that printed it, with one claimed
// event, and no other issue is.
func (e *embeddedBench) drain(t *embeddedTemplate, agentFormat, bin string, args func(dir, agent string) []string,
	read func(proc) (id string, done bool, fail string)) (*embeddedDrainResult, error) {
	dir, err := e.copyOf(t)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &embeddedDrainResult{claimed: map[string][]string{}, fails: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failures atomic.Int64
	start := time.Now()
	for w := range embeddedProcs {
		agent := fmt.Sprintf(agentFormat, w)
		wg.Go(func() {
			for failures.Load() < 100 {
				p := e.run2(dir, bin, agent, args(dir, agent)...)
				id, done, fail := read(p)
				mu.Lock()
				res.runs++
				res.cpu += p.cpu
				switch {
				case done:
				case fail != "":
					res.fails[fail]++
					failures.Add(1)
				default:
					res.lat = append(res.lat, p.wall)
					if len(res.claimed[id]) > 0 {
						res.dups++
					}
					res.claimed[id] = append(res.claimed[id], agent)
				}
				mu.Unlock()
				if done {
					return
				}
			}
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	res.aborted = failures.Load() >= 100
	held, err := e.query(dir, "SELECT i.id, i.assignee, (SELECT count(*) FROM events e WHERE e.issue_id = i.id AND e.event_type = 'claimed') AS claims FROM issues i WHERE i.status = 'in_progress' ORDER BY i.id")
	if err != nil {
		return nil, err
	}
	left, err := e.query(dir, "SELECT count(*) FROM issues WHERE status = 'open' AND (assignee IS NULL OR assignee = '')")
	if err != nil {
		return nil, err
	}
	res.dbOK = len(held) == len(res.claimed) && res.dups == 0
	for _, r := range held {
		if agents := res.claimed[r[0]]; len(agents) != 1 || agents[0] != r[1] || r[2] != "1" {
			res.dbOK = false
		}
	}
	res.inDB = fmt.Sprintf("in the database: %d in_progress, %s left open", len(held), left[0][0])
	return res, nil
}

// query runs a query with the dolt CLI in the database of workspace ws and
// returns its rows (CSV, header dropped).
func (e *embeddedBench) query(ws, q string) ([][]string, error) {
	out, err := e.run(e.dbDir(ws), claimtest.DoltBin(), "", "sql", "-r", "csv", "-q", q)
	if err != nil {
		return nil, fmt.Errorf("dolt sql -q %q: %v: %s", q, err, out)
	}
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("dolt sql -q %q printed %q: %v", q, out, err)
	}
	return rows[1:], nil
}

// defaultBuild reports the default build (-bin): its size against the
// binary before (.bin/bd-claim-old beside it, when present), and that it
// links none of the Dolt driver's modules (go version -m), which only the
// embedded build carries.
func (b *bench) defaultBuild(sec, embeddedBin string) error {
	out, err := exec.Command("go", "version", "-m", b.bin).Output()
	if err != nil {
		return fmt.Errorf("go version -m %s: %v", b.bin, err)
	}
	dolthub := 0
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "dolthub") {
			dolthub++
		}
	}
	size := func(p string) (float64, bool) {
		fi, err := os.Stat(p)
		if err != nil {
			return 0, false
		}
		return float64(fi.Size()) / 1e6, true
	}
	mine, _ := size(b.bin)
	var compared []string
	ratio, target, ok := "", "no dolthub module", dolthub == 0
	if old, found := size(filepath.Join(filepath.Dir(b.bin), "bd-claim-old")); found {
		compared = append(compared, fmt.Sprintf("the binary before (bd-claim-old) %.2f MB", old))
		ratio = x(mine/old) + " its size"
		target += ", ≤ 1.05× the size before"
		ok = ok && mine <= 1.05*old
	}
	if emb, found := size(embeddedBin); found {
		compared = append(compared, fmt.Sprintf("the embedded build %.2f MB", emb))
	}
	b.add(row{sec, "the default build (" + filepath.Base(b.bin) + "): its size, and the Dolt driver's modules it links (lines of `go version -m` naming dolthub)",
		fmt.Sprintf("%.2f MB, %d dolthub modules", mine, dolthub), strings.Join(compared, "; "), ratio, target, verdict(ok)})
	return nil
}
