package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

var (
	doltRuns  = flag.Int("dolt-runs", 0, "runs of each single Dolt claim (bd-claim, bd update --claim, bd ready --claim) per size (default 10, 3 with -quick)")
	doltOnly  = flag.Bool("dolt-only", false, "run only the Dolt section (5)")
	swarmDolt = flag.Int("dolt-swarm", 60, "ready issues each 24-process Dolt swarm drains (bd-claim, then bd ready --claim)")
)

// doltBench is section 5: bd v1.3.0 in Dolt server mode, over loopback, on
// one throwaway dolt sql-server. Single claims of bd-claim, `bd update
// --claim` and `bd ready --claim` interleaved on the same database (1k and
// 10k issues), then 24 bd-claim processes draining a database next to 24
// `bd ready --claim` processes draining another.
func (b *bench) dolt() error {
	const sec = "5. Dolt server mode (bd v1.3.0, dolt 2.2.0, loopback)"
	if _, err := os.Stat(claimtest.DoltBin()); err != nil {
		logf("no %s (make dolt): the Dolt rows are skipped", claimtest.DoltBin())
		b.add(row{sec, "skipped: `make dolt` was not run", "", "", "", "", ""})
		return nil
	}
	if *doltRuns <= 0 {
		*doltRuns = 10
		if *quick {
			*doltRuns = 3
		}
	}
	srv, err := claimtest.StartDolt(filepath.Join(b.tmp, "dolt"))
	if err != nil {
		return err
	}
	defer srv.Stop()
	d := &doltBench{b: b, srv: srv}
	floorBin := filepath.Join(b.tmp, "doltfloor")
	if out, err := exec.Command("go", "build", "-o", floorBin, "./scripts/bench/doltfloor").CombinedOutput(); err != nil {
		return fmt.Errorf("build the minimal Dolt claim program: %v\n%s", err, out)
	}
	for _, n := range []int{sizeSmall, sizeMid} {
		ws, err := d.workspace(fmt.Sprintf("s%d", n/1000), n)
		if err != nil {
			return err
		}
		var mine, floor, update, ready []time.Duration
		for i := range *doltRuns {
			agent := fmt.Sprintf("bench-%d", i)
			t, out, err := ws.run(b.bin, agent, "--agent", agent, "--quiet")
			if err != nil {
				return fmt.Errorf("bd-claim: %v: %s", err, out)
			}
			mine = append(mine, t)
			if t, out, err = ws.run(floorBin, agent, ws.dsn, agent+"-floor"); err != nil {
				return fmt.Errorf("doltfloor: %v: %s", err, out)
			}
			floor = append(floor, t)
			id := ws.ids[len(ws.ids)-1-i] // one bd-claim's priority order does not reach soon
			if t, out, err = ws.run(claimtest.BdDoltBin(), agent, "update", id, "--claim", "--json"); err != nil {
				return fmt.Errorf("bd update --claim: %v: %s", err, out)
			}
			update = append(update, t)
			if t, out, err = ws.run(claimtest.BdDoltBin(), agent+"-bd", "ready", "--claim", "--json"); err != nil {
				return fmt.Errorf("bd ready --claim: %v: %s", err, out)
			}
			ready = append(ready, t)
		}
		m := median(mine)
		b.add(row{sec, fmt.Sprintf("one claim process, %s issues (median of %d, interleaved)", sizeName(n), *doltRuns), ms(m),
			"`bd ready --claim` " + ms(median(ready)) + "; `bd update --claim` " + ms(median(update)),
			x(float64(median(ready))/float64(m)) + " faster than `bd ready --claim`", "", ""}) // context: the floor below is the target
		budget := median(ready) / 10
		b.add(row{sec, fmt.Sprintf("minimal Dolt claim program (scripts/bench/doltfloor: bd's writes, none of bd ready's rules), %s issues (median of %d, interleaved)", sizeName(n), *doltRuns),
			ms(median(floor)), fmt.Sprintf("the 10× target's budget, `bd ready --claim` ÷ 10: %s; bd-claim %s", ms(budget), ms(m)),
			x(float64(median(floor))/float64(budget)) + " the budget", "", ""})
		b.add(row{sec, fmt.Sprintf("one claim process vs the minimal Dolt claim program, %s issues", sizeName(n)), ms(m),
			"doltfloor " + ms(median(floor)), x(float64(m) / float64(median(floor))), "≤ 1.2×", verdict(float64(m) <= 1.2*float64(median(floor)))})
	}
	mine, err := d.swarm("sw1", func(ws *doltWorkspace, w int) ([]string, bool, error) {
		agent := fmt.Sprintf("swarm-%02d", w)
		_, out, err := ws.run(b.bin, agent, "--agent", agent, "--quiet")
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			return nil, false, nil
		} else if errors.As(err, &ee) && ee.ExitCode() == 4 {
			return nil, true, errBusy
		} else if err != nil {
			return nil, false, fmt.Errorf("%v: %s", err, out)
		}
		var o struct{ Issue struct{ ID string } }
		err = json.Unmarshal(out, &o)
		return []string{o.Issue.ID}, true, err
	})
	if err != nil {
		return err
	}
	theirs, err := d.swarm("sw2", func(ws *doltWorkspace, w int) ([]string, bool, error) {
		agent := fmt.Sprintf("bd-%02d", w)
		_, out, err := ws.run(claimtest.BdDoltBin(), agent, "ready", "--claim", "--json")
		if err != nil {
			return nil, false, fmt.Errorf("%v: %s", err, out)
		}
		var o []struct{ ID string }
		if err := json.Unmarshal(out, &o); err != nil || len(o) == 0 {
			return nil, false, err
		}
		return []string{o[0].ID}, true, nil
	})
	if err != nil {
		return err
	}
	b.add(row{sec, fmt.Sprintf("24 processes drain %d ready issues: bd-claim", *swarmDolt), mine.summary(),
		"24 `bd ready --claim` processes: " + theirs.summary(), x(mine.rate()/theirs.rate()) + " the throughput", "≥ 5×, 0 duplicates",
		verdict(mine.rate() >= 5*theirs.rate() && mine.dups == 0 && theirs.dups == 0)})
	return nil
}

