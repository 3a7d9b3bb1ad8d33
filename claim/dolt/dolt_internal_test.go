package dolt

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/claim/workspace"
	"github.com/bdclaim/bd-claim/db"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// openDoltAt opens a Store on workspace w, reaching its server at port
// (a proxy's, or 0 for the server's own).
func openDoltAt(t *testing.T, w *claimtest.DoltWorkspace, port int, o claim.Options) *claim.Store {
	t.Helper()
	getenv := w.Getenv
	if port != 0 {
		getenv = func(k string) string {
			if k == "BEADS_DOLT_SERVER_PORT" {
				return strconv.Itoa(port)
			}
			return w.Getenv(k)
		}
	}
	ws, err := workspace.Find(workspace.Locate{Start: w.Dir, Getenv: getenv})
	assert.NilError(t, err)
	s, err := open(context.Background(), ws, o)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// insertLabelled inserts an open issue with one label, as bd's defaults leave
// it, and Dolt-commits it.
func insertLabelled(t *testing.T, conn *sql.DB, id, label string) {
	t.Helper()
	for _, q := range []string{
		"INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, row_lock) VALUES ('" + id + "', 't', '', '', '', '', 2, 'task', 7)",
		"INSERT INTO labels (issue_id, label) VALUES ('" + id + "', '" + label + "')",
		"CALL DOLT_COMMIT('-Am', 'test issue')",
	} {
		_, err := conn.Exec(q)
		assert.NilError(t, err, q)
	}
}

// insertWisp inserts an open `--no-history` wisp with one label, as bd's
// defaults leave it (the wisp tables are dolt_ignored: no Dolt commit).
func insertWisp(t *testing.T, conn *sql.DB, id, label string) {
	t.Helper()
	for _, q := range []string{
		"INSERT INTO wisps (id, title, description, design, acceptance_criteria, notes, priority, issue_type, no_history, row_lock) VALUES ('" + id + "', 't', '', '', '', '', 2, 'task', 1, 7)",
		"INSERT INTO wisp_labels (issue_id, label) VALUES ('" + id + "', '" + label + "')",
	} {
		_, err := conn.Exec(q)
		assert.NilError(t, err, q)
	}
}

// Every statement of every Dolt operation can fail: the operation reports
// it and the database is as before. The runs with a failing statement go
// first (each leaves nothing behind); the first run that meets no failure
// is the clean one. A failure in the Dolt commit, after the SQL commit, is
// told apart: the claim stands in the working set and the error says so.
func TestDoltEveryStatementFailureRollsBack(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "flt")
	conn := w.DB(t)
	ctx := context.Background()
	ok := func(_ claim.Result, err error) error { return err }
	expire := func(id string) {
		_, err := conn.Exec("UPDATE leases SET lease_expires_at = '2000-01-01 00:00:00' WHERE issue_id = ?", id)
		assert.NilError(t, err)
	}
	// dependents makes issue id block an issue, that issue's child (which
	// the close's recomputation meets twice: a depender and a
	// descendant) and a wisp, as bd leaves them: is_blocked set,
	// Dolt-committed.
	dependents := func(id string) {
		insertLabelled(t, conn, id+"-after", "after")
		insertLabelled(t, conn, id+"-kid", "kid")
		insertWisp(t, conn, id+"-wafter", "after")
		for _, q := range []string{
			"INSERT INTO dependencies (id, issue_id, depends_on_issue_id, type, created_by) VALUES (UUID(), '" + id + "-after', '" + id + "', 'blocks', 't')",
			"INSERT INTO dependencies (id, issue_id, depends_on_issue_id, type, created_by) VALUES (UUID(), '" + id + "-kid', '" + id + "-after', 'parent-child', 't')",
			"INSERT INTO dependencies (id, issue_id, depends_on_issue_id, type, created_by) VALUES (UUID(), '" + id + "-kid', '" + id + "', 'blocks', 't')",
			"INSERT INTO wisp_dependencies (id, issue_id, depends_on_issue_id, type, created_by) VALUES (UUID(), '" + id + "-wafter', '" + id + "', 'blocks', 't')",
			"UPDATE issues SET is_blocked = 1 WHERE id IN ('" + id + "-after', '" + id + "-kid')",
			"UPDATE wisps SET is_blocked = 1 WHERE id = '" + id + "-wafter'",
			"CALL DOLT_COMMIT('-Am', 'test dependents')",
		} {
			_, err := conn.Exec(q)
			assert.NilError(t, err, q)
		}
	}
	blocked := func(id string) []string {
		return claimtest.Strings(t, conn, "SELECT CONCAT(id, ' ', is_blocked) FROM issues WHERE id LIKE ? UNION ALL SELECT CONCAT(id, ' ', is_blocked) FROM wisps WHERE id LIKE ? ORDER BY 1", id+"-%", id+"-%")
	}
	abandoning := &claim.Policy{BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour, MaxFailures: 1, AbandonedLabel: "claim:abandoned"}
	for n, tc := range []struct {
		name   string
		policy *claim.Policy
		wisp   bool // the case's issue is a wisp (bd's wisps table)
		setup  func(s *claim.Store, id string)
		op     func(s *claim.Store, id, label string) error
	}{
		{"claim next", nil, false, nil, func(s *claim.Store, _, label string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", Filters: claim.Filters{IncludeLabels: []string{label}}}))
		}},
		{"claim --id, max held", nil, false, nil, func(s *claim.Store, id, _ string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", ID: id, MaxHeld: 2}))
		}},
		{"claim next, hybrid order", nil, false, nil, func(s *claim.Store, _, label string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", Filters: claim.Filters{IncludeLabels: []string{label}, Sort: claim.SortHybrid}}))
		}},
		{"dry run", nil, false, nil, func(s *claim.Store, _, label string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", DryRun: true, Filters: claim.Filters{IncludeLabels: []string{label}}}))
		}},
		{"claim next, bd's JSON", nil, false, nil, func(s *claim.Store, id, label string) error {
			res, err := s.Claim(ctx, claim.Request{Agent: "a", BdJSON: true, Filters: claim.Filters{IncludeLabels: []string{label}}})
			if err == nil {
				assert.Assert(t, strings.HasPrefix(string(res.BdJSON), `{"id":"`+id+`"`) && strings.HasSuffix(string(res.BdJSON), `"comment_count":0}`), "%s", res.BdJSON)
			}
			return err
		}},
		{"claim next of a wisp, bd's JSON", nil, true, nil, func(s *claim.Store, id, label string) error {
			res, err := s.Claim(ctx, claim.Request{Agent: "a", BdJSON: true, Filters: claim.Filters{IncludeLabels: []string{label}}})
			if err == nil {
				assert.Assert(t, strings.HasPrefix(string(res.BdJSON), `{"id":"`+id+`"`) && strings.HasSuffix(string(res.BdJSON), `"comment_count":0}`), "%s", res.BdJSON)
			}
			return err
		}},
		{"claim --id, bd's JSON", nil, false, nil, func(s *claim.Store, id, _ string) error {
			res, err := s.Claim(ctx, claim.Request{Agent: "a", ID: id, BdJSON: true})
			if err == nil {
				assert.Assert(t, strings.HasSuffix(string(res.BdJSON), `"labels":["`+strings.TrimPrefix(id, w.Prefix+"-")+`"]}`), "%s", res.BdJSON)
			}
			return err
		}},
		{"re-claim with a lease", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, id, _ string) error {
				return ok(s.Claim(ctx, claim.Request{Agent: "w", ID: id, Lease: time.Hour}))
			}},
		{"refused: held", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, id, _ string) error {
				_, err := s.Claim(ctx, claim.Request{Agent: "x", ID: id})
				if claim.ErrorCode(err) == claim.EAlready {
					return nil
				}
				return err
			}},
		{"release with a reason", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, id, _ string) error {
				_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Reason: "later"})
				return err
			}},
		{"heartbeat", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, id, _ string) error {
				return ok(s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "w", ID: id}))
			}},
		{"resume, renewing the lease", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, _, label string) error {
				res, err := s.Claim(ctx, claim.Request{Agent: "w", Resume: true, Filters: claim.Filters{IncludeLabels: []string{label}}})
				if err == nil && !res.Resumed {
					return errors.New("not resumed")
				}
				return err
			}},
		{"heartbeat of a claim without a lease row", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
			_, err := conn.Exec("DELETE FROM leases WHERE issue_id = ?", id)
			assert.NilError(t, err)
		}, func(s *claim.Store, id, _ string) error {
			return ok(s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "w", ID: id, Lease: time.Minute}))
		}},
		{"release --failed, abandoning", abandoning, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, id, _ string) error {
				_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Failed: true, Reason: "boom"})
				return err
			}},
		{"reset of an abandoned issue", abandoning, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
			claimtest.Must[claim.Released](t)(s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Failed: true}))
		}, func(s *claim.Store, id, _ string) error {
			_, err := s.Reset(ctx, claim.ResetRequest{Actor: "h", ID: id})
			return err
		}},
		{"takeover of an expired lease", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id, Lease: time.Minute}))
			expire(id)
		}, func(s *claim.Store, id, _ string) error { return ok(s.Claim(ctx, claim.Request{Agent: "x", ID: id})) }},
		{"reap", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id, Lease: time.Minute}))
			expire(id)
		}, func(s *claim.Store, _, _ string) error {
			_, err := s.Reap(ctx, claim.ReapRequest{Actor: "r"})
			return err
		}},
		{"close, unblocking an issue, its child and a wisp", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
			dependents(id)
		}, func(s *claim.Store, id, _ string) error {
			c, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: id, Reason: "done"})
			if err == nil {
				assert.Equal(t, c.Issue.Status, "closed")
				assert.DeepEqual(t, blocked(id), []string{id + "-after 0", id + "-kid 0", id + "-wafter 0"})
			}
			return err
		}},
		{"close refused: an open child", nil, false, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
			insertLabelled(t, conn, id+"-child", "child")
			_, err := conn.Exec("INSERT INTO dependencies (id, issue_id, depends_on_issue_id, type, created_by) VALUES (UUID(), ?, ?, 'parent-child', 't')", id+"-child", id)
			assert.NilError(t, err)
		}, func(s *claim.Store, id, _ string) error {
			_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: id})
			if claim.ErrorCode(err) == claim.ENotClaimable {
				return nil
			}
			return err
		}},
		{"claim next, a wisp", nil, true, nil, func(s *claim.Store, _, label string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", Filters: claim.Filters{IncludeLabels: []string{label}}}))
		}},
		{"claim next, every filter", nil, false, nil, func(s *claim.Store, _, label string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", Filters: claim.Filters{IncludeLabels: []string{label}, LabelsAny: []string{label, "x"}, LabelPattern: "case*",
				LabelRegex: "^" + label + "$", ExcludeTypes: []string{"chore", "mr"}, IncludeDeferred: true}}))
		}},
		{"claim --id of a wisp, max held", nil, true, nil, func(s *claim.Store, id, _ string) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "wb", ID: id, MaxHeld: 2}))
		}},
		{"release of a wisp", nil, true, func(s *claim.Store, id string) {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
		},
			func(s *claim.Store, id, _ string) error {
				_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id})
				return err
			}},
		{"stats", abandoning, false, nil, func(s *claim.Store, _, _ string) error {
			_, err := s.Stats(ctx)
			return err
		}},
		{"explain", nil, false, nil, func(s *claim.Store, _, label string) error {
			_, err := s.Explain(ctx, claim.Request{Agent: "a", MaxHeld: 1, Filters: claim.Filters{IncludeLabels: []string{label}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label := fmt.Sprintf("case%d", n)
			id := w.Prefix + "-" + label
			if tc.wisp {
				id = w.Prefix + "-wisp-" + label
				insertWisp(t, conn, id, label)
			} else {
				insertLabelled(t, conn, id, label)
			}
			s := openDoltAt(t, w, 0, claim.Options{Policy: tc.policy})
			if tc.setup != nil {
				tc.setup(s, id)
			}
			var log []string
			for fail := int64(1); ; fail++ {
				before := claimtest.DoltRows(t, conn)
				seen := &atomic.Int64{}
				engineOf(s).faults = func(h db.DBTX) db.DBTX { return claimtest.Faulty{DBTX: h, Seen: seen, Fail: fail, Log: &log} }
				err := tc.op(s, id, label)
				if seen.Load() < fail {
					assert.NilError(t, err, "the clean run")
				}
				if err == nil {
					assert.Assert(t, fail > 1, "the clean run ran no statement")
					return
				}
				if strings.Contains(err.Error(), "committed in SQL") {
					// The SQL commit is behind: what follows is the Dolt
					// commit, tested on its own (TestDoltCommit).
					assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected, "%v", err)
					return
				}
				assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected, "statement %d (%s): %v", fail, log[len(log)-1], err)
				assert.DeepEqual(t, claimtest.DoltRows(t, conn), before)
			}
		})
	}
}

