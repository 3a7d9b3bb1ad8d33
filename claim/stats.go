package claim

import (
	"context"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// Stats is the state of a workspace's claims, read in one transaction.
// Its JSON form is part of bd-claim's contract (see README).
type Stats struct {
	At    time.Time `json:"generated_at"`
	Open  int       `json:"open"`  // open issues
	Ready int       `json:"ready"` // claimable now by a new agent with no filters
	// BdReady is what `bd ready -u` lists: the open issues assigned to
	// nobody that bd's own readiness admits. Ready is BdReady less those
	// in backoff or abandoned, plus ReadyTakeovers.
	BdReady int `json:"bd_ready"`
	// ReadyTakeovers are the in_progress issues in Ready: their holders'
	// leases, asked for with --lease, have expired.
	ReadyTakeovers  int            `json:"ready_takeovers"`
	ReadyByPriority map[string]int `json:"ready_by_priority"` // P0..P4, every key present
	Blocked         int            `json:"blocked"`           // open issues with an open blocker
	InProgress      []AgentClaims  `json:"in_progress"`       // by agent, then issue id
	ExpiredLeases   []Expired      `json:"expired_leases"`
	Backoff         []Backoff      `json:"backoff"`   // open issues waiting out a backoff
	Abandoned       []Abandoned    `json:"abandoned"` // open issues claim-next no longer hands out
	LastHour        EventCounts    `json:"last_hour"`
	Policy          PolicyJSON     `json:"policy"`
}

// AgentClaims are the in_progress issues of one agent.
type AgentClaims struct {
	Agent  string      `json:"agent"`
	Issues []HeldIssue `json:"issues"`
}

// HeldIssue is one in_progress issue and its claim.
type HeldIssue struct {
	ID         string     `json:"id"`
	ClaimID    int64      `json:"claim_id"`         // 0 when bd wrote no claim event (an import)
	ClaimedAt  *time.Time `json:"claimed_at"`       // null when unknown
	AgeSeconds int64      `json:"age_seconds"`      // since ClaimedAt (0 when unknown)
	LeaseUntil *time.Time `json:"lease_expires_at"` // null without a lease
	Expired    bool       `json:"lease_expired"`
	// LeaseKind says what an ended lease means: "bd-claim", a lease the
	// holder asked for (--lease), which a claim takes over once it ends;
	// "bd", bd's own lease, which every claim on a Dolt workspace carries
	// and no claim takes over (bd reclaim and reap --older-than recover
	// it). Empty without a lease.
	LeaseKind string `json:"lease_kind,omitempty"`
}

// The kinds of lease (HeldIssue.LeaseKind).
const (
	LeaseAsked = "bd-claim"
	LeaseBd    = "bd"
)

// Backoff is an issue in backoff after failed attempts.
type Backoff struct {
	ID       string    `json:"id"`
	Failures int       `json:"failures"`
	RetryAt  time.Time `json:"retry_at"`
}

// Abandoned is an abandoned issue.
type Abandoned struct {
	ID       string `json:"id"`
	Failures int    `json:"failures"`
	Labelled bool   `json:"labelled"` // carries the abandoned label
}

// EventCounts are the lifecycle events of a period.
type EventCounts struct {
	Claims   int `json:"claims"`   // claim events (bd's own claims included)
	Releases int `json:"releases"` // bd-claim release
	Failures int `json:"failures"` // bd-claim release --failed
	Reclaims int `json:"reclaims"` // expired leases taken over or reaped
	Closes   int `json:"closes"`   // closed events (bd's own closes included)
}

// PolicyJSON is the failure policy the figures were computed with.
type PolicyJSON struct {
	BackoffInitial    string  `json:"backoff_initial"`
	BackoffMultiplier float64 `json:"backoff_multiplier"`
	BackoffMax        string  `json:"backoff_max"`
	MaxFailures       int     `json:"max_failures"`
	AbandonedLabel    string  `json:"abandoned_label"`
}

// Stats reads the workspace's claim state as of now.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	p := s.policy
	st := Stats{
		ReadyByPriority: map[string]int{}, InProgress: []AgentClaims{},
		ExpiredLeases: []Expired{}, Backoff: []Backoff{}, Abandoned: []Abandoned{},
		Policy: PolicyJSON{p.BackoffInitial.String(), p.BackoffMultiplier, p.BackoffMax.String(), p.MaxFailures, p.AbandonedLabel},
	}
	err := s.eng.snapshot(ctx, func(t *txn) error { // a read: one snapshot for every figure, no write lock
		st.At = t.now.UTC()
		return t.stats(&st)
	})
	return st, s.classify(err, "read the stats")
}

