package sqlite

import (
	"context"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/engine"
)

// orderOf is the order a Store keeps for agent and default filters.
func orderOf(s *claim.Store, agent string) *order {
	var f claim.Filters
	_ = f.Validate()
	return engineOf(s).orders.of(readySpec(s, agent, f))
}

// readySpec is the readiness spec of s's workspace for agent and f, now.
func readySpec(s *claim.Store, agent string, f claim.Filters) engine.Spec {
	return claim.ReadySpec(engineOf(s).flavor.Flavor, claim.DefaultPolicy, agent, f, time.Now())
}

// clockedFixture opens a Store on a copy of the v0.49.6 fixture whose clock
// reads *now.
func clockedFixture(t *testing.T, now *time.Time) *claim.Store {
	t.Helper()
	s, err := open(context.Background(), claim.Workspace{DBPath: claimtest.DBPath(claimtest.Fixture(t, "0.49.6"))},
		claim.Options{Now: func() time.Time { return *now }})
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// claimIDs claims n times for req and returns the ids claimed.
func claimIDs(t *testing.T, s *claim.Store, req claim.Request, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		iss, err := issueOf(s.Claim(context.Background(), req))
		assert.NilError(t, err)
		ids = append(ids, iss.ID)
	}
	return ids
}

// drainIDs claims until nothing is left and returns the ids in claim order.
func drainIDs(t *testing.T, s *claim.Store, req claim.Request) []string {
	t.Helper()
	var ids []string
	for {
		iss, err := issueOf(s.Claim(context.Background(), req))
		assert.NilError(t, err)
		if iss == nil {
			return ids
		}
		ids = append(ids, iss.ID)
	}
}

// A Store that claims again and again keeps its order between claims; the
// result is exactly the order of claiming with a fresh Store each time.
func TestQueueKeepsClaimOrder(t *testing.T) {
	want := claimtest.Claimable(t, "0.49.6", "priority")
	s := openFixture(t, "0.49.6")
	// The first reads ahead, the second sorts afresh, the third builds the order.
	got := claimIDs(t, s, claim.Request{Agent: "q"}, 3)
	assert.Assert(t, orderOf(s, "q").ids != nil, "the order was built")
	assert.DeepEqual(t, append(got, drainIDs(t, s, claim.Request{Agent: "q"})...), want)
}

