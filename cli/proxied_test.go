package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/dolt"
)

// cellsOf reads every column of row id of table as text, by name.
func cellsOf(t *testing.T, conn *sql.DB, table, id string) map[string]string {
	t.Helper()
	rows, err := conn.Query("SELECT * FROM "+table+" WHERE id = ?", id)
	assert.NilError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	assert.NilError(t, err)
	assert.Assert(t, rows.Next(), "no issue %s", id)
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	assert.NilError(t, rows.Scan(vals...))
	out := map[string]string{}
	for i, c := range cols {
		out[c] = fmt.Sprint(*(vals[i].(*any)))
	}
	return out
}

// Twins in proxied-server mode (`bd init --proxied-server`, bd reached
// through its proxy): pairs of issues, one moved by bd, its twin by
// bd-claim, as the same agent. A claim by id (`bd update --claim`) and a
// claim-next (`bd ready --claim`) change the same five cells, write the
// same lease and claimed event, and are each one Dolt commit of one issues
// row and five cells, authored root <root@localhost> as bd's proxied
// commits are, with bd's messages; a release is `bd unclaim`'s commit, and
// a close is `bd close`'s ("bd: close ID"), with the same cells and
// event; a reset's label removal is `bd label remove`'s ("update issue"). With
// the proxy stopped, bd-claim exits 4 and says how to start it.
func TestProxiedTwins(t *testing.T) {
	w := claimtest.ProxiedWorkspace(t, "pt")
	bdClaim := func(args ...string) *icmd.Result { return run(t, w.Dir, nil, args...) }
	create := func(p string) string {
		var iss struct{ ID string }
		w.JSON(&iss, "create", "twin", "-p", p, "-l", "backend", "-d", "the same description")
		return iss.ID
	}
	a, b := create("2"), create("2")
	conn := w.DB(t)
	beforeA, beforeB := cellsOf(t, conn, "issues", a), cellsOf(t, conn, "issues", b)
	time.Sleep(1100 * time.Millisecond) // a later second: updated_at changes
	w.As("agent-1").OK("update", a, "--claim", "--json")
	time.Sleep(1100 * time.Millisecond) // another second: the commits and events tell apart
	bdClaim("--agent", "agent-1", "--id", b).Assert(t, icmd.Success)
	afterA, afterB := cellsOf(t, conn, "issues", a), cellsOf(t, conn, "issues", b)
	assert.DeepEqual(t, claimtest.Changed(beforeA, afterA), []string{"assignee", "row_lock", "started_at", "status", "updated_at"})
	assert.DeepEqual(t, claimtest.Changed(beforeB, afterB), claimtest.Changed(beforeA, afterA))
	for _, c := range []string{"assignee", "status", "content_hash", "is_blocked"} {
		assert.Equal(t, afterB[c], afterA[c], c)
	}

	type lease struct {
		Holder, Node string
		TTL          int
	}
	leaseOf := func(id string) lease {
		var l lease
		assert.NilError(t, conn.QueryRow("SELECT holder, granted_node, TIMESTAMPDIFF(SECOND, granted_at, lease_expires_at) FROM leases WHERE issue_id = ?", id).Scan(&l.Holder, &l.Node, &l.TTL))
		return l
	}
	assert.Equal(t, leaseOf(a), lease{"agent-1", "", 300})
	lb := leaseOf(b)
	assert.Assert(t, lb.Holder == "agent-1" && lb.Node == "" && lb.TTL >= 300 && lb.TTL <= 301, "%+v", lb)

	type event struct {
		Type, Actor, Old, New string
		Comment               *string
	}
	eventOf := func(id, typ string) event {
		var e event
		assert.NilError(t, conn.QueryRow("SELECT event_type, actor, COALESCE(old_value, ''), COALESCE(new_value, ''), comment FROM events WHERE issue_id = ? AND event_type = ?", id, typ).
			Scan(&e.Type, &e.Actor, &e.Old, &e.New, &e.Comment))
		return e
	}
	twinEvents := func(a, b, typ string) {
		t.Helper()
		ea, eb := eventOf(a, typ), eventOf(b, typ)
		assert.Equal(t, eb.Type+"/"+eb.Actor+"/"+eb.New, ea.Type+"/"+ea.Actor+"/"+ea.New)
		assert.Assert(t, ea.Comment == nil && eb.Comment == nil)
		assert.DeepEqual(t, jsonKeys(t, eb.Old), jsonKeys(t, ea.Old))
	}
	twinEvents(a, b, "claimed")

	type commit struct{ Message, Committer, Email string }
	log := func(n int) []commit {
		t.Helper()
		var out []commit
		rows, err := conn.Query("SELECT message, committer, email FROM dolt_log LIMIT ?", n)
		assert.NilError(t, err)
		defer rows.Close()
		for rows.Next() {
			var c commit
			assert.NilError(t, rows.Scan(&c.Message, &c.Committer, &c.Email))
			out = append(out, c)
		}
		assert.NilError(t, rows.Err())
		return out
	}
	stat := func(r string) string {
		t.Helper()
		var table string
		var rowsModified, cells int
		assert.NilError(t, conn.QueryRow("SELECT table_name, rows_modified, cells_modified FROM dolt_diff_stat('"+r+"~1', '"+r+"')").Scan(&table, &rowsModified, &cells))
		return fmt.Sprintf("%s %d %d", table, rowsModified, cells)
	}
	root := func(message string) commit { return commit{message, "root", "root@localhost"} }
	assert.DeepEqual(t, log(2), []commit{root("bd: update " + b), root("bd: update " + a)})
	assert.Equal(t, stat("HEAD~1"), "issues 1 5")
	assert.Equal(t, stat("HEAD"), "issues 1 5")

	// Claim-next: bd ready --claim takes one of two new P0 issues, bd-claim
	// the other.
	c, d := create("0"), create("0")
	field := func(id, col string) string {
		var v string
		assert.NilError(t, conn.QueryRow("SELECT COALESCE("+col+", '') FROM issues WHERE id = ?", id).Scan(&v))
		return v
	}
	time.Sleep(1100 * time.Millisecond)
	w.As("agent-2").OK("ready", "--claim", "--json")
	if field(d, "assignee") == "agent-2" {
		c, d = d, c
	}
	assert.Equal(t, field(c, "assignee"), "agent-2")
	time.Sleep(1100 * time.Millisecond)
	var res struct{ Issue struct{ ID string } }
	assert.NilError(t, json.Unmarshal([]byte(bdClaim("--agent", "agent-2", "--quiet").Assert(t, icmd.Success).Stdout()), &res))
	assert.Equal(t, res.Issue.ID, d)
	twinEvents(c, d, "claimed")
	assert.DeepEqual(t, log(2), []commit{root("bd: claim ready " + d), root("bd: claim ready " + c)})
	assert.Equal(t, stat("HEAD~1"), "issues 1 5")
	assert.Equal(t, stat("HEAD"), "issues 1 5")

	// Releases: bd unclaim and bd-claim release.
	w.As("agent-2").OK("unclaim", c)
	bdClaim("release", "--agent", "agent-2", "--id", d).Assert(t, icmd.Success)
	twinEvents(c, d, "unclaimed")
	assert.DeepEqual(t, log(2), []commit{root("bd: unclaim " + d), root("bd: unclaim " + c)})
	assert.Equal(t, field(d, "status")+"/"+field(d, "assignee"), field(c, "status")+"/"+field(c, "assignee"))

	// Closes: c claimed and closed by bd (bd update --claim, bd close
	// --reason), d claimed and closed by bd-claim, as agent-2. The same
	// cells change, the closed events are alike, the leases are gone, and
	// each close is one Dolt commit "bd: close ID" authored root, with the
	// same diff stat.
	w.As("agent-2").OK("update", c, "--claim")
	bdClaim("--agent", "agent-2", "--id", d).Assert(t, icmd.Success)
	beforeC, beforeD := cellsOf(t, conn, "issues", c), cellsOf(t, conn, "issues", d)
	time.Sleep(1100 * time.Millisecond)
	w.As("agent-2").OK("close", c, "--reason", "done")
	time.Sleep(1100 * time.Millisecond)
	bdClaim("close", "--agent", "agent-2", "--id", d, "--reason", "done").Assert(t, icmd.Success)
	afterC, afterD := cellsOf(t, conn, "issues", c), cellsOf(t, conn, "issues", d)
	assert.DeepEqual(t, claimtest.Changed(beforeD, afterD), claimtest.Changed(beforeC, afterC))
	for _, col := range []string{"status", "close_reason", "closed_by_session", "content_hash", "assignee", "is_blocked"} {
		assert.Equal(t, afterD[col], afterC[col], col)
	}
	ec, ed := eventOf(c, "closed"), eventOf(d, "closed")
	assert.Equal(t, ed.Type+"/"+ed.Actor+"/"+ed.Old+"/"+ed.New, ec.Type+"/"+ec.Actor+"/"+ec.Old+"/"+ec.New)
	assert.Equal(t, ec.Type+"/"+ec.Actor+"/"+ec.Old+"/"+ec.New, "closed/agent-2//done")
	assert.Assert(t, ec.Comment == nil && ed.Comment == nil)
	assert.DeepEqual(t, log(2), []commit{root("bd: close " + d), root("bd: close " + c)})
	assert.Equal(t, stat("HEAD"), stat("HEAD~1"))
	var leases int
	assert.NilError(t, conn.QueryRow("SELECT count(*) FROM leases WHERE issue_id IN (?, ?)", c, d).Scan(&leases))
	assert.Equal(t, leases, 0)

	// A label removed by bd label remove, and by bd-claim reset (an
	// abandoned issue's label), which also leaves its note as a bd comment,
	// in the same commit.
	for _, id := range []string{c, d} {
		w.OK("label", "add", id, "claim:abandoned")
	}
	w.OK("label", "remove", c, "claim:abandoned")
	bdClaim("reset", "--id", d).Assert(t, icmd.Success)
	assert.DeepEqual(t, log(2), []commit{root("update issue"), root("update issue")})
	assert.DeepEqual(t, claimtest.DiffStat(t, conn, "HEAD~2", "HEAD~1"), []string{"labels 0 1 0 0"})
	assert.DeepEqual(t, claimtest.DiffStat(t, conn, "HEAD~1", "HEAD"), []string{"comments 1 0 0 0", "labels 0 1 0 0"})
	var note string
	assert.NilError(t, conn.QueryRow("SELECT text FROM comments WHERE issue_id = ? ORDER BY created_at DESC LIMIT 1", d).Scan(&note))
	assert.Equal(t, note, "bd-claim: bd-claim reset the attempt history (0 failed attempts cleared)")
	var left int
	assert.NilError(t, conn.QueryRow("SELECT count(*) FROM labels WHERE label = 'claim:abandoned'").Scan(&left))
	assert.Equal(t, left, 0)

	// With the proxy stopped, bd-claim refuses at once, exit 4, and says
	// how to start it.
	w.OK("dolt", "stop")
	r := bdClaim("--agent", "agent-3")
	r.Assert(t, icmd.Expected{ExitCode: 4, Out: `"code":"DB_UNAVAILABLE"`})
	assert.Assert(t, strings.Contains(r.Stdout(), "run any bd command in the workspace (`bd list`), which starts (or replaces) it"), r.Stdout())
}

