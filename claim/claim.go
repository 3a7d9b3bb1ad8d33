package claim

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Result is the outcome of a claim. Issue is nil when nothing was
// claimable; Reason then says why when it is more than "no ready issue".
type Result struct {
	Issue    *Issue
	ClaimID  int64   // the claim's fencing token: the id of its claim event (0 on a dry run)
	Lease    *Lease  // nil without a lease
	TookOver *Holder // the holder whose expired lease this claim took over
	Reason   string
}

// Holder is an agent holding an issue under one claim.
type Holder struct {
	Agent      string     `json:"agent"`
	ClaimID    int64      `json:"claim_id"`
	LeaseUntil *time.Time `json:"lease_expires_at,omitempty"`
}

// Claim claims one issue for req.Agent, or with req.DryRun only finds it.
// A nil Result.Issue with a nil error means no issue is available. The row
// update, its event and its dirty mark are written in one BEGIN IMMEDIATE
// transaction, so they land together or not at all.
func (s *Store) Claim(ctx context.Context, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	if req.Wait > 0 {
		return s.wait(ctx, req)
	}
	return s.claimOnce(ctx, req)
}

// claimOnce makes one attempt: a read for a dry run, else one write
// transaction.
func (s *Store) claimOnce(ctx context.Context, req Request) (Result, error) {
	var res Result
	if req.DryRun {
		err := s.look(ctx, "find a ready issue", func(t *txn) error {
			c, err := t.choose(req, nil, nil)
			res = c.result()
			return err
		})
		return res, err
	}
	head, d, err := s.head(ctx, req)
	if err != nil {
		return Result{}, err
	}
	err = s.writeFromDeck(ctx, "claim an issue", d, func(t *txn) error {
		var q *queue
		if !t.flavor.dolt { // Dolt: no change counter to trust a remembered order by
			q = t.queues.of(req)
		}
		c, err := t.choose(req, q, head)
		if err != nil || c.r == nil {
			res = c.result()
			return err
		}
		res, err = t.take(c, req)
		if q != nil {
			t.committed = append(t.committed, func() { t.queues.taken(c.r.ID, t.now) })
		}
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// headSize is how many candidates a first claim reads before it takes the
// write lock.
const headSize = 64

// head reads, before the write lock is taken, the first candidates of a
// Store's first claim-next on SQLite (a claim process's only one): inside
// the lock, the claim then only checks them in order, in one statement
// (readySpec.firstOf), and sorts the candidates afresh only when none is
// claimable any more. The lock is held for a few lookups instead of the
// sort, which is most of a claim's work. Later claims of a Store use its
// remembered order instead (queue). A candidate that became claimable
// after the read, however urgent, waits for the next claim, as if the
// claim had run at the read. It reads them on the writers' queue's deck
// (db.Queue.Deck), which it returns: only the writes of the two writers
// ahead (and any write that does not queue on the deck: bd's, a release,
// an --id claim) come between the read and the claim's turn, where a
// claim that read on arrival would find the candidates taken by every
// writer queued before it, and sort afresh.
func (s *Store) head(ctx context.Context, req Request) ([]string, deck, error) {
	if s.flavor.dolt || req.ID != "" || !s.readAhead.CompareAndSwap(false, true) {
		return nil, deck{}, nil
	}
	d := deck{at: time.Now()}
	d.place, _ = s.queue().Deck(s.queueWait()) // a missed deck leaves no time for the turn
	var ids []string
	err := s.look(ctx, "claim an issue", func(t *txn) error {
		// Without the failure policy's rules: the lookups they make per
		// candidate were half of this read, and inside the lock firstOf
		// checks the candidates against every rule anyway.
		spec := newReadySpec(t.flavor, req.Agent, req.Filters, t.policy, t.now).without(rule.costly)
		var id string
		return t.each(spec.nextK(headSize), []any{&id}, func() { ids = append(ids, id) })
	})
	if err != nil {
		d.place.Leave()
	}
	return ids, d, err
}

// spec is req's readySpec for a claim, narrowed by the flavor where a
// rule cannot refuse anything (doltSpec).
func (t *txn) spec(req Request) (readySpec, error) {
	spec := newReadySpec(t.flavor, req.Agent, req.Filters, t.policy, t.now)
	if t.flavor.dolt {
		return t.doltSpec(spec)
	}
	return spec, nil
}

// choice is what a claim would take, found by choose: the issue, and
// whether the agent holds it already or it is taken over from an expired
// lease; or, with no issue, why not.
type choice struct {
	r        *row
	held     *claimEvent // the agent holds r under this claim already (an --id re-claim)
	tookOver *Holder     // the holder whose expired lease the claim ends
	reason   string
}

// result is the choice as a dry run reports it.
func (c choice) result() Result {
	if c.r == nil {
		return Result{Reason: c.reason}
	}
	res := Result{Issue: &c.r.Issue, TookOver: c.tookOver}
	if c.held != nil {
		res.ClaimID, res.Lease = c.held.ID, c.held.lease()
	}
	return res
}

// choose finds the issue req would claim, and reads it: the first
// candidate of the readySpec (the first claimable of head, the candidates
// read ahead, or from the remembered order q, when there is one), or the
// issue req.ID when the specification admits it. An --id the
// specification refuses is explained. It writes nothing.
func (t *txn) choose(req Request, q *queue, head []string) (choice, error) {
	spec, err := t.spec(req)
	if err != nil {
		return choice{}, err
	}
	var c claimEvent // of issue req.ID
	if req.ID != "" {
		var err error
		if c, err = t.issue(req.ID); err != nil {
			return choice{}, err
		}
		if c.Status == "in_progress" && c.Holder == req.Agent {
			return t.rechoose(req, c)
		}
		if req.ClaimID != 0 {
			return choice{}, notHeld(req.Agent, req.ClaimID, c)
		}
	}
	if req.MaxHeld > 0 {
		held, err := t.heldCount(req.Agent)
		if err != nil {
			return choice{}, err
		}
		if why := atCapacity(req.Agent, held, req.MaxHeld); why != "" {
			if req.ID != "" {
				return choice{}, Errorf(ENotClaimable, "issue %s is not claimable (capacity): %s", req.ID, why)
			}
			return choice{reason: why}, nil
		}
	}
	var id string
	var ok bool
	if len(head) > 0 {
		ok, err = found(t.queryRow(spec.firstOf(head)).Scan(&id))
	}
	switch {
	case err != nil || ok:
	case req.ID != "":
		if ok, err = found(t.queryRow(spec.byID(req.ID)).Scan(&id)); err == nil && !ok {
			return choice{}, t.refuse(spec, req, c)
		}
	case t.flavor.dolt:
		id, ok, err = t.doltNext(spec)
	case q == nil:
		ok, err = found(t.queryRow(spec.next()).Scan(&id))
	default:
		id, ok, err = q.next(t, spec)
	}
	if err != nil || !ok {
		return choice{}, err
	}
	r, err := t.read(id)
	if err != nil {
		return choice{}, err
	}
	ch := choice{r: r}
	if r.Status == "in_progress" { // an expired lease
		if c.IssueID != id {
			if c, err = t.issue(id); err != nil {
				return choice{}, err
			}
		}
		ch.tookOver = &Holder{Agent: c.Holder, ClaimID: c.ID}
		if l := c.lease(); l != nil {
			ch.tookOver.LeaseUntil = &l.Until
		}
	}
	return ch, nil
}

// rechoose answers an --id claim of an issue the agent holds (under claim
// c): the same claim again, unless req.ClaimID names an older one.
func (t *txn) rechoose(req Request, c claimEvent) (choice, error) {
	if req.ClaimID != 0 && req.ClaimID != c.ID {
		return choice{}, stale(req.ID, req.Agent, req.ClaimID, c.ID)
	}
	r, err := t.read(req.ID)
	return choice{r: r, held: &c}, err
}

// take writes the claim c: a takeover ends the expired claim first; an
// issue the agent holds already is claimed again without a write, its
// lease renewed when req asks for one.
func (t *txn) take(c choice, req Request) (Result, error) {
	if t.flavor.dolt {
		return t.doltTake(c, req)
	}
	res := c.result()
	if c.held != nil {
		var err error
		if req.Lease > 0 {
			res.Lease, err = t.renew(req.ID, req.Agent, *c.held, req.Lease)
		}
		return res, err
	}
	if c.tookOver != nil {
		if err := t.expire(c.r, req.Agent, *c.tookOver, "taken over by "+req.Agent); err != nil {
			return Result{}, err
		}
	}
	res.Lease = newLease(t.now, req.Lease)
	var comment string
	if res.Lease != nil {
		comment = res.Lease.comment()
	}
	var err error
	res.ClaimID, err = t.transition(c.r, move{actor: req.Agent, status: "in_progress", assignee: req.Agent,
		event: t.flavor.claimEvent, comment: comment})
	return res, err
}

// atCapacity says why agent, holding held in_progress issues, may claim no
// new issue under a limit of max (0: no limit); "" when it may.
func atCapacity(agent string, held int64, max int) string {
	if max <= 0 || held < int64(max) {
		return ""
	}
	return fmt.Sprintf("agent %s already holds %s (max held %d)", agent, plural(int(held), "in_progress issue"), max)
}

// stale refuses a claim id that is no longer the holder's: the same agent
// claimed the issue again since, and that later claim is another holder.
func stale(id, agent string, claimID, current int64) error {
	e := Errorf(EAlready, "claim %d no longer holds issue %s: %s holds it under claim %d", claimID, id, agent, current)
	e.Holder, e.HolderClaimID = agent, current
	return e
}

// notHeld refuses an operation of agent (under claimID, when not 0) on an
// issue, in state c, that it does not hold: ALREADY_CLAIMED naming another
// holder (and its claim), else NOT_CLAIMABLE.
func notHeld(agent string, claimID int64, c claimEvent) error {
	if heldByOther(agent, c) {
		e := Errorf(EAlready, "issue %s is %s, held by %s", c.IssueID, c.Status, c.Holder)
		e.Holder = c.Holder
		if c.Status == "in_progress" {
			e.HolderClaimID = c.ID
			if l := c.lease(); l != nil {
				e.Message += fmt.Sprintf(" under claim %d, leased until %s", c.ID, l.Until.Format(time.RFC3339))
			}
		}
		return e
	}
	if claimID != 0 {
		return Errorf(ENotClaimable, "claim %d no longer holds issue %s: it is %s and not held by %s", claimID, c.IssueID, c.Status, agent)
	}
	return Errorf(ENotClaimable, "issue %s is %s, not held by %s", c.IssueID, c.Status, agent)
}

// heldByOther is true when someone other than agent holds the issue, or
// has it assigned while it is open.
func heldByOther(agent string, c claimEvent) bool {
	return c.Holder != "" && c.Holder != agent && (c.Status == "in_progress" || c.Status == "open")
}

// refuse says why issue req.ID, in state c, cannot be claimed: each rule
// of spec it fails, evaluated by the database.
func (t *txn) refuse(spec readySpec, req Request, c claimEvent) error {
	if heldByOther(req.Agent, c) {
		return notHeld(req.Agent, 0, c)
	}
	verdicts := make([]any, len(spec.rules))
	for i := range verdicts {
		verdicts[i] = new(int)
	}
	if err := t.queryRow(spec.verdicts(req.ID)).Scan(verdicts...); err != nil {
		return err
	}
	var why []string
	for i, r := range spec.rules {
		if *verdicts[i].(*int) != 0 {
			continue
		}
		switch r.name {
		case "status":
			why = append(why, "its status is "+c.Status)
		case "backoff":
			a, err := t.attempts(req.ID)
			if err != nil {
				return err
			}
			why = append(why, fmt.Sprintf("it is in backoff until %s after %s", a.RetryAt.Format(time.RFC3339), plural(a.Failures, "failed attempt")))
		default:
			why = append(why, r.reason)
		}
	}
	return Errorf(ENotClaimable, "issue %s is not claimable: %s", req.ID, strings.Join(why, "; "))
}
