package claim

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/bdclaim/bd-claim/db"
	"github.com/bdclaim/bd-claim/db/dolt"
)

// Released is the outcome of a release.
type Released struct {
	Issue     *Issue
	ClaimID   int64      // the claim that ended
	Failures  int        // failed attempts since the last reset, this one included (with Failed)
	RetryAt   *time.Time // when claim-next may hand the issue out again (with Failed)
	Abandoned bool       // this failure abandoned the issue
}

// holds checks that agent holds issue id (under claimID, when not 0) and
// returns its claim.
func (t *txn) holds(id, agent string, claimID int64) (claimEvent, error) {
	c, err := t.issue(id)
	switch {
	case err != nil:
	case c.Status != "in_progress" || c.Holder != agent:
		err = notHeld(agent, claimID, c)
	case claimID != 0 && claimID != c.ID:
		err = stale(id, agent, claimID, c.ID)
	}
	return c, err
}

// Release gives an issue back: in_progress → open and unassigned, as
// `bd update --status open --assignee ""` writes it, with the reason in the
// event's comment. A failed attempt counts towards the issue's backoff;
// the one that reaches the policy's MaxFailures abandons the issue: it gets
// the abandoned label, as `bd label add` writes it.
func (s *Store) Release(ctx context.Context, req ReleaseRequest) (Released, error) {
	if err := req.Validate(); err != nil {
		return Released{}, err
	}
	var out Released
	err := s.write(ctx, "release an issue", func(t *txn) error {
		out = Released{}
		c, err := t.holds(req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		r, err := t.read(req.ID)
		if err != nil {
			return err
		}
		out.Issue, out.ClaimID = &r.Issue, c.ID
		if req.Failed && c.wisp {
			return Errorf(EInvalid, "%s is a wisp (bd's wisps table): bd-claim keeps no failure history for wisps; release it without --failed", req.ID)
		}
		if err := t.unclaim(r, req); err != nil {
			return err
		}
		if !req.Failed {
			if req.Reason == "" {
				return nil
			}
			return t.comment(r.ID, req.Agent, fmt.Sprintf("bd-claim: %s released the issue: %s", req.Agent, req.Reason))
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
		return t.comment(r.ID, req.Agent, note)
	})
	return out, err
}

// noReason is the reason of a failed release that gives none.
const noReason = "no reason given"

// unclaim writes agent's release of r: in_progress → open and unassigned,
// with the reason in the event's comment, as the flavor records a release
// (a failed one counts towards the backoff).
func (t *txn) unclaim(r *row, req ReleaseRequest) error {
	prefix := releasedPrefix
	if req.Failed {
		prefix = failedPrefix
	}
	if t.flavor.dolt {
		var comment sql.NullString
		if req.Reason != "" || req.Failed { // bd unclaim leaves it NULL
			comment = text(prefix + cmp.Or(req.Reason, noReason))
		}
		return t.doltRelease(r, req.Agent, comment)
	}
	_, err := t.transition(r, move{actor: req.Agent, status: "open", event: "status_changed", comment: prefix + cmp.Or(req.Reason, noReason)})
	return err
}

// comment adds a comment as `bd comments add` does, so that bd show lists
// it and bd export carries it. On Dolt it adds none: the events' comments
// carry bd-claim's notes there (bd v1.3's comments need ids and times of
// their own that bd-claim does not reproduce yet).
func (t *txn) comment(id, author, text string) error {
	if t.flavor.dolt {
		return nil
	}
	err := t.q.CommentInsert(t.ctx, t.conn, db.CommentInsertParams{IssueID: id, Author: author, Text: text, CreatedAt: t.flavor.eventAt(t.now)})
	if err == nil {
		err = t.dirty(id, t.flavor.rowAt(t.now))
	}
	return err
}

// label adds or removes a label as bd's AddLabel and RemoveLabel do: the
// label row, a label_added or label_removed event, a dirty mark; neither
// updated_at nor the content hash changes. It does nothing when there is
// nothing to change.
func (t *txn) label(r *row, actor, label string, add bool) error {
	n, err := t.labelSet(r.ID, label, add)
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
	if t.flavor.dolt {
		t.labels = true
		if t.commit == "" { // bd's message; a release's own message covers it
			t.commit = "bd: label " + verb + " " + r.ID
		}
		return t.doltEvent(false, r.ID, event, actor, sql.NullString{}, sql.NullString{}, text(comment))
	}
	if _, err = t.event(r.ID, event, actor, sql.NullString{}, sql.NullString{}, comment); err == nil {
		err = t.dirty(r.ID, t.flavor.rowAt(t.now))
	}
	return err
}

// labelSet adds or removes the label row: 0 when there was nothing to
// change.
func (t *txn) labelSet(id, label string, add bool) (int64, error) {
	switch {
	case t.flavor.dolt && add:
		return t.dq.LabelAdd(t.ctx, t.conn, dolt.LabelAddParams{IssueID: id, Label: label})
	case t.flavor.dolt:
		return t.dq.LabelRemove(t.ctx, t.conn, dolt.LabelRemoveParams{IssueID: id, Label: label})
	case add:
		return t.q.LabelAdd(t.ctx, t.conn, db.LabelAddParams{IssueID: id, Label: label})
	}
	return t.q.LabelRemove(t.ctx, t.conn, db.LabelRemoveParams{IssueID: id, Label: label})
}

// renew writes a new lease into the comment of agent's claim c of issue
// id, in place: a heartbeat adds no row. d 0 renews by the claim's own
// lease length.
func (t *txn) renew(id, agent string, c claimEvent, d time.Duration) (*Lease, error) {
	if c.ID == 0 || c.Actor != agent {
		return nil, Errorf(ENotClaimable, "issue %s was assigned to %s by %q, not claimed by %s itself, so its claim has no lease to renew: release it and claim it with bd-claim", id, agent, c.Actor, agent)
	}
	if d == 0 {
		old := parseLease(c.Comment)
		if old == nil || old.Duration <= 0 {
			return nil, Errorf(EInvalid, "claim %d of issue %s has no lease: give its length with --lease", c.ID, id)
		}
		d = old.Duration
	}
	l := newLease(t.now, d)
	_, err := t.q.EventCommentSet(t.ctx, t.conn, db.EventCommentSetParams{ID: c.ID, Comment: text(l.comment())})
	return l, err
}

// Heartbeat renews the lease of a claim Agent holds. It rewrites the
// claim event's comment: no row is added per beat, and the issue row, its
// hash and its export are untouched. A lease that has expired but was not
// yet taken over or reaped can still be renewed.
func (s *Store) Heartbeat(ctx context.Context, req HeartbeatRequest) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	var res Result
	err := s.write(ctx, "renew a lease", func(t *txn) error {
		c, err := t.holds(req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		renew := t.renew
		if t.flavor.dolt {
			renew = t.doltRenew
		}
		lease, err := renew(req.ID, req.Agent, c, req.Lease)
		if err != nil {
			return err
		}
		r, err := t.read(req.ID)
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
		r, err := t.read(req.ID)
		if ok, err := found(err); !ok {
			return cmp.Or(err, t.notFound(req.ID))
		}
		a, err := t.attempts(req.ID)
		out = Reset{Issue: &r.Issue, Cleared: a.Failures, Label: a.Labelled}
		if err != nil || (a.Failures == 0 && !a.Labelled) {
			return err
		}
		if err := t.resetMark(r, req.Actor, fmt.Sprintf("%scleared %s", resetPrefix, plural(a.Failures, "failed attempt"))); err != nil {
			return err
		}
		if err := t.label(r, req.Actor, t.policy.AbandonedLabel, false); err != nil {
			return err
		}
		return t.comment(req.ID, req.Actor, fmt.Sprintf("bd-claim: %s reset the attempt history (%s cleared)", req.Actor, plural(a.Failures, "failed attempt")))
	})
	return out, err
}

// resetMark records a reset: failed attempts before it stop counting. On
// SQLite the issue is touched (bd's AddComment does) and a commented event
// marks the place; on Dolt only the event (events are not versioned).
func (t *txn) resetMark(r *row, actor, comment string) error {
	if t.flavor.dolt {
		return t.doltEvent(false, r.ID, "commented", actor, sql.NullString{}, sql.NullString{}, text(comment))
	}
	updated := t.flavor.updatedAt(t.now, r.UpdatedAt)
	if _, err := t.q.IssueTouch(t.ctx, t.conn, db.IssueTouchParams{UpdatedAt: updated, ID: r.ID}); err != nil {
		return err
	}
	r.UpdatedAt = updated
	_, err := t.event(r.ID, "commented", actor, sql.NullString{}, sql.NullString{}, comment)
	return err
}

// Expired is a claim whose lease ended.
type Expired struct {
	ID         string    `json:"id"`
	Holder     string    `json:"holder"`
	ClaimID    int64     `json:"claim_id"`
	LeaseUntil time.Time `json:"lease_expires_at"`
}

// expired is claim c, whose lease has ended, as reap and stats list it.
func (c claimEvent) expired() Expired {
	return Expired{ID: c.IssueID, Holder: c.Holder, ClaimID: c.ID, LeaseUntil: c.lease().Until}
}

// expire ends the expired claim of r by h: in_progress → open, unassigned,
// with an event saying whose lease ended and what happened next.
func (t *txn) expire(r *row, actor string, h Holder, next string) error {
	note := fmt.Sprintf("lease of %s (claim %d) ended; %s", h.Agent, h.ClaimID, next)
	if h.LeaseUntil != nil {
		note = fmt.Sprintf("lease of %s (claim %d) ended %s; %s", h.Agent, h.ClaimID, h.LeaseUntil.Format(time.RFC3339), next)
	}
	if t.flavor.dolt {
		return t.doltExpire(r, actor, h.Agent, expiredPrefix+note)
	}
	if _, err := t.transition(r, move{actor: actor, status: "open", event: "status_changed", comment: expiredPrefix + note}); err != nil {
		return err
	}
	return t.comment(r.ID, actor, "bd-claim: "+note)
}

// Reap returns every claim whose lease has expired to open, in one
// transaction; with dryRun it only lists them.
func (s *Store) Reap(ctx context.Context, actor string, dryRun bool) ([]Expired, error) {
	if err := ValidateAgent(actor); err != nil {
		return nil, err
	}
	var out []Expired
	find := func(t *txn) error {
		out = []Expired{}
		held, err := t.held()
		for _, c := range held {
			if c.Expired {
				out = append(out, c.expired())
			}
		}
		return err
	}
	if dryRun {
		return out, s.look(ctx, "find expired leases", find)
	}
	err := s.write(ctx, "reap expired leases", func(t *txn) error {
		if err := find(t); err != nil {
			return err
		}
		for _, e := range out {
			r, err := t.read(e.ID)
			if err != nil {
				return err
			}
			if err := t.expire(r, actor, Holder{Agent: e.Holder, ClaimID: e.ClaimID, LeaseUntil: &e.LeaseUntil}, "reaped by "+actor); err != nil {
				return err
			}
		}
		if len(out) > 0 && t.flavor.dolt {
			t.commit = fmt.Sprintf("bd: reclaim %d expired lease(s)", len(out)) // bd reclaim's message
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