// Proxied server: 16 bd-claim processes and 8 `bd ready --claim`
// processes drain one workspace of 40 issues (drainRace): every issue is
// claimed once, by the agent bd shows as its assignee, and every bd-claim
// run exits 0 or 3 (no BUSY, no DB_UNAVAILABLE from a proxy that runs). bd's processes are
// no more likely to fail beside bd-claim than in a swarm of bd alone of
// the same size, 24 `bd ready --claim` processes on 40 issues, measured
// in the same run: on a loaded machine every bd process gives up after
// 15 s of lost rounds (Error 1213), as often with bd-claim as without.
func TestProxiedRaceWithBd(t *testing.T) {
	alone := claimtest.ProxiedWorkspace(t, "solo")
	doltIssues(t, alone.DB(t), "solo", 40)
	_, failedAlone, _ := drainRace(t, &alone.BdRunner, func(agent string) *claimtest.BdRunner { return &alone.As(agent).BdRunner }, 24, 0)

	w := claimtest.ProxiedWorkspace(t, "mix")
	doltIssues(t, w.DB(t), "mix", 40)
	claims, failed, busy := drainRace(t, &w.BdRunner, func(agent string) *claimtest.BdRunner { return &w.As(agent).BdRunner }, 8, 16)
	assert.Equal(t, len(claims), 40)
	assert.Equal(t, busy, 0, "every bd-claim run exits 0 or 3: none gives up waiting for its turn, none finds the proxy absent")
	t.Logf("bd ready --claim processes that failed: %d of 24 alone, %d of 8 beside 16 bd-claim processes", failedAlone, failed)
	assert.Assert(t, float64(failed)/8 <= float64(failedAlone)/24,
		"bd failed in %d of 8 cases beside bd-claim, %d of 24 alone", failed, failedAlone)
}

