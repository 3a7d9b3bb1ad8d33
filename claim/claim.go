package claim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// Result is the outcome of a claim. Issue is nil when nothing was
// claimable; Reason then says why (NoReadyIssue when no issue passes the
// filters and rules).
type Result struct {
	Issue    *Issue
	ClaimID  int64   // the claim's fencing token: the id of its claim event (0 on a dry run)
	Lease    *Lease  // nil without a lease
	TookOver *Holder // the holder whose expired lease this claim took over
	// Resumed: the issue is one the agent held already, returned by a
	// Request.Resume (its claim, its lease renewed): nothing new was
	// claimed.
	Resumed bool
	Reason  string
	// BdJSON, when the request asks for it, is the issue as the
	// workspace's bd prints it in the list of its own claim's --json
	// (compact; nil without an issue): for a claim-next the element of
	// `bd ready --claim --json` (bd v1.3), for a claim by id, and on the
	// SQLite releases, that of `bd update ID --claim --json`. It is read
	// in the claim's transaction, after the claim (on a dry run, as the
	// issue is).
	BdJSON json.RawMessage
}

// Claim claims one issue for req.Agent, or with req.DryRun only finds it.
// A nil Result.Issue with a nil error means no issue is available. The
// claim is chosen and written in one write transaction of the engine, so
// its writes (the issue row, its event, and whatever else bd writes for a
// claim in that workspace) land together or not at all; on Dolt the claim
// is reported only once its Dolt commit is in HEAD too.
func (s *Store) Claim(ctx context.Context, req Request) (Result, error) {
	if err := s.admit(ctx, &req); err != nil {
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
		err := s.look(ctx, "find a ready issue", func(tx engine.Tx) error {
			c, err := s.choose(tx, &req, nil)
			res = c.result()
			if err != nil {
				return err
			}
			return printed(tx, req, &res)
		})
		return res, err
	}
	var ahead engine.Ahead
	if req.ID == "" {
		var err error
		if ahead, err = s.eng.Ahead(ctx, s.spec(req.Agent, req.Filters, s.now())); err != nil {
			return Result{}, s.classify(err, "claim an issue")
		}
	}
	err := s.write(ctx, "claim an issue", ahead, func(tx engine.Tx) error {
		c, err := s.choose(tx, &req, ahead.IDs)
		res = c.result()
		if err != nil || c.r == nil {
			return err
		}
		claim := engine.Claim{Row: c.r, Agent: req.Agent, ByID: req.ID != "", Lease: req.Lease, Ended: c.takeover}
		if c.held != nil { // a re-claim or a resume: the claim stays under the name the issue is held by
			claim.Agent, claim.Held = c.held.Holder, c.held
			claim.Renew = req.Lease > 0 // a re-claim renews the lease it asks for
			if c.resumed {              // a resume, as a heartbeat renews it
				claim.Renew = renews(*c.held, req.Lease)
			}
		}
		taken, err := tx.Take(claim)
		if err != nil {
			return err
		}
		res.ClaimID = taken.ClaimID
		if taken.Lease != nil { // else a held claim keeps its lease (result)
			res.Lease = taken.Lease
		}
		return printed(tx, req, &res)
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// printed adds to res, when req asks for it, its issue as the workspace's
// bd prints its own claim with --json (Result.BdJSON).
func printed(tx engine.Tx, req Request, res *Result) (err error) {
	if req.BdJSON && res.Issue != nil {
		res.BdJSON, err = tx.BdJSON(res.Issue.ID, req.ID != "")
	}
	return err
}

// NoReadyIssue is the reason of a claim-next that finds no issue passing
// its filters and the workspace's rules (a dry run with explain counts what
// each rule excludes).
const NoReadyIssue = "no ready issue matches these filters"

// choice is what a claim would take, found by choose: the issue, and
// whether the agent holds it already or it is taken over from an expired
// lease; or, with no issue, why not.
type choice struct {
	r        *engine.Row
	held     *engine.State // the agent holds r under this claim already (an --id re-claim)
	tookOver *Holder       // the holder whose expired lease the claim ends
	takeover string        // the note of that end
	resumed  bool          // r is the agent's held issue that a --resume returns (under held)
	reason   string
}

// result is the choice as a dry run reports it.
func (c choice) result() Result {
	if c.r == nil {
		return Result{Reason: c.reason}
	}
	res := Result{Issue: &c.r.Issue, TookOver: c.tookOver, Resumed: c.resumed}
	if c.held != nil {
		res.ClaimID, res.Lease = c.held.ID, c.held.Lease()
	}
	return res
}

// choose finds the issue req would claim, and reads it: with req.Resume,
// the agent's held issue that passes its filters (resumable), if any;
// else the engine's next claimable issue of the readiness spec (the first
// claimable of head, the candidates read ahead, when there are any), or
// the issue req.ID (a partial id resolved: req.ID is then the whole one)
// when the specification, widened by what the workspace's bd lets a claim
// by id take (engine.Tx.Eligible), admits it. An --id the specification
// refuses is explained. It writes nothing.
func (s *Store) choose(tx engine.Tx, req *Request, head []string) (choice, error) {
	var c engine.State // of issue req.ID
	var el engine.Eligible
	if req.ID != "" {
		var err error
		if c, err = s.state(tx, &req.ID); err != nil {
			return choice{}, err
		}
		mine := s.sameActor(c.Holder, req.Agent)
		if c.Status == "in_progress" && mine {
			return rechoose(tx, *req, c)
		}
		if req.ClaimID != 0 {
			return choice{}, s.notHeld(req.Agent, req.ClaimID, c)
		}
		if el, err = tx.Eligible(); err != nil {
			return choice{}, err
		}
		if mine && c.Holder != req.Agent { // an open issue assigned to the agent under another spelling
			el.Pools = append(el.Pools, c.Holder)
		}
	}
	spec, held := s.specs(*req, tx.Now(), el)
	if req.Resume { // Validate: never with an --id
		if c, err := s.resumable(tx, *req, held); err != nil || c.r != nil {
			return c, err
		}
	}
	if req.MaxHeld > 0 {
		held, err := tx.HeldCount(req.Agent)
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
	var r *engine.Row
	var err error
	if req.ID == "" {
		if r, err = tx.Next(spec, head); err == nil && r == nil {
			return choice{reason: NoReadyIssue}, nil
		}
	} else if r, err = tx.Find(spec, req.ID); err == nil && r == nil {
		return choice{}, s.refuse(tx, spec, *req, c, el)
	}
	if err != nil {
		return choice{}, err
	}
	ch := choice{r: r}
	if h := r.Claim; h != nil { // an expired lease
		ch.tookOver = &Holder{Agent: h.Holder, ClaimID: h.ID}
		if l := h.Lease(); l != nil {
			ch.tookOver.LeaseUntil = &l.Until
		}
		ch.takeover = ended(*ch.tookOver, "taken over by "+req.Agent)
	}
	return ch, nil
}

// sameActor says whether an issue assigned to holder is assigned to
// agent, as the workspace's bd compares them when it claims by id or
// renews a lease: every move of a holder (re-claim, resume, heartbeat,
// release, close) takes the issue as the agent's under either spelling.
func (s *Store) sameActor(holder, agent string) bool {
	return holder == agent || (holder != "" && s.flavor.SameActor != nil && s.flavor.SameActor(holder, agent))
}

// resumable is what a --resume of req returns: of the in_progress issues
// req.Agent holds, those that pass its filters (spec: heldSpec), the one claimed
// first (a claim whose time is unknown counts as the oldest; the same
// time, by issue id), as the agent's re-claim of it; no issue when none
// passes.
func (s *Store) resumable(tx engine.Tx, req Request, spec engine.Spec) (choice, error) {
	held, err := tx.Held()
	if err != nil {
		return choice{}, err
	}
	var first *engine.State
	for _, c := range held {
		if !s.sameActor(c.Holder, req.Agent) || (first != nil && !s.claimedBefore(c, *first)) {
			continue
		}
		verdicts, err := tx.Verdicts(spec, c.IssueID)
		if err != nil {
			return choice{}, err
		}
		if !slices.Contains(verdicts, false) {
			first = &c
		}
	}
	if first == nil {
		return choice{}, nil
	}
	c, err := tx.State(first.IssueID) // the claim as a heartbeat reads it, to renew it
	if err != nil {
		return choice{}, err
	}
	r, err := tx.Read(c.IssueID)
	return choice{r: r, held: &c, resumed: true}, err
}

// claimedBefore says whether claim a was made before claim b: a claim whose
// time is unknown counts as the oldest; claims of the same time go by
// issue id.
func (s *Store) claimedBefore(a, b engine.State) bool {
	at, bt := s.claimedAt(a), s.claimedAt(b)
	switch {
	case at == nil || bt == nil:
		return at == nil && (bt != nil || a.IssueID < b.IssueID)
	case !at.Equal(*bt):
		return at.Before(*bt)
	}
	return a.IssueID < b.IssueID
}

// renews says whether a --resume renews the lease of the agent's claim c,
// as a heartbeat with the lease asked (asked; 0: the lease's own length)
// does. It leaves the claim as it is when it is a wisp's (bd never leases
// one), or has no lease and none is asked: such a claim is held until
// released, and a lease nobody asked for would let another claim take it
// over once it ran out.
func renews(c engine.State, asked time.Duration) bool {
	return !c.Wisp && (c.Lease() != nil || asked > 0)
}

// rechoose answers an --id claim of an issue the agent holds (under claim
// c): the same claim again, unless req.ClaimID names an older one.
func rechoose(tx engine.Tx, req Request, c engine.State) (choice, error) {
	if req.ClaimID != 0 && !c.Is(req.ClaimID) {
		return choice{}, stale(req.ID, req.Agent, req.ClaimID, c.ID)
	}
	r, err := tx.Read(req.ID)
	return choice{r: r, held: &c}, err
}

// atCapacity says why agent, holding held in_progress issues, may claim no
// new issue under a limit of max (0: no limit); "" when it may.
func atCapacity(agent string, held int64, max int) string {
	if max <= 0 || held < int64(max) {
		return ""
	}
	return fmt.Sprintf("agent %s already holds %s (max held %d)", agent, engine.Plural(int(held), "in_progress issue"), max)
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
func (s *Store) notHeld(agent string, claimID int64, c engine.State) error {
	if s.heldByOther(agent, c) {
		e := Errorf(EAlready, "issue %s is %s, held by %s", c.IssueID, c.Status, c.Holder)
		e.Holder = c.Holder
		if c.Status == "in_progress" {
			e.HolderClaimID = c.ID
			if l := c.Lease(); l != nil {
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

// heldByOther is true when someone other than agent (sameActor) holds the
// issue, or has it assigned while it is open.
func (s *Store) heldByOther(agent string, c engine.State) bool {
	return c.Holder != "" && !s.sameActor(c.Holder, agent) && (c.Status == "in_progress" || c.Status == "open")
}

// refuse says why issue req.ID, in state c, cannot be claimed: each rule
// of spec it fails, evaluated by the database. An issue assigned to one of
// the eligible pools (el) is not held by anyone.
func (s *Store) refuse(tx engine.Tx, spec engine.Spec, req Request, c engine.State, el engine.Eligible) error {
	if s.heldByOther(req.Agent, c) && !slices.Contains(el.Pools, c.Holder) {
		return s.notHeld(req.Agent, 0, c)
	}
	verdicts, err := tx.Verdicts(spec, req.ID)
	if err != nil {
		return err
	}
	var why []string
	for i, r := range spec.Rules {
		if verdicts[i] {
			continue
		}
		switch r.Name {
		case "status":
			why = append(why, "its status is "+c.Status)
		case "backoff":
			a, err := tx.Failures(req.ID)
			if err != nil {
				return err
			}
			why = append(why, fmt.Sprintf("it is in backoff until %s after %s", a.RetryAt.Format(time.RFC3339), engine.Plural(a.Failures, "failed attempt")))
		default:
			why = append(why, r.Reason)
		}
	}
	return Errorf(ENotClaimable, "issue %s is not claimable: %s", req.ID, strings.Join(why, "; "))
}

// ended is the note of the end of h's claim, whose lease ended (or, reaped
// past a grace window, which had none), and what happened next: an event
// of the claim's end says it (Tx.EndClaim).
func ended(h Holder, next string) string {
	if h.LeaseUntil != nil {
		return fmt.Sprintf("lease of %s (claim %d) ended %s; %s", h.Agent, h.ClaimID, h.LeaseUntil.Format(time.RFC3339), next)
	}
	return fmt.Sprintf("claim %d of %s, held without a lease, ended; %s", h.ClaimID, h.Agent, next)
}

// How a waiting claim watches the database: its change signal (changes)
// every pause, the pause doubling from waitPauseMin to waitPauseMax while
// nothing changes; a full look when it changes, and at least every
// Options.LookEvery, since backoffs, leases and defer_until end with the clock
// alone.
const (
	waitPauseMin     = 10 * time.Millisecond
	waitPauseMax     = 500 * time.Millisecond
	defaultLookEvery = 2 * time.Second // Options.LookEvery's default
)

// wait tries req until an issue is claimed, req.Wait passes (a nil Issue,
// with the reason; for an --id claim, its last refusal) or ctx is
// cancelled (INTERRUPTED). Each look is a read;
// only a look that finds an issue takes the write lock to claim it.
func (s *Store) wait(ctx context.Context, req Request) (Result, error) {
	changes, stop, err := s.eng.Watch(ctx)
	if err != nil {
		return Result{}, s.classify(err, "wait for an issue")
	}
	defer stop()
	deadline := time.NewTimer(req.Wait)
	defer deadline.Stop()
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	look := req
	look.DryRun = true
	look.BdJSON = req.BdJSON && req.DryRun // else the claim that follows prints
	for {
		seen, looked := changes(), time.Now()
		res, err := s.claimOnce(ctx, look)
		if err == nil && res.Issue != nil && !req.DryRun {
			res, err = s.claimOnce(ctx, req) // another agent may win it: then wait on
		}
		// An --id claim waits out a holder or a rule too, and reports the
		// last refusal if the wait ends first.
		refused := req.ID != "" && (ErrorCode(err) == EAlready || ErrorCode(err) == ENotClaimable)
		if !refused && (err != nil || res.Issue != nil) {
			return res, err
		}
		for pause := waitPauseMin; ; pause = min(2*pause, waitPauseMax) {
			tick.Reset(pause)
			select {
			case <-ctx.Done():
				return Result{}, s.classify(ctx.Err(), "claim an issue while waiting")
			case <-deadline.C:
				if refused {
					return res, err
				}
				res.Reason = fmt.Sprintf("nothing became claimable within %s", req.Wait) + suffix(res.Reason)
				return res, nil
			case <-tick.C:
			}
			if changes() != seen || time.Since(looked) >= s.lookEvery {
				break
			}
		}
	}
}

// suffix is reason in parentheses after a space, or "" for none or for
// NoReadyIssue, which the wait's own reason says already.
func suffix(reason string) string {
	if reason == NoReadyIssue {
		return ""
	}
	return " (" + reason + ")"
}

// An issue id may be given short, as bd takes it (utils.ResolvePartialID):
// without the workspace's prefix ("wq8" for "fx-wq8"), or as the start of
// its hash ("a3f" for "fx-a3f8e9"). Every command that takes --id resolves
// it this way when no issue has exactly that id; the result, and every
// message after it, name the whole id.

// state reads the claim state of issue *id (Tx.State), first resolving
// *id as bd resolves a partial id when no issue has exactly that id: *id
// is then the whole id. An id that names several issues is refused
// (ISSUE_NOT_FOUND), listing them.
func (s *Store) state(tx engine.Tx, id *string) (engine.State, error) {
	c, err := tx.State(*id)
	if ErrorCode(err) != ENotFound {
		return c, err
	}
	whole, rerr := resolve(tx, *id)
	if rerr != nil || whole == "" {
		return c, cmp.Or(rerr, err)
	}
	*id = whole
	return tx.State(whole)
}

// resolve is the issue that the partial id input names ("" for none): the
// one whose id is the workspace's prefix and input, else the one whose hash
// (the id after its prefix) is input or starts with it.
func resolve(tx engine.Tx, input string) (string, error) {
	part, ok := partialIDPart(input)
	if !ok {
		return "", nil
	}
	prefix, ids, err := tx.Lookalikes(part)
	if err != nil {
		return "", err
	}
	id, matches := resolvePartialID(input, cmp.Or(prefix, "bd"), ids)
	if len(matches) > 1 {
		return "", Errorf(ENotFound, "no issue %s, and %q is the start of %d issue ids: %s; give more of the id", input, input, len(matches), strings.Join(matches, ", "))
	}
	return id, nil
}

// resolvePartialID picks, among ids (every id containing the part of input
// that partialIDPart chose), the one that input names in a workspace whose
// issue prefix is prefix, as bd v1.3.0's ResolvePartialID does: an id that
// is input, or input with the prefix added, first; else one whose hash is
// input's; else the ones whose hash starts with it: matches lists them,
// sorted, and id is set only when there is one.
func resolvePartialID(input, prefix string, ids []string) (id string, matches []string) {
	p := strings.TrimSuffix(prefix, "-") + "-"
	normalized := input
	if !strings.HasPrefix(input, p) && !looksPrefixed(input) {
		normalized = p + input
	}
	hash := strings.TrimPrefix(normalized, p)
	exact := ""
	for _, candidate := range ids {
		if candidate == input || candidate == normalized {
			return candidate, nil
		}
		h := candidate
		if rest, ok := strings.CutPrefix(candidate, p); ok {
			h = rest
		} else if _, rest, ok := strings.Cut(candidate, "-"); ok {
			h = rest
		}
		wisp := strings.TrimPrefix(h, "wisp-") // a wisp's id is <prefix>-wisp-<hash>
		switch {
		case h == hash || wisp == hash:
			exact = candidate
		case strings.HasPrefix(h, hash) || strings.HasPrefix(wisp, hash):
			matches = append(matches, candidate)
		}
	}
	if exact != "" {
		return exact, nil
	}
	slices.Sort(matches)
	if len(matches) == 1 {
		return matches[0], matches
	}
	return "", matches
}

// looksPrefixed says whether id starts with a prefix of its own, as bd's
// looksLikePrefixedID reads one: 1 to 8 lower-case letters or digits, a
// hyphen, then a lower-case letter or digit.
func looksPrefixed(id string) bool {
	i := strings.IndexByte(id, '-')
	if i <= 0 || i > 8 || i+1 >= len(id) {
		return false
	}
	lowerOrDigit := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for j := range i {
		if !lowerOrDigit(id[j]) {
			return false
		}
	}
	return lowerOrDigit(id[i+1])
}

// partialIDPart is the part of input that bd searches ids for: its hash
// (after a hyphen, the last part when that is a hash itself); ok false when
// input cannot be a partial id (empty, or a character no id has).
func partialIDPart(input string) (string, bool) {
	isHash := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '.')
		})
	}
	if !isHash(input) {
		return "", false
	}
	if i := strings.LastIndexByte(input, '-'); i >= 0 && i < len(input)-1 && isHash(input[i+1:]) {
		return input[i+1:], true
	}
	return input, true
}

// classify is classify with the Store's engine's reading of its errors.
func (s *Store) classify(err error, doing string) error { return classify(err, doing, s.eng.Code) }

// look runs fn outside any transaction (Engine.Look): a dry run or
// another read that needs no snapshot.
func (s *Store) look(ctx context.Context, doing string, fn func(engine.Tx) error) error {
	return s.classify(s.eng.Look(ctx, fn), doing)
}

// write is the one shape of every write of the claim lifecycle: the
// Store's writers take turns on a mutex (one connection at a time keeps a
// remembered claim order valid), then fn runs in one write transaction of
// the engine's frame (Engine.Update), at the place ahead in its queue of
// writers (a claim-next's; zero for the others). A signal (ctx cancelled)
// may end the wait for the engine's turn, with nothing written; once
// begun, the transaction runs to its end even when ctx is cancelled: the
// caller then learns of a committed claim instead of leaving it held by
// nobody who knows.
func (s *Store) write(ctx context.Context, doing string, ahead engine.Ahead, fn func(engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		if ahead.Leave != nil {
			ahead.Leave() // a write that ends before its turn comes
		}
		return s.classify(err, doing)
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	return s.classify(s.eng.Update(ctx, ahead, fn), doing)
}