// conflicting fails the first n DOLT_COMMITs with Dolt's serialization
// failure.
type conflicting struct {
	db.DBTX
	n *atomic.Int64
}

func (c conflicting) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if strings.Contains(query, "DOLT_COMMIT") && c.n.Add(-1) >= 0 {
		return nil, &mysql.MySQLError{Number: 1213, Message: "serialization failure"}
	}
	return c.DBTX.ExecContext(ctx, query, args...)
}

// The Dolt commit after a write: a conflict is tried again; one that
// keeps conflicting is reported, saying the change is in the working set;
// nothing staged (another writer's commit took the change in) is fine.
func TestDoltCommit(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "cmt")
	conn := w.DB(t)
	ctx := context.Background()
	insertLabelled(t, conn, w.Prefix+"-a", "a")
	insertLabelled(t, conn, w.Prefix+"-b", "b")
	s := openDoltAt(t, w, 0, claim.Options{})
	commits := func() int { return claimtest.Count(t, conn, "SELECT count(*) FROM dolt_log") }

	left := &atomic.Int64{}
	left.Store(2)
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return conflicting{h, left} }
	before := commits()
	claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-a"}))
	assert.Equal(t, commits(), before+1, "committed on the third try")

	left.Store(1000)
	_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-b"})
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspaceBusy, "%v", err)
	assert.ErrorContains(t, err, "the change is committed in SQL and the next bd or bd-claim write records it in a Dolt commit")
	assert.Equal(t, commits(), before+1)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status WHERE table_name = 'issues'"), 1)

	// The re-claim records it; a commit with nothing left to record is fine.
	engineOf(s).faults = nil
	claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-b"}))
	assert.Equal(t, commits(), before+2)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status WHERE table_name = 'issues'"), 0)
	w1, err := engineOf(s).link.writer(ctx, engineOf(s).wrap)
	assert.NilError(t, err)
	assert.NilError(t, Commit{Message: "bd: nothing", Author: bdStyle.author}.Make(ctx, w1.h))
	w1.done()
	assert.Equal(t, commits(), before+2)

	assert.NilError(t, s.Close())
	_, err = s.Claim(ctx, claim.Request{Agent: "a"})
	assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected)
	assert.ErrorContains(t, err, "could not claim an issue: sql: database is closed")
}

