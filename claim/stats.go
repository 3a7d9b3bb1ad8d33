package claim

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/db"
)

// Stats is the state of a workspace's claims, read in one transaction.
// Its JSON form is part of bd-claim's contract (see README).
type Stats struct {
	At              time.Time      `json:"generated_at"`
	Open            int            `json:"open"`              // open issues
	Ready           int            `json:"ready"`             // claimable now by a new agent with no filters
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
}

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
	now := s.now()
	p := s.policy
	st := Stats{
		At: now.UTC(), ReadyByPriority: map[string]int{}, InProgress: []AgentClaims{},
		ExpiredLeases: []Expired{}, Backoff: []Backoff{}, Abandoned: []Abandoned{},
		Policy: PolicyJSON{p.BackoffInitial.String(), p.BackoffMultiplier, p.BackoffMax.String(), p.MaxFailures, p.AbandonedLabel},
	}
	tx, err := s.conn.BeginTx(ctx, nil) // a read: one snapshot for every figure
	if err != nil {
		return st, classify(err, "read the stats")
	}
	defer tx.Rollback()
	return st, classify(s.stats(ctx, s.on(tx), now, &st), "read the stats")
}

func (s *Store) stats(ctx context.Context, conn db.DBTX, now time.Time, st *Stats) error {
	counts, err := s.q.StatsCounts(ctx, conn)
	if err != nil {
		return err
	}
	st.Open, st.Blocked = int(counts.Open), int(counts.Blocked)
	spec := NewReadySpecification(s.Features, "", Filters{OnlyUnassigned: true}, s.policy, now)
	b := sq.Select().From("issues i").Where(spec.Where())
	byPriority := make([]int, PriorityBacklog+1) // bd's CHECK keeps priority in 0..4
	dest := make([]any, len(byPriority))
	for p := range byPriority {
		b = b.Column(sq.Expr("COALESCE(sum(i.priority = ?), 0)", p))
		dest[p] = &byPriority[p]
	}
	if err := queryRow(ctx, conn, b).Scan(dest...); err != nil {
		return err
	}
	for p, n := range byPriority {
		st.ReadyByPriority[fmt.Sprintf("P%d", p)] = n
		st.Ready += n
	}
	held, err := s.held(ctx, conn)
	if err != nil {
		return err
	}
	for _, h := range held {
		hi := HeldIssue{ID: h.ID, ClaimID: h.ClaimID}
		if t, err := time.Parse(eventTime, h.ClaimedAt); err == nil {
			hi.ClaimedAt, hi.AgeSeconds = &t, max(0, int64(now.Sub(t)/time.Second))
		}
		if l := heldLease(h.ClaimComment, h.ClaimActor, h.Assignee); l != nil {
			hi.LeaseUntil, hi.Expired = &l.Until, l.expired(now)
			if hi.Expired {
				st.ExpiredLeases = append(st.ExpiredLeases, Expired{ID: h.ID, Holder: h.Assignee, ClaimID: h.ClaimID, LeaseUntil: l.Until})
			}
		}
		if n := len(st.InProgress); n == 0 || st.InProgress[n-1].Agent != h.Assignee {
			st.InProgress = append(st.InProgress, AgentClaims{Agent: h.Assignee})
		}
		last := &st.InProgress[len(st.InProgress)-1]
		last.Issues = append(last.Issues, hi)
	}
	list, err := s.q.StatsAttempts(ctx, conn, s.policy.AbandonedLabel)
	if err != nil {
		return err
	}
	var attempts []struct {
		ID            string `json:"id"`
		Failures      int    `json:"failures"`
		LastFailureAt string `json:"last_failure_at"`
		Labelled      int    `json:"labelled"`
	}
	_ = json.Unmarshal([]byte(list), &attempts) // SQLite's json_group_array output
	for _, a := range attempts {
		failures := a.Failures
		last, _ := time.Parse(eventTime, a.LastFailureAt)
		retry := Attempts{Failures: failures, LastFailureAt: last}.RetryAt(s.policy)
		switch {
		case a.Labelled != 0 || s.policy.Abandoned(failures):
			st.Abandoned = append(st.Abandoned, Abandoned{ID: a.ID, Failures: failures, Labelled: a.Labelled != 0})
		case retry.After(now):
			st.Backoff = append(st.Backoff, Backoff{ID: a.ID, Failures: failures, RetryAt: retry})
		}
	}
	ev, err := s.q.EventCountsSince(ctx, conn, now.Add(-time.Hour).UTC().Format(eventTime))
	st.LastHour = EventCounts{int(ev.Claims), int(ev.Releases), int(ev.Failures), int(ev.Reclaims)}
	return err
}