func (t *txn) stats(st *Stats) error {
	byPriority := make([]int, PriorityBacklog+1) // bd's CHECK keeps priority in 0..4
	spec := newReadySpec(t.flavor, "", Filters{OnlyUnassigned: true}, t.policy, t.now)
	b := sq.Select("count(*)").Column(sq.Expr("COALESCE(sum(NOT ?), 0)", t.flavor.notBlocked.pred)).From(spec.from).Where("i.status = 'open'")
	if err := t.queryRow(b).Scan(&st.Open, &st.Blocked); err != nil {
		return err
	}
	b = sq.Select("COALESCE(sum(i.status = 'in_progress'), 0)").From(spec.from).Where(spec.where())
	dest := []any{&st.ReadyTakeovers}
	for p := range byPriority {
		b = b.Column(sq.Expr("COALESCE(sum(i.priority = ?), 0)", p))
		dest = append(dest, &byPriority[p])
	}
	if err := t.queryRow(b).Scan(dest...); err != nil {
		return err
	}
	if err := t.queryRow(spec.bdReady()).Scan(&st.BdReady); err != nil {
		return err
	}
	for p, n := range byPriority {
		st.ReadyByPriority[fmt.Sprintf("P%d", p)] = n
		st.Ready += n
	}
	held, err := t.x.held()
	if err != nil {
		return err
	}
	for _, c := range held {
		hi := HeldIssue{ID: c.IssueID, ClaimID: c.ID, ClaimedAt: t.claimedAt(c)}
		if hi.ClaimedAt != nil {
			hi.AgeSeconds = max(0, int64(t.now.Sub(*hi.ClaimedAt)/time.Second))
		}
		if l := c.lease(); l != nil {
			hi.LeaseUntil, hi.Expired, hi.LeaseKind = &l.Until, c.Expired, LeaseAsked
			if c.bdLease {
				hi.LeaseKind = LeaseBd
			}
		}
		if c.takeable() {
			st.ExpiredLeases = append(st.ExpiredLeases, t.expired(c))
		}
		if n := len(st.InProgress); n == 0 || st.InProgress[n-1].Agent != c.Holder {
			st.InProgress = append(st.InProgress, AgentClaims{Agent: c.Holder})
		}
		last := &st.InProgress[len(st.InProgress)-1]
		last.Issues = append(last.Issues, hi)
	}
	b = t.policy.attempts(t.flavor.history, sq.Expr("i.status = 'open'"), t.now).Where("n > 0 OR labelled").OrderBy("id")
	var r attemptsRow
	err = t.each(b, r.dest(), func() {
		switch a := r.done(t.flavor); {
		case a.Labelled || a.Exhausted:
			st.Abandoned = append(st.Abandoned, Abandoned{ID: r.ID, Failures: a.Failures, Labelled: a.Labelled})
		case a.InBackoff:
			st.Backoff = append(st.Backoff, Backoff{ID: r.ID, Failures: a.Failures, RetryAt: a.RetryAt})
		}
	})
	if err != nil {
		return err
	}
	st.LastHour, err = t.x.eventCounts(t.now.Add(-time.Hour))
	return err
}