// A connection lost in the middle of a claim: before the SQL COMMIT
// reached the server, nothing is written and the claim fails as
// DB_UNAVAILABLE; after the server ran it (its answer lost), bd-claim asks
// again on a new connection, finds its row_lock and reports the claim,
// Dolt-committed; a wisp's claim as well. A connection lost before the
// Dolt commit leaves the claim in the working set, reported, for the next
// write to record; so does a lost COMMIT that landed when no writer's
// connection can be had again for its Dolt commit.
func TestDoltConnectionLost(t *testing.T) {
	srv := claimtest.NeedDolt(t)
	w := srv.Workspace(t, "lost")
	conn := w.DB(t)
	ctx := context.Background()
	target := "127.0.0.1:" + strconv.Itoa(srv.Port)
	for _, l := range []string{"a", "b", "c", "d"} {
		insertLabelled(t, conn, w.Prefix+"-"+l, l)
	}
	insertWisp(t, conn, w.Prefix+"-w", "w")

	p := claimtest.NewProxy(t, target, "\x03COMMIT", false)
	s := openDoltAt(t, w, p.Port, claim.Options{})
	before := claimtest.DoltRows(t, conn)
	_, err := s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-a"})
	assert.Assert(t, p.Cut.Load())
	assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
	assert.DeepEqual(t, claimtest.DoltRows(t, conn), before)

	p = claimtest.NewProxy(t, target, "\x03COMMIT", true)
	s = openDoltAt(t, w, p.Port, claim.Options{})
	res, err := s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-a"})
	assert.NilError(t, err)
	assert.Assert(t, p.Cut.Load())
	assert.Equal(t, res.Issue.Assignee, "a")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE id = ? AND assignee = 'a' AND row_lock = ?", w.Prefix+"-a", res.ClaimID), 1)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status WHERE table_name = 'issues'"), 0, "Dolt-committed")

	p = claimtest.NewProxy(t, target, "\x03COMMIT", true)
	s = openDoltAt(t, w, p.Port, claim.Options{})
	res, err = s.Claim(ctx, claim.Request{Agent: "w", ID: w.Prefix + "-w"})
	assert.NilError(t, err)
	assert.Assert(t, p.Cut.Load())
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM wisps WHERE id = ? AND assignee = 'w' AND row_lock = ?", w.Prefix+"-w", res.ClaimID), 1)

	p = claimtest.NewProxy(t, target, "DOLT_ADD", false)
	s = openDoltAt(t, w, p.Port, claim.Options{})
	_, err = s.Claim(ctx, claim.Request{Agent: "b", ID: w.Prefix + "-b"})
	assert.Equal(t, claim.ErrorCode(err), claim.EUnavailable, "%v", err)
	assert.ErrorContains(t, err, "committed in SQL")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status WHERE table_name = 'issues'"), 1)
	// The next write, whoever makes it, records it.
	claimtest.Must[claim.Result](t)(openDoltAt(t, w, 0, claim.Options{}).Claim(ctx, claim.Request{Agent: "c", ID: w.Prefix + "-c"}))
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM dolt_status WHERE table_name = 'issues'"), 0)
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues AS OF 'HEAD' WHERE id = ? AND assignee = 'b'", w.Prefix+"-b"), 1)

	p = claimtest.NewProxy(t, target, "\x03COMMIT", true)
	s = openDoltAt(t, w, p.Port, claim.Options{})
	asks := &atomic.Int64{}
	asks.Store(1) // the first writer's lock is taken; the server refuses the next ask
	engineOf(s).faults = func(h db.DBTX) db.DBTX {
		return rewriting{DBTX: h, from: "GET_LOCK(", to: "NO_SUCH_GET_LOCK(", skip: asks}
	}
	_, err = s.Claim(ctx, claim.Request{Agent: "d", ID: w.Prefix + "-d"})
	assert.Assert(t, p.Cut.Load())
	assert.ErrorContains(t, err, "committed in SQL")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE id = ? AND assignee = 'd'", w.Prefix+"-d"), 1, "the lost COMMIT landed")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM issues AS OF 'HEAD' WHERE id = ? AND assignee = 'd'", w.Prefix+"-d"), 0)
}

