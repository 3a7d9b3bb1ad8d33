package claim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
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
// returns its claim; a partial *id is resolved (txn.state).
func (t *txn) holds(id *string, agent string, claimID int64) (claimEvent, error) {
	c, err := t.state(id)
	if err != nil {
		return c, err
	}
	return c, c.heldBy(agent, claimID)
}

// heldBy is the fence of every move of a claim's holder: nil when agent
// holds the issue of claim state c (under claimID, when not 0), else the
// refusal (NOT_CLAIMABLE, or ALREADY_CLAIMED naming the holder).
func (c claimEvent) heldBy(agent string, claimID int64) error {
	switch {
	case c.Status != "in_progress" || c.Holder != agent:
		return notHeld(agent, claimID, c)
	case claimID != 0 && !c.is(claimID):
		return stale(c.IssueID, agent, claimID, c.ID)
	}
	return nil
}

// Release gives an issue back: in_progress → open and unassigned, as the
// workspace's bd writes a release (engineTx.unclaim: `bd update --status
// open --assignee ""` on SQLite, `bd unclaim` on Dolt), with the reason in
// the event's comment. A failed attempt counts towards the issue's backoff;
// the one that reaches the policy's MaxFailures abandons the issue: it gets
// the abandoned label, as `bd label add` writes it.
func (s *Store) Release(ctx context.Context, req ReleaseRequest) (Released, error) {
	if err := req.Validate(); err != nil {
		return Released{}, err
	}
	var out Released
	err := s.write(ctx, "release an issue", func(t *txn) error {
		out = Released{}
		c, err := t.holds(&req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		r, err := t.x.read(req.ID)
		if err != nil {
			return err
		}
		out.Issue, out.ClaimID = &r.Issue, c.ID
		if err := t.x.unclaim(r, req); err != nil {
			return err
		}
		if !req.Failed {
			if req.Reason == "" {
				return nil
			}
			return t.x.comment(r, req.Agent, fmt.Sprintf("bd-claim: %s released the issue: %s", req.Agent, req.Reason))
		}
		reason := cmp.Or(req.Reason, noReason)
		a, err := t.attempts(r.ID)
		if err != nil {
			return err
		}
		out.Failures, out.RetryAt = a.Failures, &a.RetryAt
		note := fmt.Sprintf("bd-claim: attempt %d by %s failed: %s", a.Failures, req.Agent, reason)
		if a.Exhausted {
			out.Abandoned, out.RetryAt = true, nil
			note += fmt.Sprintf("\nAbandoned after %s (max-failures %d): bd-claim hands it out again after `bd-claim reset --id %s`.",
				plural(a.Failures, "failed attempt"), t.policy.MaxFailures, r.ID)
			if err := t.label(r, req.Agent, t.policy.AbandonedLabel, true); err != nil {
				return err
			}
		}
		return t.x.comment(r, req.Agent, note)
	})
	return out, err
}

// noReason is the reason of a failed release that gives none.
const noReason = "no reason given"

// releaseComment is the comment of a release's event, as the protocol
// records a release: its prefix (a failed attempt counts towards the
// backoff) and its reason.
func releaseComment(req ReleaseRequest) string {
	prefix := releasedPrefix
	if req.Failed {
		prefix = failedPrefix
	}
	return prefix + cmp.Or(req.Reason, noReason)
}

// label adds or removes a label as bd's AddLabel and RemoveLabel do: the
// label row, and the engine's record of the change (a label_added or
// label_removed event); neither updated_at nor the content hash changes.
// It does nothing when there is nothing to change.
func (t *txn) label(r *row, actor, label string, add bool) error {
	n, err := t.x.labelSet(r.ID, label, add)
	if err != nil || n == 0 {
		return err
	}
	verb, event, comment := "add", "label_added", "Added label: "+label
	if !add {
		verb, event, comment = "remove", "label_removed", "Removed label: "+label
	}
	r.Labels = slices.DeleteFunc(r.Labels, func(l string) bool { return l == label })
	if add {
		r.Labels = append(r.Labels, label)
		slices.Sort(r.Labels)
	}
	return t.x.labelled(r, actor, verb, event, comment)
}

// Heartbeat renews the lease of a claim Agent holds, where the engine
// keeps leases (engineTx.renew: the claim event's comment on SQLite, bd's
// leases row on Dolt): no row is added per beat, and the issue row, its
// hash and its export are untouched. A lease that has expired but was not
// yet taken over or reaped can still be renewed.
func (s *Store) Heartbeat(ctx context.Context, req HeartbeatRequest) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	var res Result
	err := s.write(ctx, "renew a lease", func(t *txn) error {
		c, err := t.holds(&req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		lease, err := t.x.renew(req.ID, req.Agent, c, req.Lease)
		if err != nil {
			return err
		}
		r, err := t.x.read(req.ID)
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
// agent (engineTx.closeIssue): the issue closed, its event, and the issues
// it blocked unblocked as that bd recomputes them. Only the holder closes,
// under the same fence as Release (and, with ClaimID, only that claim); an
// issue bd would refuse to close (blocked by an open issue, or with open
// children where bd refuses those) is refused too (NOT_CLAIMABLE), and
// nothing changes. An issue already closed while assigned to the agent is
// closed again without a write (Already). With DryRun it only checks.
//
// (It is not named Close: Store.Close releases the database.)
func (s *Store) CloseIssue(ctx context.Context, req CloseRequest) (Closed, error) {
	if err := req.Validate(); err != nil {
		return Closed{}, err
	}
	var out Closed
	run := func(t *txn) error {
		out = Closed{}
		c, err := t.state(&req.ID)
		if err != nil {
			return err
		}
		already := c.Status == "closed" && c.Holder == req.Agent
		if !already {
			if err := c.heldBy(req.Agent, req.ClaimID); err != nil {
				return err
			}
			if err := t.x.closable(req.ID); err != nil {
				return err
			}
		}
		r, err := t.x.read(req.ID)
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
		return t.x.closeIssue(r, req.Agent, cmp.Or(req.Reason, defaultCloseReason))
	}
	if req.DryRun {
		return out, s.look(ctx, "check a close", run)
	}
	err := s.write(ctx, "close an issue", run)
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
	err := s.write(ctx, "reset an issue", func(t *txn) error {
		if _, err := t.state(&req.ID); err != nil {
			return err
		}
		r, err := t.x.read(req.ID)
		if err != nil {
			return err
		}
		a, err := t.attempts(req.ID)
		out = Reset{Issue: &r.Issue, Cleared: a.Failures, Label: a.Labelled}
		if err != nil || (a.Failures == 0 && !a.Labelled) {
			return err
		}
		if err := t.x.resetMark(r, req.Actor, fmt.Sprintf("%scleared %s", resetPrefix, plural(a.Failures, "failed attempt"))); err != nil {
			return err
		}
		if err := t.label(r, req.Actor, t.policy.AbandonedLabel, false); err != nil {
			return err
		}
		return t.x.comment(r, req.Actor, fmt.Sprintf("bd-claim: %s reset the attempt history (%s cleared)", req.Actor, plural(a.Failures, "failed attempt")))
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
func (t *txn) expired(c claimEvent) Expired {
	e := Expired{ID: c.IssueID, Holder: c.Holder, ClaimID: c.ID, ClaimedAt: t.claimedAt(c)}
	if l := c.lease(); l != nil {
		e.LeaseUntil = &l.Until
	}
	return e
}

// claimedAt is when claim c was made, nil when unknown (an issue set
// in_progress without a claim event).
func (t *txn) claimedAt(c claimEvent) *time.Time {
	at, err := time.Parse(t.flavor.eventTime, c.At)
	if err != nil {
		return nil
	}
	return &at
}

// expire ends the claim of r by h, whose lease ended (or, reaped past a
// grace window, which had none): in_progress → open, unassigned, with an
// event saying whose claim ended and what happened next.
func (t *txn) expire(r *row, actor string, h Holder, next string) error {
	note := fmt.Sprintf("claim %d of %s, held without a lease, ended; %s", h.ClaimID, h.Agent, next)
	if h.LeaseUntil != nil {
		note = fmt.Sprintf("lease of %s (claim %d) ended %s; %s", h.Agent, h.ClaimID, h.LeaseUntil.Format(time.RFC3339), next)
	}
	return t.x.endClaim(r, actor, h.Agent, note)
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
func (req ReapRequest) stale(t *txn, c claimEvent) bool {
	switch {
	case req.OlderThan == nil:
		return c.takeable()
	case c.leaseless:
		return false
	}
	since := t.claimedAt(c)
	if l := c.lease(); l != nil {
		since = &l.Until
	}
	return since != nil && !since.Add(*req.OlderThan).After(t.now)
}

// Reap returns the stale claims (ReapRequest.stale) to open, in one
// transaction; with DryRun it only lists them.
func (s *Store) Reap(ctx context.Context, req ReapRequest) ([]Expired, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	var out []Expired
	find := func(t *txn) error {
		out = []Expired{}
		held, err := t.x.held()
		for _, c := range held {
			if req.stale(t, c) {
				out = append(out, t.expired(c))
			}
		}
		return err
	}
	if req.DryRun {
		return out, s.look(ctx, "find expired leases", find)
	}
	err := s.write(ctx, "reap expired leases", func(t *txn) error {
		if err := find(t); err != nil {
			return err
		}
		for _, e := range out {
			r, err := t.x.read(e.ID)
			if err != nil {
				return err
			}
			if err := t.expire(r, req.Actor, Holder{Agent: e.Holder, ClaimID: e.ClaimID, LeaseUntil: e.LeaseUntil}, "reaped by "+req.Actor); err != nil {
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

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
