package claim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bdclaim/bd-claim/db"
)

// MaxReasonLen is the longest release reason accepted, in characters.
const MaxReasonLen = 2000

// ReleaseRequest gives an issue back.
type ReleaseRequest struct {
	Agent   string
	ID      string
	ClaimID int64  // when not 0, release only while Agent holds the issue under this claim
	Reason  string // recorded in the event and, when given, as a bd comment
	Failed  bool   // the attempt failed: it counts towards backoff and abandonment
}

// Released is the outcome of a release.
type Released struct {
	Issue     *Issue
	ClaimID   int64      // the claim that ended
	Failures  int        // failed attempts since the last reset, this one included (with Failed)
	RetryAt   *time.Time // when claim-next may hand the issue out again (with Failed)
	Abandoned bool       // this failure abandoned the issue
}

// Attempts is an issue's failure history since its last reset.
type Attempts struct {
	Failures      int
	LastFailureAt time.Time
}

// RetryAt is when the backoff after the latest failure ends.
func (a Attempts) RetryAt(p Policy) time.Time { return a.LastFailureAt.Add(p.Backoff(a.Failures)) }

func (s *Store) attempts(ctx context.Context, conn db.DBTX, id string) (Attempts, error) {
	row, err := s.q.EventAttempts(ctx, conn, id)
	if err != nil {
		return Attempts{}, err
	}
	a := Attempts{Failures: int(row.Failures)}
	a.LastFailureAt, _ = time.Parse(eventTime, row.LastFailureAt) // '' when there are none
	return a, nil
}

func validateIssueID(id string) error {
	if strings.TrimSpace(id) == "" {
		return Errorf(EInvalid, "no issue id: pass --id ISSUE")
	}
	return nil
}

func validateReason(reason string) error {
	switch {
	case !utf8.ValidString(reason):
		return Errorf(EInvalid, "the reason is not valid UTF-8")
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return Errorf(EInvalid, "the reason is %d characters long; the limit is %d", utf8.RuneCountInString(reason), MaxReasonLen)
	case strings.ContainsFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }):
		return Errorf(EInvalid, "the reason contains a control character")
	}
	return nil
}

func checkClaimID(id int64) error {
	if id < 0 {
		return Errorf(EInvalid, "claim id %d is not a claim id (a positive number)", id)
	}
	return nil
}

func checkLease(d time.Duration) error {
	switch {
	case d < 0 || d > MaxLease:
		return Errorf(EInvalid, "lease %s is outside 0 to %s", d, MaxLease)
	case d != 0 && d < time.Second:
		return Errorf(EInvalid, "lease %s is shorter than 1s", d)
	}
	return nil
}