// rewriting runs every statement, but a statement containing from is run
// with from replaced by to, once (n counts down), or always (n nil); the
// first ones (skip counts down; nil: none) run as written.
type rewriting struct {
	db.DBTX
	from, to string
	n, skip  *atomic.Int64
	zero     bool // do not run a matched Exec at all: report 0 rows affected
}

func (r rewriting) hit(query string) bool {
	return strings.Contains(query, r.from) && (r.skip == nil || r.skip.Add(-1) < 0) && (r.n == nil || r.n.Add(-1) >= 0)
}

func (r rewriting) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if r.hit(query) && r.zero {
		return driver.RowsAffected(0), nil
	}
	return r.DBTX.ExecContext(ctx, query, args...)
}

func (r rewriting) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if r.hit(query) {
		query = strings.Replace(query, r.from, r.to, 1)
	}
	return r.DBTX.QueryRowContext(ctx, query, args...)
}

// The guards that real servers rarely trip: a compare-and-swap that
// matched no row (the issue changed under the transaction) makes the
// whole transaction run again, for a claim, a release and a close; labels the
// server returned in another shape are an error, not a silent loss.
func TestDoltGuards(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "grd")
	conn := w.DB(t)
	ctx := context.Background()
	for _, l := range []string{"a", "b"} {
		insertLabelled(t, conn, w.Prefix+"-"+l, l)
	}
	s := openDoltAt(t, w, 0, claim.Options{})
	once := &atomic.Int64{}
	once.Store(1)
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return rewriting{DBTX: h, from: "IssueClaimSet", n: once, zero: true} }
	res := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-a"}))
	assert.Equal(t, res.Issue.Assignee, "a")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'claimed'", w.Prefix+"-a"), 1, "one event: the first try rolled back")

	once.Store(1)
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return rewriting{DBTX: h, from: "IssueUnclaimSet", n: once, zero: true} }
	claimtest.Must[claim.Released](t)(s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: w.Prefix + "-a"}))
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'unclaimed'", w.Prefix+"-a"), 1)

	// A takeover whose reclaim finds the issue changed starts again.
	claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a", ID: w.Prefix + "-a", Lease: time.Minute}))
	_, err := conn.Exec("UPDATE leases SET lease_expires_at = '2000-01-01 00:00:00' WHERE issue_id = ?", w.Prefix+"-a")
	assert.NilError(t, err)
	once.Store(1)
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return rewriting{DBTX: h, from: "IssueReclaimSet", n: once, zero: true} }
	res = claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "c", ID: w.Prefix + "-a"}))
	assert.Equal(t, res.TookOver.Agent, "a")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'lease_reclaimed'", w.Prefix+"-a"), 1)

	// A close whose compare-and-swap finds the issue changed starts
	// again: one close, one closed event.
	once.Store(1)
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return rewriting{DBTX: h, from: "IssueCloseSet", n: once, zero: true} }
	closed := claimtest.Must[claim.Closed](t)(s.CloseIssue(ctx, claim.CloseRequest{Agent: "c", ID: w.Prefix + "-a"}))
	assert.Equal(t, closed.Issue.Status, "closed")
	assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM events WHERE issue_id = ? AND event_type = 'closed'", w.Prefix+"-a"), 1)

	before := claimtest.DoltRows(t, conn)
	engineOf(s).faults = func(h db.DBTX) db.DBTX {
		return rewriting{DBTX: h, from: "CAST((SELECT COALESCE(JSON_ARRAYAGG(labels.label), '[]')", to: `CAST((SELECT '{"not":"a list"}'`}
	}
	_, err = s.Claim(ctx, claim.Request{Agent: "b", ID: w.Prefix + "-b"})
	assert.ErrorContains(t, err, "labels of "+w.Prefix+"-b")
	assert.DeepEqual(t, claimtest.DoltRows(t, conn), before)

	engineOf(s).faults = func(h db.DBTX) db.DBTX {
		return rewriting{DBTX: h, from: "JSON_ARRAYAGG(c.claim)", to: "JSON_OBJECT('not', JSON_ARRAYAGG(c.claim))"}
	}
	_, err = s.Stats(ctx)
	assert.ErrorContains(t, err, "the claims of the in_progress issues: json: cannot unmarshal object")

	engineOf(s).faults = nil
	_, err = s.Claim(ctx, claim.Request{Agent: "b", ID: w.Prefix + "-nope"})
	assert.Equal(t, claim.ErrorCode(err), claim.ENotFound, "%v", err)
}

