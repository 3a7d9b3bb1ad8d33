package claim

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// Released is the outcome of a release.
type Released struct {
	Issue     *Issue
	ClaimID   int64      // the claim that ended
	Failures  int        // failed attempts since the last reset, this one included (with Failed)
	RetryAt   *time.Time // when claim-next may hand the issue out again (with Failed)
	Abandoned bool       // this failure abandoned the issue
}

// holds checks that agent holds issue *id (under claimID, when not 0) and
// returns its claim; a partial *id is resolved (Store.state).
func (s *Store) holds(tx engine.Tx, id *string, agent string, claimID int64) (engine.State, error) {
	c, err := s.state(tx, id)
	if err != nil {
		return c, err
	}
	return c, s.heldBy(c, agent, claimID)
}

// heldBy is the fence of every move of a claim's holder: nil when agent
// (sameActor) holds the issue of claim state c (under claimID, when not
// 0), else the refusal (NOT_CLAIMABLE, or ALREADY_CLAIMED naming the
// holder).
func (s *Store) heldBy(c engine.State, agent string, claimID int64) error {
	switch {
	case c.Status != "in_progress" || !s.sameActor(c.Holder, agent):
		return s.notHeld(agent, claimID, c)
	case claimID != 0 && !c.Is(claimID):
		return stale(c.IssueID, agent, claimID, c.ID)
	}
	return nil
}

