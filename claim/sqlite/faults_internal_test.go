package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/writers"
	"github.com/bdclaim/bd-claim/db"
)

// faultCase is one operation of the lifecycle, with what must be in the
// database before it runs.
type faultCase struct {
	name  string
	setup func(t *testing.T, s *claim.Store, c *testClock)
	op    func(s *claim.Store) error
}

type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// Every statement of every lifecycle operation can fail: the operation
// then reports the failure and the database is exactly as before (the
// transaction rolled back, or nothing was written). Each case first runs
// clean to count its statements, then once per statement with that one
// failing.
func TestEveryStatementFailureRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := func(t *testing.T) string { return claimtest.Claimable(t, "0.49.6", "priority")[0] }
	leased := func(t *testing.T, s *claim.Store, c *testClock) {
		claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "old", Lease: time.Second}))
		c.advance(time.Minute)
	}
	failedTwice := func(t *testing.T, s *claim.Store, c *testClock) {
		id := first(t)
		for range 2 {
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
			claimtest.Must[claim.Released](t)(s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Failed: true}))
			c.advance(time.Hour)
		}
	}
	held := func(t *testing.T, s *claim.Store, c *testClock) {
		claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: first(t), Lease: time.Minute}))
	}
	ok := func(_ claim.Result, err error) error { return err }
	closing := func(_ claim.Closed, err error) error { return err }
	// convoys adds two convoys (issues labelled gt:convoy) tracking the
	// held issue: one tracks nothing else (its close completes it), the
	// other an open issue too; and an issue the held one blocks.
	convoys := func(t *testing.T, s *claim.Store, c *testClock) {
		held(t, s, c)
		id := first(t)
		issue := func(id string) string {
			return "INSERT INTO issues (id, title, priority, created_at, updated_at) VALUES ('" + id + "', '" + id + "', 2, '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')"
		}
		dep := func(from, to, typ string) string {
			return "INSERT INTO dependencies (issue_id, depends_on_id, type, created_at, created_by) VALUES ('" + from + "', '" + to + "', '" + typ + "', '2025-01-01T00:00:00Z', 't')"
		}
		exec(t, s.Workspace.DBPath, issue("cv-done"), issue("cv-open"), issue("cv-other"), issue("cv-after"),
			"INSERT INTO labels (issue_id, label) VALUES ('cv-done', 'gt:convoy'), ('cv-open', 'gt:convoy')",
			dep("cv-done", id, "tracks"), dep("cv-open", id, "tracks"), dep("cv-open", "cv-other", "tracks"),
			dep("cv-after", id, "blocks"), "INSERT INTO blocked_issues_cache (issue_id) VALUES ('cv-after')")
	}
	for _, tc := range []faultCase{
		{"claim next", nil, func(s *claim.Store) error { return ok(s.Claim(ctx, claim.Request{Agent: "a"})) }},
		{"claim next, every filter", nil, func(s *claim.Store) error {
			two := 2
			res, err := s.Claim(ctx, claim.Request{Agent: "a", Filters: claim.Filters{LabelsAny: []string{"backend", "urgent"}, LabelPattern: "back*",
				ExcludeTypes: []string{"chore"}, HasMetadataKey: "k", MetadataFields: map[string]string{"k": "v"}, IncludeDeferred: true, Priority: &two}})
			if err == nil && res.Issue != nil {
				return errors.New("claimed an issue without metadata")
			}
			return err
		}},
		{"claim next, --exclude-type", nil, func(s *claim.Store) error {
			res, err := s.Claim(ctx, claim.Request{Agent: "a", Filters: claim.Filters{LabelsAny: []string{"backend"}, ExcludeTypes: []string{"chore", "feat"}, IncludeDeferred: true}})
			if err == nil && res.Issue == nil {
				return errors.New("claimed nothing")
			}
			return err
		}},
		{"claim next, bd's JSON", nil, func(s *claim.Store) error {
			res, err := s.Claim(ctx, claim.Request{Agent: "a", BdJSON: true})
			if err == nil && !json.Valid(res.BdJSON) {
				return fmt.Errorf("bd's JSON: %q", res.BdJSON)
			}
			return err
		}},
		{"dry run, bd's JSON", nil, func(s *claim.Store) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "a", DryRun: true, BdJSON: true}))
		}},
		{"claim by a short id", nil, func(s *claim.Store) error {
			id := claimtest.Claimable(t, "0.49.6", "priority")[0]
			res, err := s.Claim(ctx, claim.Request{Agent: "a", ID: id[strings.LastIndexByte(id, '-')+1:]})
			if err == nil && res.Issue.ID != id {
				return fmt.Errorf("claimed %s for %s", res.Issue.ID, id)
			}
			return err
		}},
		{"claim next, max held", held, func(s *claim.Store) error { return ok(s.Claim(ctx, claim.Request{Agent: "w", MaxHeld: 1})) }},
		{"claim next, takeover", leased, func(s *claim.Store) error { return ok(s.Claim(ctx, claim.Request{Agent: "new"})) }},
		{"dry run, takeover", leased, func(s *claim.Store) error { return ok(s.Claim(ctx, claim.Request{Agent: "new", DryRun: true})) }},
		{"re-claim with a lease", held, func(s *claim.Store) error {
			return ok(s.Claim(ctx, claim.Request{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0], Lease: time.Hour}))
		}},
		{"refused: held under a lease", held, func(s *claim.Store) error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]})
			if claim.ErrorCode(err) == claim.EAlready {
				return nil
			}
			return err
		}},
		{"refused: in backoff", func(t *testing.T, s *claim.Store, c *testClock) {
			id := first(t)
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: id}))
			claimtest.Must[claim.Released](t)(s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: id, Failed: true}))
		}, func(s *claim.Store) error {
			_, err := s.Claim(ctx, claim.Request{Agent: "x", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]})
			if claim.ErrorCode(err) == claim.ENotClaimable {
				return nil
			}
			return err
		}},
		{"release refused: held by another", held, func(s *claim.Store) error {
			_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "x", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]})
			var e *claim.Error
			if errors.As(err, &e) && e.Code == claim.EAlready && e.HolderClaimID > 0 {
				return nil
			}
			return err
		}},
		{"release with a reason", held, func(s *claim.Store) error {
			_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0], Reason: "done for now"})
			return err
		}},
		{"failed release that abandons", func(t *testing.T, s *claim.Store, c *testClock) {
			failedTwice(t, s, c)
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: first(t)}))
		}, func(s *claim.Store) error {
			rel, err := s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0], Failed: true})
			if err == nil && !rel.Abandoned {
				return errors.New("not abandoned")
			}
			return err
		}},
		{"resume, renewing the lease", held, func(s *claim.Store) error {
			res, err := s.Claim(ctx, claim.Request{Agent: "w", Resume: true, Filters: claim.Filters{ExcludeLabels: []string{"none"}}})
			if err == nil && !res.Resumed {
				return errors.New("not resumed")
			}
			return err
		}},
		{"heartbeat", held, func(s *claim.Store) error {
			return ok(s.Heartbeat(ctx, claim.HeartbeatRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]}))
		}},
		{"reset of an abandoned issue", func(t *testing.T, s *claim.Store, c *testClock) {
			failedTwice(t, s, c)
			claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "w", ID: first(t)}))
			claimtest.Must[claim.Released](t)(s.Release(ctx, claim.ReleaseRequest{Agent: "w", ID: first(t), Failed: true}))
		}, func(s *claim.Store) error {
			r, err := s.Reset(ctx, claim.ResetRequest{Actor: "ops", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]})
			if err == nil && !r.Label {
				return errors.New("no label removed")
			}
			return err
		}},
		{"close, completing a convoy", convoys, func(s *claim.Store) error {
			c, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0], Reason: "done"})
			if err == nil {
				conn := claimtest.Open(t, s.Workspace.DBPath)
				defer conn.Close()
				got := claimtest.Strings(t, conn, "SELECT id || ' ' || status FROM issues WHERE id LIKE 'cv-%' ORDER BY id")
				assert.DeepEqual(t, got, []string{"cv-after open", "cv-done closed", "cv-open open", "cv-other open"})
				assert.Equal(t, claimtest.Count(t, conn, "SELECT count(*) FROM blocked_issues_cache WHERE issue_id = 'cv-after'"), 0, "unblocked")
				assert.Equal(t, c.Issue.Status, "closed")
			}
			return err
		}},
		{"close, dry run", held, func(s *claim.Store) error {
			return closing(s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0], DryRun: true}))
		}},
		{"close retried", func(t *testing.T, s *claim.Store, c *testClock) {
			held(t, s, c)
			claimtest.Must[claim.Closed](t)(s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: first(t)}))
		}, func(s *claim.Store) error {
			c, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]})
			if err == nil && !c.Already {
				return errors.New("closed twice")
			}
			return err
		}},
		{"close refused: blocked", func(t *testing.T, s *claim.Store, c *testClock) {
			held(t, s, c)
			id := first(t)
			exec(t, s.Workspace.DBPath, "INSERT INTO issues (id, title, priority, created_at, updated_at) VALUES ('cv-blocker', 'b', 2, '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')",
				"INSERT INTO dependencies (issue_id, depends_on_id, type, created_at, created_by) VALUES ('"+id+"', 'cv-blocker', 'blocks', '2025-01-01T00:00:00Z', 't')",
				"INSERT INTO blocked_issues_cache (issue_id) VALUES ('"+id+"')")
		}, func(s *claim.Store) error {
			_, err := s.CloseIssue(ctx, claim.CloseRequest{Agent: "w", ID: claimtest.Claimable(t, "0.49.6", "priority")[0]})
			if claim.ErrorCode(err) == claim.ENotClaimable {
				return nil
			}
			return err
		}},
		{"reap", leased, func(s *claim.Store) error { _, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper"}); return err }},
		{"reap, dry run", leased, func(s *claim.Store) error {
			_, err := s.Reap(ctx, claim.ReapRequest{Actor: "reaper", DryRun: true})
			return err
		}},
		{"explain", held, func(s *claim.Store) error {
			_, err := s.Explain(ctx, claim.Request{Agent: "w", MaxHeld: 1})
			return err
		}},
		{"stats", func(t *testing.T, s *claim.Store, c *testClock) {
			failedTwice(t, s, c)
			leased(t, s, c)
		}, func(s *claim.Store) error { _, err := s.Stats(ctx); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(t *testing.T, fail int64, log *[]string) (int64, error, map[string][2][]string) {
				c := &testClock{}
				c.ns.Store(time.Now().Truncate(time.Second).UnixNano())
				p := claim.Policy{BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour, MaxFailures: 3, AbandonedLabel: "claim:abandoned"}
				s, path := store(t, "0.49.6", claim.Options{Now: c.now, Policy: &p})
				if tc.setup != nil {
					tc.setup(t, s, c)
				}
				before := claimtest.Snapshot(t, path)
				seen := &atomic.Int64{}
				engineOf(s).faults = func(h db.DBTX) db.DBTX { return claimtest.Faulty{DBTX: h, Seen: seen, Fail: fail, Log: log} }
				err := tc.op(s)
				return seen.Load(), err, claimtest.Diff(before, claimtest.Snapshot(t, path))
			}
			var log []string
			n, err, _ := run(t, 0, &log)
			assert.NilError(t, err, "the clean run")
			assert.Assert(t, n > 0)
			for i := int64(1); i <= n; i++ {
				_, err, diff := run(t, i, nil)
				assert.Assert(t, err != nil, "statement %d of %d (%s) failed unnoticed", i, n, log[i-1])
				assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected, "statement %d (%s): %v", i, log[i-1], err)
				assert.DeepEqual(t, diff, map[string][2][]string{})
			}
		})
	}
}