// kill -9 of claim processes at random moments leaves no half claim
// (killRandomly) through a proxied server either: the claim's rows and its
// Dolt commit are one transaction. bd then works on the workspace.
func TestProxiedKill9(t *testing.T) {
	w := claimtest.ProxiedWorkspace(t, "k9")
	conn := w.DB(t)
	doltIssues(t, conn, "k9", 40)
	killRandomly(t, w.Dir, w.Env)
	claimed := noHalfClaims(t, conn)
	var list []struct{ ID string }
	w.JSON(&list, "list", "--status", "in_progress", "--limit", "0")
	assert.Equal(t, len(list), claimed, "bd sees every claim")
	w.As("after").OK("ready", "--claim", "--json")
}

// A proxied-server workspace made with an idle timeout, as a plain `bd
// init --proxied-server` makes it (bd's default is 30 s; 3 s here): the
// proxy stops once no client has been connected for that long, and a
// claim is then refused at once (no process holds proxy.lock), exit 4
// DB_UNAVAILABLE with the fix, nothing written (bd-claim never starts the
// proxy); any bd command starts it
// again. A --wait keeps the proxy alive while it waits: its connection is
// a client, so a wait longer than the idle timeout finds the proxy still
// there for the next claim.
func TestProxiedIdleProxy(t *testing.T) {
	w := claimtest.ProxiedWorkspaceIdle(t, "id", "3s")
	var first, second struct{ ID string }
	w.JSON(&first, "create", "first", "-p", "1")
	run(t, w.Dir, w.Env, "--agent", "a", "--quiet").Assert(t, icmd.Expected{ExitCode: 0, Out: `"id":"` + first.ID + `"`})
	// The proxy stops once idle: it closes its ports, stops its dolt
	// sql-server and only then lets go of proxy.lock. A claim meanwhile
	// waits for it, as for any running proxy, so the refusal below is timed
	// from the moment no process holds the lock.
	idle := time.Now()
	for dolt.ProxyRunning(w.Root) {
		assert.Assert(t, time.Since(idle) < 2*time.Minute, "the idle proxy still runs after %v", time.Since(idle))
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the idle proxy was gone %v after the first claim", time.Since(idle))
	began := time.Now()
	r := run(t, w.Dir, w.Env, "--agent", "a", "--quiet")
	r.Assert(t, icmd.Expected{ExitCode: 4, Out: `"code":"DB_UNAVAILABLE"`})
	assert.Assert(t, time.Since(began) < 10*time.Second, "no proxy runs: refused at once, not after the 30 s wait: %v", time.Since(began))
	assert.Assert(t, strings.Contains(r.Stdout(), "`bd list`"), r.Stdout())

	w.JSON(&second, "create", "second", "-p", "1") // bd starts the proxy
	began = time.Now()
	r = run(t, w.Dir, w.Env, "--agent", "b", "--quiet", "--wait", "6s", "--label", "nothing-has-it")
	r.Assert(t, icmd.Expected{ExitCode: 3})
	assert.Assert(t, time.Since(began) >= 6*time.Second)
	run(t, w.Dir, w.Env, "--agent", "b", "--quiet").Assert(t, icmd.Expected{ExitCode: 0, Out: `"id":"` + second.ID + `"`})
	var shown []struct{ Status, Assignee string }
	w.JSON(&shown, "show", first.ID)
	assert.Equal(t, shown[0].Status+"/"+shown[0].Assignee, "in_progress/a")
}

// proxiedTwins is a proxied-server workspace for twin tests: bd-claim's
// CLI in it, the database as a claimtest.View, and pair, which makes two
// identical issues that bd claims as holder (`bd update --claim`).
func proxiedTwins(t *testing.T, prefix string) (w *claimtest.Proxied, bdClaim func(args ...string) *icmd.Result, view claimtest.View, pair func(holder string) (string, string)) {
	w = claimtest.ProxiedWorkspace(t, prefix)
	conn := w.DB(t)
	view = func(fn func(claimtest.Querier)) { fn(conn) }
	bdClaim = func(args ...string) *icmd.Result { return run(t, w.Dir, nil, args...) }
	pair = func(holder string) (string, string) {
		var ids [2]string
		for i := range ids {
			var iss struct{ ID string }
			w.JSON(&iss, "create", "twin", "-p", "2", "-l", "backend", "-d", "the same description")
			ids[i] = iss.ID
		}
		w.As(holder).OK("update", ids[0], ids[1], "--claim", "--json")
		return ids[0], ids[1]
	}
	return w, bdClaim, view, pair
}

// Proxied heartbeat twins: two issues claimed by bd as the same agent,
// one renewed by `bd heartbeat`, its twin by bd-claim heartbeat: only the
// leases rows change, the same columns (heartbeat_at, lease_expires_at to
// bd's 5 minutes from now); no issues cell, no event, no Dolt commit.
func TestProxiedHeartbeatTwins(t *testing.T) {
	w, bdClaim, view, pair := proxiedTwins(t, "ph")
	a, b := pair("agent-1")
	fa, fb := claimtest.Moves(t, view, a, b, func() { w.As("agent-1").OK("heartbeat", a) },
		func() { bdClaim("heartbeat", "--agent", "agent-1", "--id", b).Assert(t, icmd.Success) })
	assert.Assert(t, fa.Changed() == nil && fa.Events == nil && fa.Commits == nil, "%+v", fa)
	assert.DeepEqual(t, fa.LeaseChanged(), []string{"heartbeat_at", "lease_expires_at"})
	assert.Equal(t, fa.LeaseAfter["ttl"], "300")
	fa.Twin(t, fb)
}

// Proxied takeover twins. bd has no one-step takeover (`bd update
// --claim` refuses an issue whose holder's lease expired): its way is `bd
// reclaim` then `bd update --claim`, two Dolt commits; bd-claim --id takes
// the issue over in one transaction and one commit, the claim's ("bd:
// update ID", root <root@localhost>), whose change is the net change of
// bd's two. The cells, the new lease and the events (lease_reclaimed,
// claimed) are bd's, but for the lease_reclaimed comment (bd-claim's note;
// bd's NULL). Then reap against bd reclaim: the same footprint, and bd
// reclaim's proxied commit, "bd: reclaim ID".
func TestProxiedTakeoverTwins(t *testing.T) {
	w, bdClaim, view, pair := proxiedTwins(t, "po")
	a, b := pair("agent-old")
	c, d := pair("agent-old")
	for _, id := range []string{a, b, c, d} { // bd's leases end in a second
		bdClaim("heartbeat", "--agent", "agent-old", "--id", id, "--lease", "1s").Assert(t, icmd.Success)
	}
	time.Sleep(1500 * time.Millisecond)
	fa, fb := claimtest.Moves(t, view, a, b, func() {
		w.As("agent-new").OK("reclaim", "--older-than", "0s", "--id", a)
		w.As("agent-new").OK("update", a, "--claim", "--json")
	}, func() {
		r := bdClaim("--agent", "agent-new", "--id", b).Assert(t, icmd.Success)
		assert.Assert(t, strings.Contains(r.Stdout(), `"took_over":{"agent":"agent-old"`), r.Stdout())
	})
	assert.DeepEqual(t, fa.Changed(), []string{"assignee", "row_lock", "started_at", "updated_at"})
	root := "root <root@localhost>"
	assert.Assert(t, len(fa.Commits) == 2, "%+v", fa.Commits)
	assert.Equal(t, fa.Commits[0].Message+"/"+fa.Commits[0].Author, "bd: reclaim ID/"+root)
	assert.Equal(t, fa.Commits[1].Message+"/"+fa.Commits[1].Author, "bd: update ID/"+root)
	assert.DeepEqual(t, fb.Commits, []claimtest.TwinCommit{{Message: "bd: update ID", Author: root, Stat: fa.Net}})
	assert.DeepEqual(t, fa.Net, []string{"issues 0 0 1 4"})
	fa.Commits, fb.Commits = nil, nil
	claimtest.ReclaimNote(t, &fa, &fb, "agent-old", "taken over by agent-new")
	fa.Twin(t, fb, "assignee", "status", "content_hash", "is_blocked")

	fc, fd := claimtest.Moves(t, view, c, d, func() { w.As("reaper").OK("reclaim", "--older-than", "0s", "--id", c) },
		func() { bdClaim("reap", "--agent", "reaper").Assert(t, icmd.Success) })
	assert.DeepEqual(t, fc.Changed(), []string{"assignee", "row_lock", "started_at", "status", "updated_at"})
	assert.DeepEqual(t, fc.LeaseChanged(), []string{"deleted"})
	assert.DeepEqual(t, fc.Commits, []claimtest.TwinCommit{{Message: "bd: reclaim ID", Author: root, Stat: []string{"issues 0 0 1 5"}}})
	claimtest.ReclaimNote(t, &fc, &fd, "agent-old", "reaped by reaper")
	fc.Twin(t, fd, "assignee", "status", "content_hash", "is_blocked")
}
