package claim

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Result is the outcome of a claim. Issue is nil when nothing was
// claimable; Reason then says why (NoReadyIssue when no issue passes the
// filters and rules).
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
// A nil Result.Issue with a nil error means no issue is available. The
// claim is chosen and written in one write transaction of the engine, so
// its writes (the issue row, its event, and whatever else bd writes for a
// claim in that workspace) land together or not at all; on Dolt the claim
// is reported only once its Dolt commit is in HEAD too.
func (s *Store) Claim(ctx context.Context, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	if err := s.admit(ctx, req.Filters); err != nil {
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
			c, err := t.choose(&req, nil)
			res = c.result()
			return err
		})
		return res, err
	}
	head, d, err := s.eng.ahead(ctx, req)
	if err != nil {
		return Result{}, err
	}
	err = s.writeFromDeck(ctx, "claim an issue", d, func(t *txn) error {
		c, err := t.choose(&req, head)
		if err != nil || c.r == nil {
			res = c.result()
			return err
		}
		res, err = t.x.take(c, req)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// NoReadyIssue is the reason of a claim-next that finds no issue passing
// its filters and the workspace's rules (a dry run with explain counts what
// each rule excludes).
const NoReadyIssue = "no ready issue matches these filters"

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

// choose finds the issue req would claim, and reads it: the engine's next
// claimable issue of the readySpec (the first claimable of head, the
// candidates read ahead, when there are any), or the issue req.ID (a
// partial id resolved: req.ID is then the whole one) when the
// specification admits it. An --id the specification refuses is
// explained. It writes nothing.
func (t *txn) choose(ptr *Request, head []string) (choice, error) {
	req := *ptr
	spec, err := t.x.narrow(newReadySpec(t.flavor, req.Agent, req.Filters, t.policy, t.now))
	if err != nil {
		return choice{}, err
	}
	var c claimEvent // of issue req.ID
	if req.ID != "" {
		var err error
		if c, err = t.state(&req.ID); err != nil {
			return choice{}, err
		}
		ptr.ID = req.ID
		if c.Status == "in_progress" && c.Holder == req.Agent {
			return t.rechoose(req, c)
		}
		if req.ClaimID != 0 {
			return choice{}, notHeld(req.Agent, req.ClaimID, c)
		}
	}
	if req.MaxHeld > 0 {
		held, err := t.x.heldCount(req.Agent)
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
	if req.ID == "" {
		if id, ok, err = t.x.next(spec, req, head); err == nil && !ok {
			return choice{reason: NoReadyIssue}, nil
		}
	} else if ok, err = found(t.queryRow(spec.byID(req.ID)).Scan(&id)); err == nil && !ok {
		return choice{}, t.refuse(spec, req, c)
	}
	if err != nil || !ok {
		return choice{}, err
	}
	r, err := t.x.read(id)
	if err != nil {
		return choice{}, err
	}
	ch := choice{r: r}
	if r.Status == "in_progress" { // an expired lease
		if c.IssueID != id {
			if c, err = t.x.claimState(id); err != nil {
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
	if req.ClaimID != 0 && !c.is(req.ClaimID) {
		return choice{}, stale(req.ID, req.Agent, req.ClaimID, c.ID)
	}
	r, err := t.x.read(req.ID)
	return choice{r: r, held: &c}, err
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