// Nothing starts once the context is cancelled (a signal), and a closed
// Store reports its error.
func TestCancelledAndClosed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ := store(t, "0.49.6", claim.Options{})
	id := claimtest.Claimable(t, "0.49.6", "priority")[0]
	_, err := s.Release(ctx, claim.ReleaseRequest{Agent: "a", ID: id})
	assert.Equal(t, claim.ErrorCode(err), claim.EInterrupted)
	_, err = s.Claim(ctx, claim.Request{Agent: "a", Wait: time.Minute})
	assert.Equal(t, claim.ErrorCode(err), claim.EInterrupted)
	assert.ErrorContains(t, err, "wait for an issue")
	assert.NilError(t, s.Close())
	_, err = s.Stats(context.Background())
	assert.Equal(t, claim.ErrorCode(err), claim.EUnexpected)
	assert.ErrorContains(t, err, "could not read the stats")
}

// cancelling cancels a claim's context once its first statement (the read
// ahead, on the deck) has run to its end.
type cancelling struct {
	db.DBTX
	cancel context.CancelFunc
}

func (c cancelling) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	defer c.cancel()
	return c.DBTX.QueryContext(context.WithoutCancel(ctx), query, args...)
}

// A claim cancelled after its read ahead, before its turn, claims nothing
// and leaves its seat on the deck: the writer with the next ticket takes
// its turn without waiting.
func TestClaimCancelledOnDeck(t *testing.T) {
	t.Parallel()
	s, path := store(t, "0.49.6", claim.Options{})
	before := claimtest.Snapshot(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	engineOf(s).faults = func(h db.DBTX) db.DBTX { return cancelling{DBTX: h, cancel: cancel} }
	_, err := s.Claim(ctx, claim.Request{Agent: "a"})
	assert.Equal(t, claim.ErrorCode(err), claim.EInterrupted)
	q := writers.Open(writers.Dir(), path)
	defer q.Close()
	p, missed := q.Deck(0)
	assert.Assert(t, !missed)
	leave, missed := p.Enter(0)
	leave()
	assert.Assert(t, !missed, "the cancelled claim still holds its seat")
	assert.DeepEqual(t, claimtest.Snapshot(t, path), before)
}

// An issue in progress without any claim event (bd imported it that way)
// is held under claim 0: its holder can re-claim it, and --claim-id 0 is
// no fence.
func TestHeldWithoutClaimEvent(t *testing.T) {
	t.Parallel()
	s, path := store(t, "0.49.6", claim.Options{})
	id := claimtest.Claimable(t, "0.49.6", "priority")[0]
	exec(t, path, "UPDATE issues SET status = 'in_progress', assignee = 'imp' WHERE id = '"+id+"'",
		"DELETE FROM events WHERE issue_id = '"+id+"'")
	res, err := s.Claim(context.Background(), claim.Request{Agent: "imp", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, res.ClaimID, int64(0))
	assert.Equal(t, res.Issue.Assignee, "imp")
	rel, err := s.Release(context.Background(), claim.ReleaseRequest{Agent: "imp", ID: id})
	assert.NilError(t, err)
	assert.Equal(t, rel.ClaimID, int64(0))
}

// --resume returns the claim made first: an issue held without any claim
// event (imported in progress; its claim time is unknown) counts as the
// oldest, and claims of the same time (two imported ones, or two claims
// in the same second) go by issue id.
func TestResumeOrderOfClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	s, path := store(t, "0.49.6", claim.Options{Now: func() time.Time { return now }})
	ids := slices.Sorted(slices.Values(claimtest.Claimable(t, "0.49.6", "priority")[:4]))
	for _, id := range []string{ids[1], ids[0]} { // the same second, the larger id first
		claimtest.Must[claim.Result](t)(s.Claim(ctx, claim.Request{Agent: "imp", ID: id}))
	}
	for _, id := range ids[2:] {
		exec(t, path, "UPDATE issues SET status = 'in_progress', assignee = 'imp' WHERE id = '"+id+"'",
			"DELETE FROM events WHERE issue_id = '"+id+"'")
	}
	for _, want := range []string{ids[2], ids[3], ids[0], ids[1]} {
		res, err := s.Claim(ctx, claim.Request{Agent: "imp", Resume: true})
		assert.NilError(t, err)
		assert.Assert(t, res.Resumed && res.Issue.ID == want, "want %s: %+v", want, res)
		claimtest.Must[claim.Released](t)(s.Release(ctx, claim.ReleaseRequest{Agent: "imp", ID: want}))
	}
}