type doltBench struct {
	b   *bench
	srv *claimtest.DoltServer
}

// doltWorkspace is a `bd init --server` workspace on the bench's server
// with n open issues.
type doltWorkspace struct {
	dir string
	dsn string // its database on the bench's server
	env []string
	ids []string // by priority, then age
}

func (d *doltBench) workspace(prefix string, n int) (*doltWorkspace, error) {
	dir := filepath.Join(d.b.tmp, "dolt-"+prefix)
	ws := &doltWorkspace{dir: dir, env: []string{"HOME=" + d.srv.Home, "PATH=" + os.Getenv("PATH"), "TZ=UTC",
		"BD_DISABLE_METRICS=1", "DO_NOT_TRACK=1", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid"}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"git", "init", "-q"}, {claimtest.BdDoltBin(), "init", "--server", "--server-host", "127.0.0.1",
		"--server-port", strconv.Itoa(d.srv.Port), "--server-user", "root", "--prefix", prefix, "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, ws.env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".beads", "dolt-server.port"), []byte(strconv.Itoa(d.srv.Port)), 0o644); err != nil {
		return nil, err
	}
	ws.dsn = d.srv.DSN(prefix)
	conn, err := sql.Open("mysql", ws.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	created := time.Now().UTC().Add(-time.Hour)
	for start := 0; start < n; start += 500 {
		var vals []string
		var args []any
		for i := start; i < min(start+500, n); i++ {
			id := fmt.Sprintf("%s-b%05d", prefix, i)
			vals = append(vals, "(?, ?, '', '', '', '', ?, 'task', ?, ?, ?)")
			args = append(args, id, "bench issue "+strconv.Itoa(i), i%5, created.Add(time.Duration(i)*time.Second), created, i+1)
		}
		if _, err := conn.Exec("INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, created_at, updated_at, row_lock) VALUES "+strings.Join(vals, ", "), args...); err != nil {
			return nil, err
		}
	}
	if _, err := conn.Exec("CALL DOLT_COMMIT('-Am', 'bench issues')"); err != nil {
		return nil, err
	}
	rows, err := conn.Query("SELECT id FROM issues ORDER BY priority, created_at, id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ws.ids = append(ws.ids, id)
	}
	return ws, rows.Err()
}

// run runs a command in the workspace as actor and times it. It returns
// the standard output, or on failure both outputs.
func (ws *doltWorkspace) run(bin, actor string, args ...string) (time.Duration, []byte, error) {
	cmd := exec.Command(bin, args...)
	var out, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = ws.dir, append(slices.Clone(ws.env), "BEADS_ACTOR="+actor), &out, &stderr
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		out.Write(stderr.Bytes())
	}
	return d, out.Bytes(), err
}

// doltSwarm is what one 24-process drain measured.
type doltSwarm struct {
	wall               time.Duration
	lat                []time.Duration
	claims, dups, busy int
	errs               []string
}

// errBusy is a claim process's exit 4 (retry later): the worker tries
// again, as an agent does, and the swarm counts it.
var errBusy = errors.New("busy")

func (s *doltSwarm) rate() float64 { return float64(s.claims) / s.wall.Seconds() }

func (s *doltSwarm) summary() string {
	e := fmt.Sprintf("%d errors", len(s.errs))
	if len(s.errs) > 0 {
		e += " (" + strings.ReplaceAll(strings.TrimSpace(s.errs[0]), "\n", " ")[:min(80, len(strings.TrimSpace(s.errs[0])))] + ")"
	}
	return fmt.Sprintf("%.1f claims/s (%d in %s), p50 %s, p99 %s, %d duplicates, %d busy (tried again), %s", s.rate(), s.claims, s.wall.Round(time.Millisecond),
		ms(pct(s.lat, 50)), ms(pct(s.lat, 99)), s.dups, s.busy, e)
}

// swarm makes a workspace of -dolt-swarm issues and runs 24 workers, each
// calling claim until it reports nothing left or an error.
func (d *doltBench) swarm(prefix string, claim func(ws *doltWorkspace, worker int) ([]string, bool, error)) (*doltSwarm, error) {
	ws, err := d.workspace(prefix, *swarmDolt)
	if err != nil {
		return nil, err
	}
	res := &doltSwarm{}
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 24 {
		wg.Go(func() {
			for {
				t0 := time.Now()
				ids, more, err := claim(ws, w)
				mu.Lock()
				if errors.Is(err, errBusy) {
					res.busy++
					mu.Unlock()
					continue
				}
				if err != nil {
					res.errs = append(res.errs, err.Error())
				}
				for _, id := range ids {
					res.lat = append(res.lat, time.Since(t0))
					res.claims++
					if seen[id] {
						res.dups++
					}
					seen[id] = true
				}
				mu.Unlock()
				if !more || err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	return res, nil
}