// A takeover claims the issue as its reclaim left it without reading it
// again (reclaimed): what reclaimed makes of the issue as read before is
// what a read after the reclaim's writes finds, for an in_progress issue
// with a lease row and the columns bd prints set, reclaimed at times either
// side of a half second (the DATETIME column rounds them).
func TestDoltReclaimedIsTheRowRead(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "rcl")
	conn := w.DB(t)
	ctx := context.Background()
	id := w.Prefix + "-a"
	insertLabelled(t, conn, id, "l")
	for _, q := range []string{
		`UPDATE issues SET status = 'in_progress', assignee = 'agent-x', started_at = '2026-01-01 10:00:00',
			estimated_minutes = 30, external_ref = 'gh-1', due_at = '2031-07-04 00:00:00', sender = 'mayor',
			metadata = '{"k":1}', content_hash = 'h1', updated_at = '2026-01-01 10:00:00' WHERE id = '` + id + `'`,
		`INSERT INTO leases (issue_id, holder, granted_at, lease_expires_at, heartbeat_at, granted_node)
			VALUES ('` + id + `', 'agent-x', '2026-01-01 10:00:00', '2026-01-01 10:05:00', '2026-01-01 10:01:00', 'node-7')`,
	} {
		_, err := conn.ExecContext(ctx, q)
		assert.NilError(t, err, q)
	}
	e := engineOf(openDoltAt(t, w, 0, claim.Options{}))
	for _, ns := range []int{0, 499_999_999, 500_000_000, 999_999_999} {
		now := time.Date(2026, 11, 29, 10, 0, 0, ns, time.UTC)
		h, err := conn.BeginTx(ctx, nil)
		assert.NilError(t, err)
		tx := e.tx(ctx, h)
		tx.now = now
		r, err := tx.Read(id)
		assert.NilError(t, err)
		assert.Assert(t, snapshotOf(r).bd.LeaseExpiresAt != nil && snapshotOf(r).bd.StartedAt != nil)
		r.Claim = &engine.State{IssueID: id, Holder: "agent-x"}
		lock := newRowLock()
		n, err := e.dq.IssueReclaimSet(ctx, h, doltdb.IssueReclaimSetParams{Now: now, NewRowLock: lock, ID: id, RowLock: snapshotOf(r).rowLock})
		assert.NilError(t, err)
		assert.Equal(t, n, int64(1))
		assert.NilError(t, e.dq.LeaseDelete(ctx, h, id))
		after, err := tx.Read(id)
		assert.NilError(t, err)
		reclaimed(r, lock, now)
		assert.NilError(t, h.Rollback())

		assert.Equal(t, snapshotOf(r).bd.EventJSON(), snapshotOf(after).bd.EventJSON(), "at %s", now.Format(time.RFC3339Nano))
		assert.DeepEqual(t, r.Issue, after.Issue)
		assert.DeepEqual(t, snapshotOf(r).issue, snapshotOf(after).issue)
		assert.Equal(t, snapshotOf(r).rowLock, snapshotOf(after).rowLock)
		assert.Equal(t, snapshotOf(r).table, snapshotOf(after).table)
		assert.Assert(t, r.Claim == nil)
	}
}