// write runs fn in the Store's write transaction: one BEGIN IMMEDIATE
// transaction, retried when busy, never cancelled once begun.
func (s *Store) write(ctx context.Context, doing string, fn func(conn db.DBTX, now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return classify(err, doing)
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	ctx = context.WithoutCancel(ctx)
	return classify(db.Tx(ctx, s.conn, s.retry, func(tx *sql.Tx) error {
		return fn(s.on(tx), s.now())
	}), doing)
}

// heldRow is one in_progress issue of IssueHeld.
type heldRow struct {
	ID           string `json:"id"`
	Assignee     string `json:"assignee"`
	ClaimID      int64  `json:"claim_id"`
	ClaimActor   string `json:"claim_actor"`
	ClaimComment string `json:"claim_comment"`
	ClaimedAt    string `json:"claimed_at"`
}

// held lists every in_progress issue with its claim event.
func (s *Store) held(ctx context.Context, conn db.DBTX) ([]heldRow, error) {
	list, err := s.q.IssueHeld(ctx, conn)
	var rows []heldRow
	_ = json.Unmarshal([]byte(list), &rows) // SQLite's json_group_array output ("" on error)
	return rows, err
}

// holds checks that agent holds issue id (under claimID, when not 0) and
// returns its claim event.
func (s *Store) holds(ctx context.Context, conn db.DBTX, id, agent string, claimID int64) (db.EventClaimCurrentRow, error) {
	st, err := s.q.IssueState(ctx, conn, id)
	if errors.Is(err, sql.ErrNoRows) {
		return db.EventClaimCurrentRow{}, Errorf(ENotFound, "no issue %s in %s", id, s.Workspace.DBPath)
	} else if err != nil {
		return db.EventClaimCurrentRow{}, err
	}
	if st.Status != "in_progress" || st.Assignee != agent {
		return db.EventClaimCurrentRow{}, s.notHeld(ctx, conn, id, agent, claimID, st)
	}
	cur, err := s.current(ctx, conn, id)
	if err == nil && claimID != 0 && claimID != cur.ID {
		err = stale(id, agent, claimID, cur.ID)
	}
	return cur, err
}

// Release gives an issue back: in_progress → open and unassigned, as
// `bd update --status open --assignee ""` writes it, with the reason in the
// event's comment. A failed attempt counts towards the issue's backoff;
// the one that reaches the policy's MaxFailures abandons the issue: it gets
// the abandoned label, as `bd label add` writes it.
func (s *Store) Release(ctx context.Context, req ReleaseRequest) (Released, error) {
	if err := ValidateAgent(req.Agent); err != nil {
		return Released{}, err
	}
	if err := validateIssueID(req.ID); err != nil {
		return Released{}, err
	}
	if err := validateReason(req.Reason); err != nil {
		return Released{}, err
	}
	if err := checkClaimID(req.ClaimID); err != nil {
		return Released{}, err
	}
	var out Released
	err := s.write(ctx, "release an issue", func(conn db.DBTX, now time.Time) error {
		out = Released{}
		cur, err := s.holds(ctx, conn, req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		r, err := s.read(ctx, conn, req.ID)
		if err != nil {
			return err
		}
		out.Issue, out.ClaimID = &r.Issue, cur.ID
		reason := req.Reason
		if reason == "" {
			reason = "no reason given"
		}
		prefix := releasedPrefix
		if req.Failed {
			prefix = failedPrefix
		}
		if _, err := s.transition(ctx, conn, r, req.Agent, "open", "", "status_changed", prefix+reason, now); err != nil {
			return err
		}
		if !req.Failed {
			if req.Reason == "" {
				return nil
			}
			return s.comment(ctx, conn, r.ID, req.Agent, fmt.Sprintf("bd-claim: %s released the issue: %s", req.Agent, req.Reason), now)
		}
		a, err := s.attempts(ctx, conn, r.ID)
		if err != nil {
			return err
		}
		out.Failures = a.Failures
		retry := a.RetryAt(s.policy)
		out.RetryAt = &retry
		note := fmt.Sprintf("bd-claim: attempt %d by %s failed: %s", a.Failures, req.Agent, reason)
		if s.policy.Abandoned(a.Failures) {
			out.Abandoned, out.RetryAt = true, nil
			note += fmt.Sprintf("\nAbandoned after %d failed attempts (max-failures %d): bd-claim hands it out again after `bd-claim reset --id %s`.",
				a.Failures, s.policy.MaxFailures, r.ID)
			if err := s.label(ctx, conn, r, req.Agent, s.policy.AbandonedLabel, true, now); err != nil {
				return err
			}
		}
		return s.comment(ctx, conn, r.ID, req.Agent, note, now)
	})
	return out, err
}

// comment adds a comment as `bd comments add` does, so that bd show lists
// it and bd export carries it.
func (s *Store) comment(ctx context.Context, conn db.DBTX, id, author, text string, now time.Time) error {
	err := s.q.CommentInsert(ctx, conn, db.CommentInsertParams{IssueID: id, Author: author, Text: text, CreatedAt: now.UTC().Format(eventTime)})
	if err == nil {
		err = s.q.DirtyIssueMark(ctx, conn, db.DirtyIssueMarkParams{IssueID: id, MarkedAt: now.Format(time.RFC3339Nano)})
	}
	return err
}

// label adds or removes a label as bd's AddLabel and RemoveLabel do: the
// label row, a label_added or label_removed event, a dirty mark; neither
// updated_at nor the content hash changes. It does nothing when there is
// nothing to change.
func (s *Store) label(ctx context.Context, conn db.DBTX, r *row, actor, label string, add bool, now time.Time) error {
	var n int64
	var err error
	event, comment := "label_added", "Added label: "+label
	if add {
		n, err = s.q.LabelAdd(ctx, conn, db.LabelAddParams{IssueID: r.ID, Label: label})
	} else {
		event, comment = "label_removed", "Removed label: "+label
		n, err = s.q.LabelRemove(ctx, conn, db.LabelRemoveParams{IssueID: r.ID, Label: label})
	}
	if err != nil || n == 0 {
		return err
	}
	r.Labels = slices.DeleteFunc(r.Labels, func(l string) bool { return l == label })
	if add {
		r.Labels = append(r.Labels, label)
		slices.Sort(r.Labels)
	}
	_, err = s.q.EventInsert(ctx, conn, db.EventInsertParams{IssueID: r.ID, EventType: event, Actor: actor, Comment: text(comment), CreatedAt: now.UTC().Format(eventTime)})
	if err == nil {
		err = s.q.DirtyIssueMark(ctx, conn, db.DirtyIssueMarkParams{IssueID: r.ID, MarkedAt: now.Format(time.RFC3339Nano)})
	}
	return err
}

// renew writes a new lease into a claim event's comment, in place: a
// heartbeat adds no row.
func (s *Store) renew(ctx context.Context, conn db.DBTX, id, agent string, cur db.EventClaimCurrentRow, d time.Duration, now time.Time) (*Lease, error) {
	if cur.ID == 0 || cur.Actor != agent {
		return nil, Errorf(ENotClaimable, "issue %s was assigned to %s by %q, not claimed by %s itself, so its claim has no lease to renew: release it and claim it with bd-claim", id, agent, cur.Actor, agent)
	}
	if d == 0 {
		old := parseLease(cur.Comment)
		if old == nil || old.Duration <= 0 {
			return nil, Errorf(EInvalid, "claim %d of issue %s has no lease: give its length with --lease", cur.ID, id)
		}
		d = old.Duration
	}
	l := newLease(now, d)
	_, err := s.q.EventCommentSet(ctx, conn, db.EventCommentSetParams{ID: cur.ID, Comment: text(l.comment())})
	return l, err
}

// HeartbeatRequest renews the lease of a held issue.
type HeartbeatRequest struct {
	Agent   string
	ID      string
	ClaimID int64         // when not 0, renew only while Agent holds the issue under this claim
	Lease   time.Duration // the new lease from now; 0 = the claim's current lease length
}

// Heartbeat renews the lease of a claim Agent holds. It rewrites the
// claim event's comment: no row is added per beat, and the issue row, its
// hash and its export are untouched. A lease that has expired but was not
// yet taken over or reaped can still be renewed.
func (s *Store) Heartbeat(ctx context.Context, req HeartbeatRequest) (Result, error) {
	if err := ValidateAgent(req.Agent); err != nil {
		return Result{}, err
	}
	if err := validateIssueID(req.ID); err != nil {
		return Result{}, err
	}
	if err := checkClaimID(req.ClaimID); err != nil {
		return Result{}, err
	}
	if err := checkLease(req.Lease); err != nil {
		return Result{}, err
	}
	var res Result
	err := s.write(ctx, "renew a lease", func(conn db.DBTX, now time.Time) error {
		cur, err := s.holds(ctx, conn, req.ID, req.Agent, req.ClaimID)
		if err != nil {
			return err
		}
		lease, err := s.renew(ctx, conn, req.ID, req.Agent, cur, req.Lease, now)
		if err != nil {
			return err
		}
		r, err := s.read(ctx, conn, req.ID)
		if err != nil {
			return err
		}
		res = Result{Issue: &r.Issue, ClaimID: cur.ID, Lease: lease}
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
// and the abandoned label goes. actor is recorded as the event's actor. An
// issue without failures or the label is left untouched.
func (s *Store) Reset(ctx context.Context, actor, id string) (Reset, error) {
	if err := ValidateAgent(actor); err != nil {
		return Reset{}, err
	}
	if err := validateIssueID(id); err != nil {
		return Reset{}, err
	}
	var out Reset
	err := s.write(ctx, "reset an issue", func(conn db.DBTX, now time.Time) error {
		out = Reset{}
		r, err := s.read(ctx, conn, id)
		if errors.Is(err, sql.ErrNoRows) {
			return Errorf(ENotFound, "no issue %s in %s", id, s.Workspace.DBPath)
		} else if err != nil {
			return err
		}
		out.Issue = &r.Issue
		a, err := s.attempts(ctx, conn, id)
		if err != nil {
			return err
		}
		labelled := false
		for _, l := range r.Labels {
			labelled = labelled || l == s.policy.AbandonedLabel
		}
		if a.Failures == 0 && !labelled {
			return nil
		}
		out.Cleared, out.Label = a.Failures, labelled
		updated := laterThan(now, r.UpdatedAt).Format(time.RFC3339Nano)
		if _, err := s.q.IssueTouch(ctx, conn, db.IssueTouchParams{UpdatedAt: updated, ID: id}); err != nil {
			return err
		}
		r.UpdatedAt = updated
		if _, err := s.q.EventInsert(ctx, conn, db.EventInsertParams{
			IssueID: id, EventType: "commented", Actor: actor,
			Comment: text(fmt.Sprintf("%scleared %d failed attempts", resetPrefix, a.Failures)), CreatedAt: now.UTC().Format(eventTime),
		}); err != nil {
			return err
		}
		if err := s.label(ctx, conn, r, actor, s.policy.AbandonedLabel, false, now); err != nil {
			return err
		}
		return s.comment(ctx, conn, id, actor, fmt.Sprintf("bd-claim: %s reset the attempt history (%d failed attempts cleared)", actor, a.Failures), now)
	})
	return out, err
}

// Expired is a claim whose lease ended.
type Expired struct {
	ID         string    `json:"id"`
	Holder     string    `json:"holder"`
	ClaimID    int64     `json:"claim_id"`
	LeaseUntil time.Time `json:"lease_expires_at"`
}

// expire ends the expired claim of r: in_progress → open, unassigned, with
// an event saying whose lease ended and what happened next.
func (s *Store) expire(ctx context.Context, conn db.DBTX, r *row, actor string, h Holder, next string, now time.Time) error {
	note := fmt.Sprintf("lease of %s (claim %d) ended; %s", h.Agent, h.ClaimID, next)
	if h.LeaseUntil != nil {
		note = fmt.Sprintf("lease of %s (claim %d) ended %s; %s", h.Agent, h.ClaimID, h.LeaseUntil.Format(time.RFC3339), next)
	}
	if _, err := s.transition(ctx, conn, r, actor, "open", "", "status_changed", expiredPrefix+note, now); err != nil {
		return err
	}
	return s.comment(ctx, conn, r.ID, actor, "bd-claim: "+note, now)
}

// Reap returns every claim whose lease has expired to open, in one
// transaction; with dryRun it only lists them.
func (s *Store) Reap(ctx context.Context, actor string, dryRun bool) ([]Expired, error) {
	if err := ValidateAgent(actor); err != nil {
		return nil, err
	}
	var out []Expired
	find := func(conn db.DBTX, now time.Time) error {
		out = []Expired{}
		held, err := s.held(ctx, conn)
		if err != nil {
			return err
		}
		for _, h := range held {
			if l := heldLease(h.ClaimComment, h.ClaimActor, h.Assignee); l.expired(now) {
				out = append(out, Expired{ID: h.ID, Holder: h.Assignee, ClaimID: h.ClaimID, LeaseUntil: l.Until})
			}
		}
		return nil
	}
	if dryRun {
		return out, classify(find(s.on(nil), s.now()), "find expired leases")
	}
	err := s.write(ctx, "reap expired leases", func(conn db.DBTX, now time.Time) error {
		if err := find(conn, now); err != nil {
			return err
		}
		for _, e := range out {
			r, err := s.read(ctx, conn, e.ID)
			if err != nil {
				return err
			}
			if err := s.expire(ctx, conn, r, actor, Holder{Agent: e.Holder, ClaimID: e.ClaimID, LeaseUntil: &e.LeaseUntil}, "reaped by "+actor, now); err != nil {
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