// Release gives an issue back: in_progress → open and unassigned, as the
// workspace's bd writes a release (Tx.Unclaim: `bd update --status open
// --assignee ""` on SQLite, `bd unclaim` on Dolt), with the reason in the
// event's comment. A failed attempt counts towards the issue's backoff;
// the one that reaches the policy's MaxFailures abandons the issue: it gets
// the abandoned label, as `bd label add` writes it.
func (s *Store) Release(ctx context.Context, req ReleaseRequest) (Released, error) {
	if err := req.Validate(); err != nil {
		return Released{}, err
	}
	var out Released
	err := s.write(ctx, "release an issue", engine.Ahead{}, func(tx engine.Tx) error {
		out = Released{}
		c, err := s.holds(tx, &req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		r, err := tx.Read(req.ID)
		if err != nil {
			return err
		}
		out.Issue, out.ClaimID = &r.Issue, c.ID
		if err := tx.Unclaim(r, req.Agent, req.Failed, req.Reason); err != nil {
			return err
		}
		if !req.Failed {
			if req.Reason == "" {
				return nil
			}
			return tx.Comment(r, req.Agent, fmt.Sprintf("bd-claim: %s released the issue: %s", req.Agent, req.Reason))
		}
		reason := cmp.Or(req.Reason, engine.NoReason)
		a, err := tx.Failures(r.ID)
		if err != nil {
			return err
		}
		out.Failures, out.RetryAt = a.Failures, &a.RetryAt
		note := fmt.Sprintf("bd-claim: attempt %d by %s failed: %s", a.Failures, req.Agent, reason)
		if a.Exhausted {
			out.Abandoned, out.RetryAt = true, nil
			note += fmt.Sprintf("\nAbandoned after %s (max-failures %d): bd-claim hands it out again after `bd-claim reset --id %s`.",
				engine.Plural(a.Failures, "failed attempt"), s.policy.MaxFailures, r.ID)
			if err := tx.Label(r, req.Agent, s.policy.AbandonedLabel, true); err != nil {
				return err
			}
		}
		return tx.Comment(r, req.Agent, note)
	})
	return out, err
}

// Heartbeat renews the lease of a claim Agent holds, where the engine
// keeps leases (Tx.Renew: the claim event's comment on SQLite, bd's leases
// row on Dolt): no row is added per beat, and the issue row, its hash and
// its export are untouched. A lease that has expired but was not yet
// taken over or reaped can still be renewed.
func (s *Store) Heartbeat(ctx context.Context, req HeartbeatRequest) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	var res Result
	err := s.write(ctx, "renew a lease", engine.Ahead{}, func(tx engine.Tx) error {
		c, err := s.holds(tx, &req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		lease, err := tx.Renew(req.ID, req.Agent, c, req.Lease)
		if err != nil {
			return err
		}
		r, err := tx.Read(req.ID)
		if err != nil {
			return err
		}
		res = Result{Issue: &r.Issue, ClaimID: c.ID, Lease: lease}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// Closed is the outcome of a close.
type Closed struct {
	Issue   *Issue
	ClaimID int64 // the claim that ended (0 when the issue was closed already)
	// Already: the issue was closed already, assigned to the agent (a
	// retried close): nothing was written.
	Already bool
}

// defaultCloseReason is bd close's reason when none is given.
const defaultCloseReason = "Closed"

// CloseIssue closes an issue its agent holds, the end of a claim whose work
// is done, as the workspace's bd writes `bd close ID --reason TEXT` by that
// agent (Tx.Close): the issue closed, its event, and the issues it blocked
// unblocked as that bd recomputes them. Only the holder closes, under the
// same fence as Release (and, with ClaimID, only that claim); an issue bd
// would refuse to close (blocked by an open issue, or with open children
// where bd refuses those) is refused too (NOT_CLAIMABLE), and nothing
// changes. An issue already closed while assigned to the agent is closed
// again without a write (Already). With DryRun it only checks.
//
// (It is not named Close: Store.Close releases the database.)
func (s *Store) CloseIssue(ctx context.Context, req CloseRequest) (Closed, error) {
	if err := req.Validate(); err != nil {
		return Closed{}, err
	}
	var out Closed
	run := func(tx engine.Tx) error {
		out = Closed{}
		c, err := s.state(tx, &req.ID)
		if err != nil {
			return err
		}
		already := c.Status == "closed" && s.sameActor(c.Holder, req.Agent)
		if !already {
			if err := s.heldBy(c, req.Agent, req.ClaimID); err != nil {
				return err
			}
			if err := tx.Closable(req.ID); err != nil {
				return err
			}
		}
		r, err := tx.Read(req.ID)
		if err != nil {
			return err
		}
		out = Closed{Issue: &r.Issue, Already: already}
		if already {
			return nil
		}
		out.ClaimID = c.ID
		if req.DryRun {
			return nil
		}
		return tx.Close(r, req.Agent, cmp.Or(req.Reason, defaultCloseReason))
	}
	if req.DryRun {
		return out, s.look(ctx, "check a close", run)
	}
	err := s.write(ctx, "close an issue", engine.Ahead{}, run)
	return out, err
}

// Reset is the outcome of a reset.
type Reset struct {
	Issue   *Issue
	Cleared int  // failed attempts that no longer count
	Label   bool // the abandoned label was removed
}

// Reset clears the failure history of an issue: its failed attempts stop
// counting (a commented event marks where, as bd's AddComment writes one)
// and the abandoned label goes. req.Actor is recorded as the events'
// actor. An issue without failures or the label is left untouched.
func (s *Store) Reset(ctx context.Context, req ResetRequest) (Reset, error) {
	if err := req.Validate(); err != nil {
		return Reset{}, err
	}
	var out Reset
	err := s.write(ctx, "reset an issue", engine.Ahead{}, func(tx engine.Tx) error {
		if _, err := s.state(tx, &req.ID); err != nil {
			return err
		}
		r, err := tx.Read(req.ID)
		if err != nil {
			return err
		}
		a, err := tx.Failures(req.ID)
		out = Reset{Issue: &r.Issue, Cleared: a.Failures, Label: a.Labelled}
		if err != nil || (a.Failures == 0 && !a.Labelled) {
			return err
		}
		if err := tx.ResetMark(r, req.Actor, fmt.Sprintf("%scleared %s", engine.ResetPrefix, engine.Plural(a.Failures, "failed attempt"))); err != nil {
			return err
		}
		if err := tx.Label(r, req.Actor, s.policy.AbandonedLabel, false); err != nil {
			return err
		}
		return tx.Comment(r, req.Actor, fmt.Sprintf("bd-claim: %s reset the attempt history (%s cleared)", req.Actor, engine.Plural(a.Failures, "failed attempt")))
	})
	return out, err
}

// Expired is a claim that reap returns to open: its lease ended, or, with
// a grace window, it has no lease and was made long enough ago.
type Expired struct {
	ID         string     `json:"id"`
	Holder     string     `json:"holder"`
	ClaimID    int64      `json:"claim_id"`
	LeaseUntil *time.Time `json:"lease_expires_at"`     // null for a claim without a lease
	ClaimedAt  *time.Time `json:"claimed_at,omitempty"` // when known
}

// expired is claim c as reap and stats list it.
func (s *Store) expired(c engine.State) Expired {
	e := Expired{ID: c.IssueID, Holder: c.Holder, ClaimID: c.ID, ClaimedAt: s.claimedAt(c)}
	if l := c.Lease(); l != nil {
		e.LeaseUntil = &l.Until
	}
	return e
}

// claimedAt is when claim c was made, nil when unknown (an issue set
// in_progress without a claim event).
func (s *Store) claimedAt(c engine.State) *time.Time {
	at, err := time.Parse(s.flavor.EventTime, c.At)
	if err != nil {
		return nil
	}
	return &at
}

// ReapRequest returns stale claims to open.
type ReapRequest struct {
	Actor  string // recorded as the events' actor
	DryRun bool   // list them; change nothing
	// OlderThan, when set, is a grace window, as bd reclaim --older-than
	// has: it reaps every claim whose lease ended at least that long ago
	// (on Dolt, bd's own lease, which every claim carries, included), and
	// every claim without a lease made at least that long ago. Nil: only
	// the claims whose holder asked for a lease that has ended, those a
	// claim would take over.
	OlderThan *time.Duration
}

// Validate checks the request.
func (req ReapRequest) Validate() error {
	if err := ValidateAgent(req.Actor); err != nil {
		return err
	}
	if req.OlderThan != nil {
		if err := checkDuration(*req.OlderThan, req.OlderThan.String(), MaxWait, 0); err != nil {
			return Errorf(EInvalid, "--older-than: %v", err)
		}
	}
	return nil
}

// stale says whether reap returns claim c to open, at now: the claim a
// takeover would end, or, with a grace window, a claim whose lease ended
// (or, without a lease, which was made) at least that long ago. A wisp's
// claim is never reaped (bd reclaims only leases).
func (s *Store) stale(req ReapRequest, c engine.State, now time.Time) bool {
	switch {
	case req.OlderThan == nil:
		return c.Takeable()
	case c.Wisp:
		return false
	}
	since := s.claimedAt(c)
	if l := c.Lease(); l != nil {
		since = &l.Until
	}
	return since != nil && !since.Add(*req.OlderThan).After(now)
}

// Reap returns the stale claims (ReapRequest) to open, in one
// transaction; with DryRun it only lists them.
func (s *Store) Reap(ctx context.Context, req ReapRequest) ([]Expired, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	var out []Expired
	find := func(tx engine.Tx) error {
		out = []Expired{}
		held, err := tx.Held()
		for _, c := range held {
			if s.stale(req, c, tx.Now()) {
				out = append(out, s.expired(c))
			}
		}
		return err
	}
	if req.DryRun {
		return out, s.look(ctx, "find expired leases", find)
	}
	err := s.write(ctx, "reap expired leases", engine.Ahead{}, func(tx engine.Tx) error {
		if err := find(tx); err != nil {
			return err
		}
		for _, e := range out {
			r, err := tx.Read(e.ID)
			if err != nil {
				return err
			}
			h := Holder{Agent: e.Holder, ClaimID: e.ClaimID, LeaseUntil: e.LeaseUntil}
			if err := tx.EndClaim(r, req.Actor, e.Holder, ended(h, "reaped by "+req.Actor)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