// The connection: a Unix socket and TLS when asked for, bd's options
// always, and the driver's own logging off.
func TestDoltServerConfig(t *testing.T) {
	c := config(&engine.DoltServer{Socket: "/run/dolt.sock", User: "u", Password: "p", Database: "db", TLS: true})
	assert.Equal(t, c.Net+" "+c.Addr+" "+c.TLSConfig, "unix /run/dolt.sock true")
	assert.Assert(t, c.ParseTime && c.InterpolateParams && c.Timeout == 5*time.Second)
	c = config(&engine.DoltServer{Host: "::1", Port: 3307, User: "u", Database: "db"})
	assert.Equal(t, c.Net+" "+c.Addr+" "+c.TLSConfig, "tcp [::1]:3307 false")
	assert.Assert(t, lockRound*time.Second < c.ReadTimeout, "a round of the wait for the writers' lock ends before the driver drops its connection")
}

// A Store's busy timeout is a writer's wait: its own limit and stall when
// set, DefaultWait's stall (and no limit) when 0, none when negative. A
// wait gives up once nothing moved for the stall, or once the limit has
// passed since it began, whichever comes first.
func TestDoltTurnWait(t *testing.T) {
	t.Parallel()
	assert.Equal(t, waitFor(0), turnWait{stall: DefaultWait})
	assert.Equal(t, waitFor(2*time.Second), turnWait{limit: 2 * time.Second, stall: 2 * time.Second})
	assert.Equal(t, waitFor(-1), turnWait{})
	began := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	w := turnWait{limit: 10 * time.Second, stall: 3 * time.Second}
	assert.Equal(t, w.until(began, began.Add(time.Second)), began.Add(4*time.Second))
	assert.Equal(t, w.until(began, began.Add(8*time.Second)), began.Add(10*time.Second))
	assert.Equal(t, turnWait{stall: 3 * time.Second}.until(began, began.Add(time.Hour)), began.Add(time.Hour+3*time.Second))
}

