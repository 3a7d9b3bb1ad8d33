package claim

import (
	"context"
	"fmt"
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
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
	err := s.eng.Snapshot(ctx, func(tx engine.Tx) error { // a read: one snapshot for every figure, no write lock
		st.At = tx.Now().UTC()
		return s.stats(tx, &st)
	})
	return st, s.classify(err, "read the stats")
}

func (s *Store) stats(tx engine.Tx, st *Stats) error {
	now := tx.Now()
	f, err := tx.Figures(s.spec("", Filters{OnlyUnassigned: true}, now), now.Add(-time.Hour))
	if err != nil {
		return err
	}
	st.Open, st.Blocked, st.ReadyTakeovers, st.BdReady, st.LastHour = f.Open, f.Blocked, f.Takeovers, f.BdReady, f.Events
	for p, n := range f.ReadyByPriority {
		st.ReadyByPriority[fmt.Sprintf("P%d", p)] = n
		st.Ready += n
	}
	held, err := tx.Held()
	if err != nil {
		return err
	}
	for _, c := range held {
		hi := HeldIssue{ID: c.IssueID, ClaimID: c.ID, ClaimedAt: s.claimedAt(c)}
		if hi.ClaimedAt != nil {
			hi.AgeSeconds = max(0, int64(now.Sub(*hi.ClaimedAt)/time.Second))
		}
		if l := c.Lease(); l != nil {
			hi.LeaseUntil, hi.Expired, hi.LeaseKind = &l.Until, c.Expired, LeaseAsked
			if c.BdLease {
				hi.LeaseKind = LeaseBd
			}
		}
		if c.Takeable() {
			st.ExpiredLeases = append(st.ExpiredLeases, s.expired(c))
		}
		if n := len(st.InProgress); n == 0 || st.InProgress[n-1].Agent != c.Holder {
			st.InProgress = append(st.InProgress, AgentClaims{Agent: c.Holder})
		}
		last := &st.InProgress[len(st.InProgress)-1]
		last.Issues = append(last.Issues, hi)
	}
	for _, a := range f.Failing {
		switch {
		case a.Labelled || a.Exhausted:
			st.Abandoned = append(st.Abandoned, Abandoned{ID: a.ID, Failures: a.Failures, Labelled: a.Labelled})
		case a.InBackoff:
			st.Backoff = append(st.Backoff, Backoff{ID: a.ID, Failures: a.Failures, RetryAt: a.RetryAt})
		}
	}
	return nil
}