// What the order cannot see: another connection's write invalidates it, a
// write through the Store's own connection is caught by the check of each
// queued issue, and time moving on (or back) makes it rebuild.
func TestQueueNoticesChanges(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clockedFixture(t, &now)
	order := claimtest.Claimable(t, "0.49.6", "priority")
	claimNext := func() string {
		t.Helper()
		iss, err := issueOf(s.Claim(ctx, claim.Request{Agent: "q"}))
		assert.NilError(t, err)
		return iss.ID
	}
	assert.Equal(t, claimNext(), order[0]) // the first claim: from the candidates read before the lock
	assert.Assert(t, orderOf(s, "q").version == 0, "the first claim leaves the order alone")
	order = order[1:]
	assert.Equal(t, claimNext(), order[0]) // sorted afresh
	assert.Equal(t, claimNext(), order[1]) // builds the order
	assert.Equal(t, len(orderOf(s, "q").ids), len(order)-2)

	// Another connection closes the next issue: data_version changes.
	other := claimtest.Open(t, s.Workspace.DBPath)
	_, err := other.Exec("UPDATE issues SET status = 'closed', closed_at = '2030-01-01T00:00:00Z' WHERE id = ?", order[2])
	assert.NilError(t, err)
	assert.Equal(t, claimNext(), order[3])
	assert.Assert(t, orderOf(s, "q").ids == nil, "invalidated")
	assert.Equal(t, claimNext(), order[4]) // rebuilt

	// The Store's own connection closes the next issue: the version stays,
	// the check of the queued issue skips it.
	_, err = engineOf(s).writer.ExecContext(ctx, "UPDATE issues SET status = 'closed', closed_at = '2030-01-01T00:00:00Z' WHERE id = ?", order[5])
	assert.NilError(t, err)
	assert.Equal(t, claimNext(), order[6])

	now = now.Add(2 * queueTTL) // the order expires
	assert.Equal(t, claimNext(), order[7])
	assert.Assert(t, orderOf(s, "q").ids == nil)
	now = now.Add(-time.Hour) // the clock went back
	assert.Equal(t, claimNext(), order[8])
	assert.Assert(t, orderOf(s, "q").ids == nil)

	assert.Equal(t, claimNext(), order[9]) // builds the order

	// Another agent of the Store takes q's next issue, then one further
	// on: q's order learns both from the Store, not from lookups inside
	// the lock.
	r, err := issueOf(s.Claim(ctx, claim.Request{Agent: "r"}))
	assert.NilError(t, err)
	assert.Equal(t, r.ID, order[10])
	assert.Equal(t, orderOf(s, "q").ids[0], order[11])
	_, err = s.Claim(ctx, claim.Request{Agent: "r", ID: order[12]})
	assert.NilError(t, err)
	_, gone := orderOf(s, "q").gone[order[12]]
	assert.Assert(t, gone, "q's order knows that r took one of its issues")
	assert.Equal(t, claimNext(), order[11])
	assert.Equal(t, claimNext(), order[13])
	assert.Equal(t, len(orderOf(s, "q").gone), 0)

	// An order past its time is dropped, not kept up: an idle agent's
	// order does not grow with the others' claims.
	now = now.Add(2 * queueTTL)
	_, err = s.Claim(ctx, claim.Request{Agent: "r"})
	assert.NilError(t, err)
	assert.Assert(t, orderOf(s, "q").ids == nil && orderOf(s, "q").gone == nil)

	// Nothing left: the order is empty and the answer is none.
	for range len(order) - 1 {
		if _, err := s.Claim(ctx, claim.Request{Agent: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	iss, err := issueOf(s.Claim(ctx, claim.Request{Agent: "q"}))
	assert.NilError(t, err)
	assert.Assert(t, iss == nil)
}

// An issue the Store itself makes claimable again (a release through its
// own connection leaves data_version as it was) is not in the remembered
// order: once the order is spent, the claim sorts afresh and finds it.
func TestQueueSpentSortsAfresh(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clockedFixture(t, &now)
	order := claimtest.Claimable(t, "0.49.6", "priority")
	got := claimIDs(t, s, claim.Request{Agent: "q"}, 3) // the third builds the order
	assert.Assert(t, orderOf(s, "q").ids != nil)
	_, err := s.Release(context.Background(), claim.ReleaseRequest{Agent: "q", ID: got[0]})
	assert.NilError(t, err)
	got = append(got[1:], drainIDs(t, s, claim.Request{Agent: "q"})...)
	assert.DeepEqual(t, got, append(order[1:], order[0]))
}

// The order query failing (here: a table dropped through the Store's own
// connection, which leaves data_version as it was) is an error of the claim.
func TestQueueOrderQueryFails(t *testing.T) {
	s := openFixture(t, "0.49.6")
	ctx := context.Background()
	// The first claim reads ahead (head); the second sorts and starts the
	// order; the third finds that q has no open issue of its own and builds
	// the order.
	claimIDs(t, s, claim.Request{Agent: "q"}, 3)
	_, alone := orderOf(s, "q").alone["q"]
	assert.Assert(t, alone && orderOf(s, "q").ids != nil)
	orderOf(s, "q").ids = nil // spent: the next claim builds it again
	_, err := engineOf(s).writer.ExecContext(ctx, "DROP TABLE blocked_issues_cache")
	assert.NilError(t, err)
	_, err = s.Claim(ctx, claim.Request{Agent: "q"})
	assert.ErrorContains(t, err, "no such table: blocked_issues_cache")
}

// Agents claiming with the same filters share one order, and a Store keeps
// a bounded number of orders (one per set of filters); agents sharing a
// Store never claim the same issue.
func TestQueuesPerFilters(t *testing.T) {
	s := openFixture(t, "0.49.6")
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 30 {
		iss, err := issueOf(s.Claim(ctx, claim.Request{Agent: []string{"a", "b", "c"}[i%3]}))
		assert.NilError(t, err)
		assert.Assert(t, !seen[iss.ID], "%s claimed twice", iss.ID)
		seen[iss.ID] = true
	}
	assert.Equal(t, len(engineOf(s).orders), 1, "three agents, one order")
	for i := range maxOrders + 1 {
		f := claim.Filters{IncludeLabels: []string{string(rune('A' + i))}}
		_ = f.Validate()
		engineOf(s).orders.of(readySpec(s, "a", f))
	}
	// 1 + 65 orders: the 64th new one found 64 and started over.
	assert.Equal(t, len(engineOf(s).orders), 2, "started over when full")
}

// The shared order holds the issues assigned to nobody. An agent that also
// has an open issue assigned to it sorts afresh, so that every claim, by
// any agent of the Store, takes what a dry run for that agent names just
// before it: the agent's own issue in its place, and never another's.
func TestQueueSharedOwnIssues(t *testing.T) {
	ctx := context.Background()
	order := claimtest.Claimable(t, "0.49.6", "priority")
	s := openFixture(t, "0.49.6")
	other := claimtest.Open(t, s.Workspace.DBPath)
	own := []string{order[3], order[6]}
	for _, id := range own {
		_, err := other.Exec("UPDATE issues SET assignee = 'b' WHERE id = ?", id)
		assert.NilError(t, err)
	}
	var got []string
	for i := range 12 {
		req := claim.Request{Agent: []string{"a", "b", "c"}[i%3]}
		dry := req
		dry.DryRun = true
		want, err := issueOf(s.Claim(ctx, dry))
		assert.NilError(t, err)
		iss, err := issueOf(s.Claim(ctx, req))
		assert.NilError(t, err)
		assert.Equal(t, iss.ID, want.ID, "claim %d by %s", i, req.Agent)
		if slices.Contains(own, iss.ID) {
			assert.Equal(t, req.Agent, "b", "%s is b's", iss.ID)
		}
		got = append(got, iss.ID)
	}
	for _, id := range own {
		assert.Assert(t, slices.Contains(got, id), "b claimed its own %s", id)
	}
	assert.Equal(t, len(engineOf(s).orders), 1)
}

// twoStores opens two Stores on one copy of the v0.49.6 fixture.
func twoStores(t *testing.T) (*claim.Store, *claim.Store) {
	root := claimtest.Fixture(t, "0.49.6")
	open := func() *claim.Store {
		s, err := open(context.Background(), claim.Workspace{DBPath: claimtest.DBPath(root)}, claim.Options{})
		assert.NilError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open()
}

// A first claim reads its candidates before the write lock and only checks
// them inside. When another writer took every one of them meanwhile, the
// claim sorts afresh and takes the next claimable issue.
func TestHeadTakenMeanwhile(t *testing.T) {
	ctx := context.Background()
	order := claimtest.Claimable(t, "0.49.6", "priority")
	s, other := twoStores(t)
	req := claim.Request{Agent: "h"}
	assert.NilError(t, req.Validate()) // the priority order: the head is the most urgent priority's
	e := engineOf(s)
	a, err := e.Ahead(ctx, readySpec(s, req.Agent, req.Filters))
	assert.NilError(t, err)
	a.Leave()
	head := a.IDs
	assert.Assert(t, len(head) > 0 && len(head) < len(order), "%d of %d", len(head), len(order))
	assert.DeepEqual(t, head, order[:len(head)])
	for _, id := range head {
		_, err := other.Claim(ctx, claim.Request{Agent: "other", ID: id})
		assert.NilError(t, err)
	}
	var got string
	err = e.Update(ctx, engine.Ahead{}, func(tx engine.Tx) error {
		r, err := tx.Next(readySpec(s, req.Agent, req.Filters), head)
		got = r.ID
		return err
	})
	assert.NilError(t, err)
	assert.Equal(t, got, order[len(head)])
	again, err := e.Ahead(ctx, readySpec(s, req.Agent, req.Filters))
	assert.NilError(t, err)
	assert.Assert(t, again.IDs == nil && again.Place == nil, "only a Store's first claim reads ahead")
}

// The candidates read before the lock leave out the failure policy's
// rules: inside, the claim takes the first of them, in their order, that
// every rule admits, skipping those taken meanwhile and those in backoff.
func TestHeadCheckedInOrder(t *testing.T) {
	ctx := context.Background()
	s, other := twoStores(t)
	req := claim.Request{Agent: "h"}
	assert.NilError(t, req.Validate())
	// The first candidate fails once: it is in backoff, yet still read ahead.
	first, err := other.Claim(ctx, claim.Request{Agent: "f", Filters: req.Filters})
	assert.NilError(t, err)
	_, err = other.Release(ctx, claim.ReleaseRequest{Agent: "f", ID: first.Issue.ID, Failed: true, Reason: "crashed"})
	assert.NilError(t, err)
	e := engineOf(s)
	a, err := e.Ahead(ctx, readySpec(s, req.Agent, req.Filters))
	assert.NilError(t, err)
	a.Leave()
	head := a.IDs
	assert.Assert(t, len(head) >= 4, "%d", len(head))
	assert.Equal(t, head[0], first.Issue.ID, "read ahead without the failure policy")
	_, err = other.Claim(ctx, claim.Request{Agent: "other", ID: head[1]})
	assert.NilError(t, err)
	got := func(head []string) (id string) {
		err := e.Update(ctx, engine.Ahead{}, func(tx engine.Tx) error {
			r, err := tx.Next(readySpec(s, req.Agent, req.Filters), head)
			id = r.ID
			return err
		})
		assert.NilError(t, err)
		return id
	}
	assert.Equal(t, got(head), head[2], "in backoff, taken, then the first claimable")
	assert.Equal(t, got([]string{head[3], head[2]}), head[3], "in the order read")
}