// A Dolt claim checks the failure policy on the first doltPage
// candidates; when every one of them is in backoff it checks them all.
func TestDoltCandidatePage(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "pg")
	conn := w.DB(t)
	ctx := context.Background()
	id := func(i int) string { return fmt.Sprintf("%s-p%02d", w.Prefix, i) }
	for i := range doltPage + 2 {
		_, err := conn.Exec("INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, row_lock, created_at) VALUES (?, 't', '', '', '', '', 1, 'task', 1, ?)",
			id(i), time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
		assert.NilError(t, err)
		if i < doltPage {
			_, err = conn.Exec("INSERT INTO events (id, issue_id, event_type, actor, old_value, new_value, comment, created_at) VALUES (?, ?, 'unclaimed', 'w', '', '', 'bd-claim failed: flaky', UTC_TIMESTAMP())",
				fmt.Sprint("failure-", i), id(i))
			assert.NilError(t, err)
		}
	}
	s := openDoltAt(t, w, 0, claim.Options{})
	dry := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a", DryRun: true}))
	assert.Equal(t, dry.Issue.ID, id(doltPage))
	a := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a"}))
	b := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a"}))
	assert.DeepEqual(t, []string{min(a.Issue.ID, b.Issue.ID), max(a.Issue.ID, b.Issue.ID)}, []string{id(doltPage), id(doltPage + 1)})
	none := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a"}))
	assert.Assert(t, none.Issue == nil)
}

// doltOf is the engine of a Store on a Dolt workspace.

// A Dolt claim in the priority order starts at the most urgent priority of
// an open issue, and looks at every issue when none of that priority is
// ready, or when what it found first is a less urgent expired lease; an
// expired lease more urgent than every open issue is taken over first.
func TestDoltStartsAtTheTopPriority(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "tp")
	conn := w.DB(t)
	ctx := context.Background()
	id := func(name string) string { return w.Prefix + "-" + name }
	insert := func(name string, priority int, status, assignee string, blocked int) {
		t.Helper()
		_, err := conn.Exec("INSERT INTO issues (id, title, description, design, acceptance_criteria, notes, priority, issue_type, row_lock, status, assignee, is_blocked) VALUES (?, 't', '', '', '', '', ?, 'task', 1, ?, ?, ?)",
			id(name), priority, status, assignee, blocked)
		assert.NilError(t, err)
	}
	var offset time.Duration
	s := openDoltAt(t, w, 0, claim.Options{Now: func() time.Time { return time.Now().Add(offset) }})
	head := func(want string) {
		t.Helper()
		dry := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "a", DryRun: true}))
		assert.Assert(t, dry.Issue != nil)
		assert.Equal(t, dry.Issue.ID, id(want))
	}
	insert("blocked0", 0, "open", "", 1)
	insert("ready1", 1, "open", "", 0)
	insert("ready2", 2, "open", "", 0)
	head("ready1") // top is 0, where nothing is ready
	held := claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "x", ID: id("ready2"), Lease: time.Minute}))
	offset = 2 * time.Minute
	assert.Assert(t, held.Lease != nil)
	head("ready1") // the expired lease found at top is less urgent than ready1
	_, err := conn.Exec("UPDATE issues SET is_blocked = 0 WHERE id = ?", id("blocked0"))
	assert.NilError(t, err)
	head("blocked0")
	_, err = conn.Exec("UPDATE issues SET priority = 3 WHERE id <> ?", id("ready2"))
	assert.NilError(t, err)
	head("ready2") // the expired lease, more urgent than every open issue
}
