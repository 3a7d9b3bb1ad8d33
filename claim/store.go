package claim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/db"
)

// Issue is a claimed (or, in a dry run, claimable) issue as the JSON
// contract shows it.
type Issue struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Status      string   `json:"status"`
	Assignee    string   `json:"assignee"`
	Priority    int      `json:"priority"`
	IssueType   string   `json:"issue_type"`
	Labels      []string `json:"labels"`
	ContentHash string   `json:"content_hash"`
	ExternalRef *string  `json:"external_ref"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// Request is one claim.
type Request struct {
	Agent   string
	Filters Filters
	ID      string // claim this issue only (compare-and-swap); "" = the next ready one
	DryRun  bool   // report what would be claimed, change nothing
	// ClaimID, with ID, fences a re-claim: it succeeds only while Agent
	// still holds the issue under this claim.
	ClaimID int64
	Lease   time.Duration // lease of the claim; 0 = none (held until released)
	MaxHeld int           // claim nothing while Agent holds this many in_progress issues; 0 = no limit
	Wait    time.Duration // when nothing is claimable, keep watching this long
}

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

// Options configure a Store.
type Options struct {
	// BusyTimeout is how long SQLite waits for another writer's lock
	// before a try counts as busy: 0 means 5s, a negative value not at all.
	BusyTimeout time.Duration
	// Retry bounds the tries after busy timeouts (default 3 tries, 25ms).
	Retry db.Retry
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Policy is the failure policy (default DefaultPolicy).
	Policy *Policy
}

// Store claims issues in one Beads database. Open it once, claim many times;
// it is safe for concurrent use.
type Store struct {
	Workspace Workspace
	Features  Features
	conn      *sql.DB
	stmts     *db.Stmts
	writing   sync.Mutex // held for a claim's write transaction
	queues    queues     // guarded by writing
	q         *db.Queries
	readCols  []string // the issues columns read for a claim (see read)
	readSQL   string
	now       func() time.Time
	retry     db.Retry
	policy    Policy
	// faults, when set (by this package's tests), wraps the handle every
	// query runs on, to make chosen statements fail.
	faults func(db.DBTX) db.DBTX
}

// on returns the handle a Store's queries run on: in tx when it is not
// nil, else on the pool; each statement is prepared once (db.Stmts).
func (s *Store) on(tx *sql.Tx) db.DBTX {
	h := s.stmts.On(tx)
	if s.faults != nil {
		return s.faults(h)
	}
	return h
}

// Open checks the database at ws.DBPath and returns a Store on it. Nothing
// is written and no file is created.
func Open(ctx context.Context, ws Workspace, o Options) (*Store, error) {
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Retry.Attempts < 1 {
		o.Retry = db.Retry{Attempts: 3, Backoff: 25 * time.Millisecond}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Policy == nil {
		o.Policy = &DefaultPolicy
	}
	conn := db.Open(ws.DBPath, o.BusyTimeout)
	feat, err := DetectFeatures(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &Store{Workspace: ws, Features: feat, conn: conn, stmts: db.NewStmts(conn), queues: queues{}, q: db.New(), now: o.Now, retry: o.Retry, policy: *o.Policy}
	// Every column is read as text (NULL stays NULL): bd's timestamps are
	// text, and the hash encodes numbers as decimal text anyway.
	s.readCols = feat.readColumns()
	exprs := make([]string, len(s.readCols))
	for i, c := range s.readCols {
		exprs[i] = "CAST(" + c + " AS TEXT)"
	}
	s.readSQL, _ = sq.Select(exprs...).From("issues").Where("id = ?").MustSql()
	return s, nil
}

// Close releases the database.
func (s *Store) Close() error {
	s.stmts.Close()
	return s.conn.Close()
}

// Claim claims one issue for req.Agent, or with req.DryRun only finds it.
// A nil Result.Issue with a nil error means no issue is available. The row
// update, its event and its dirty mark are written in one BEGIN IMMEDIATE
// transaction, so they land together or not at all.
func (s *Store) Claim(ctx context.Context, req Request) (Result, error) {
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	if req.Wait > 0 {
		return s.wait(ctx, req)
	}
	return s.claimOnce(ctx, req)
}

func (req *Request) validate() error {
	if err := ValidateAgent(req.Agent); err != nil {
		return err
	}
	if err := req.Filters.Validate(); err != nil {
		return err
	}
	if err := checkClaimID(req.ClaimID); err != nil {
		return err
	}
	if err := checkLease(req.Lease); err != nil {
		return err
	}
	switch {
	case req.ClaimID != 0 && req.ID == "":
		return Errorf(EInvalid, "a claim id fences a re-claim of one issue: give its id too")
	case req.Lease != 0 && req.DryRun:
		return Errorf(EInvalid, "a dry run claims nothing, so it cannot take a lease")
	case req.MaxHeld < 0:
		return Errorf(EInvalid, "max held %d is negative", req.MaxHeld)
	case req.Wait < 0 || req.Wait > MaxWait:
		return Errorf(EInvalid, "wait %s is outside 0 to %s", req.Wait, MaxWait)
	}
	return nil
}

// claimOnce makes one attempt: a read for a dry run, else one write
// transaction.
func (s *Store) claimOnce(ctx context.Context, req Request) (Result, error) {
	now := s.now()
	spec := NewReadySpecification(s.Features, req.Agent, req.Filters, s.policy, now)
	if req.DryRun {
		var res Result
		err := s.pick(ctx, s.on(nil), spec, req, nil, now, &res)
		return res, classify(err, "find a ready issue")
	}
	if err := ctx.Err(); err != nil {
		return Result{}, classify(err, "claim an issue")
	}
	// Once started, a claim's transaction runs to its end even when ctx is
	// cancelled (a signal): the caller then learns of a committed claim
	// instead of leaving it held by nobody who knows.
	wctx := context.WithoutCancel(ctx)
	// A Store's claims queue here rather than in SQLite: SQLite has one
	// writer anyway, its busy handler sleeps up to 100ms between looks at
	// the lock, and one connection at a time keeps the claim order valid.
	s.writing.Lock()
	defer s.writing.Unlock()
	q := s.queues.of(req)
	var res Result
	err := db.Tx(wctx, s.conn, s.retry, func(tx *sql.Tx) error {
		res = Result{}
		return s.pick(wctx, s.on(tx), spec, req, q, now, &res)
	})
	if err != nil {
		return Result{}, classify(err, "claim an issue")
	}
	if res.Issue != nil {
		q.taken(res.Issue.ID)
	}
	return res, nil
}

// row is an issue as read for a claim: the contract's fields plus every
// column that bd's content hash and event payload need.
type row struct {
	Issue
	cols map[string]sql.NullString
}

// pick finds the issue req would claim and, unless req.DryRun, claims it
// in the transaction conn is in: the first candidate of spec (from the
// remembered order q, when there is one), or the issue req.ID when spec
// admits it. An --id that spec refuses is explained.
func (s *Store) pick(ctx context.Context, conn db.DBTX, spec ReadySpecification, req Request, q *queue, now time.Time, res *Result) error {
	var st db.IssueStateRow // of issue req.ID
	if req.ID != "" {
		var err error
		st, err = s.q.IssueState(ctx, conn, req.ID)
		if errors.Is(err, sql.ErrNoRows) {
			return Errorf(ENotFound, "no issue %s in %s", req.ID, s.Workspace.DBPath)
		} else if err != nil {
			return err
		}
		if st.Status == "in_progress" && st.Assignee == req.Agent {
			return s.reclaim(ctx, conn, req, now, res)
		}
		if req.ClaimID != 0 {
			return s.notHeld(ctx, conn, req.ID, req.Agent, req.ClaimID, st)
		}
	}
	if req.MaxHeld > 0 {
		held, err := s.q.IssueHeldCount(ctx, conn, req.Agent)
		if err != nil {
			return err
		}
		if held >= int64(req.MaxHeld) {
			res.Reason = fmt.Sprintf("agent %s already holds %d in_progress issues (max held %d)", req.Agent, held, req.MaxHeld)
			if req.ID != "" {
				return Errorf(ENotClaimable, "issue %s is not claimed: %s", req.ID, res.Reason)
			}
			return nil
		}
	}
	var id string
	var err error
	switch {
	case req.ID != "":
		if err = queryRow(ctx, conn, spec.byID(req.ID)).Scan(&id); errors.Is(err, sql.ErrNoRows) {
			return s.refuse(ctx, conn, spec, req, st)
		}
	case q == nil:
		err = queryRow(ctx, conn, spec.next()).Scan(&id)
	default:
		id, err = q.next(ctx, conn, spec, now)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	r, err := s.read(ctx, conn, id)
	if err != nil {
		return err
	}
	res.Issue = &r.Issue
	if r.Status == "in_progress" { // an expired lease
		cur, err := s.current(ctx, conn, r.ID)
		if err != nil {
			return err
		}
		res.TookOver = &Holder{Agent: r.Assignee, ClaimID: cur.ID}
		if l := heldLease(cur.Comment, cur.Actor, r.Assignee); l != nil {
			res.TookOver.LeaseUntil = &l.Until
		}
	}
	if req.DryRun {
		return nil
	}
	if res.TookOver != nil {
		if err := s.expire(ctx, conn, r, req.Agent, *res.TookOver, "taken over by "+req.Agent, now); err != nil {
			return err
		}
	}
	res.Lease = newLease(now, req.Lease)
	var comment string
	if res.Lease != nil {
		comment = res.Lease.comment()
	}
	res.ClaimID, err = s.transition(ctx, conn, r, req.Agent, "in_progress", req.Agent, s.Features.claimEventType(), comment, now)
	return err
}

// reclaim answers an --id claim of an issue req.Agent already holds: the
// same claim again (idempotent), with its lease renewed when req asks for
// one, unless req.ClaimID names an older claim.
func (s *Store) reclaim(ctx context.Context, conn db.DBTX, req Request, now time.Time, res *Result) error {
	cur, err := s.current(ctx, conn, req.ID)
	if err != nil {
		return err
	}
	if req.ClaimID != 0 && req.ClaimID != cur.ID {
		return stale(req.ID, req.Agent, req.ClaimID, cur.ID)
	}
	r, err := s.read(ctx, conn, req.ID)
	if err != nil {
		return err
	}
	res.Issue, res.ClaimID, res.Lease = &r.Issue, cur.ID, heldLease(cur.Comment, cur.Actor, req.Agent)
	if req.Lease > 0 && !req.DryRun {
		res.Lease, err = s.renew(ctx, conn, req.ID, req.Agent, cur, req.Lease, now)
	}
	return err
}

// current returns the claim event of an issue's holder (ID 0 when the
// issue has no claim event at all).
func (s *Store) current(ctx context.Context, conn db.DBTX, id string) (db.EventClaimCurrentRow, error) {
	cur, err := s.q.EventClaimCurrent(ctx, conn, id)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return cur, err
}

// stale refuses a claim id that is no longer the holder's: the same agent
// claimed the issue again since, and that later claim is another holder.
func stale(id, agent string, claimID, current int64) error {
	e := Errorf(EAlready, "claim %d no longer holds issue %s: %s holds it under claim %d", claimID, id, agent, current)
	e.Holder, e.HolderClaimID = agent, current
	return e
}

// notHeld refuses an operation of agent (under claimID, when not 0) on an
// issue it does not hold: ALREADY_CLAIMED naming another holder (and its
// claim), else NOT_CLAIMABLE.
func (s *Store) notHeld(ctx context.Context, conn db.DBTX, id, agent string, claimID int64, st db.IssueStateRow) error {
	if st.Assignee != "" && st.Assignee != agent && (st.Status == "in_progress" || st.Status == "open") {
		e := Errorf(EAlready, "issue %s is %s, held by %s", id, st.Status, st.Assignee)
		e.Holder = st.Assignee
		if st.Status == "in_progress" {
			cur, err := s.current(ctx, conn, id)
			if err != nil {
				return err
			}
			e.HolderClaimID = cur.ID
			if l := heldLease(cur.Comment, cur.Actor, st.Assignee); l != nil {
				e.Message += fmt.Sprintf(" under claim %d, leased until %s", cur.ID, l.Until.Format(time.RFC3339))
			}
		}
		return e
	}
	if claimID != 0 {
		return Errorf(ENotClaimable, "claim %d no longer holds issue %s: it is %s and not held by %s", claimID, id, st.Status, agent)
	}
	return Errorf(ENotClaimable, "issue %s is %s, not held by %s", id, st.Status, agent)
}

// refuse says why issue req.ID, in state st, cannot be claimed.
func (s *Store) refuse(ctx context.Context, conn db.DBTX, spec ReadySpecification, req Request, st db.IssueStateRow) error {
	if st.Assignee != "" && st.Assignee != req.Agent && (st.Status == "in_progress" || st.Status == "open") {
		return s.notHeld(ctx, conn, req.ID, req.Agent, 0, st)
	}
	verdicts := make([]any, len(spec.Rules))
	for i := range verdicts {
		verdicts[i] = new(int)
	}
	if err := queryRow(ctx, conn, spec.verdicts(req.ID)).Scan(verdicts...); err != nil {
		return err
	}
	var why []string
	for i, r := range spec.Rules {
		if *verdicts[i].(*int) != 0 {
			continue
		}
		switch r.Name {
		case "status":
			why = append(why, "its status is "+st.Status)
		case "backoff":
			a, err := s.attempts(ctx, conn, req.ID)
			if err != nil {
				return err
			}
			why = append(why, fmt.Sprintf("it is in backoff until %s after %d failed attempts", a.RetryAt(s.policy).Format(time.RFC3339), a.Failures))
		default:
			why = append(why, r.Reason)
		}
	}
	return Errorf(ENotClaimable, "issue %s is not claimable: %s", req.ID, strings.Join(why, "; "))
}

// read loads one issue with the columns this workspace's bd version hashes.
func (s *Store) read(ctx context.Context, conn db.DBTX, id string) (*row, error) {
	cols := s.readCols
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range cols {
		ptrs[i] = &vals[i]
	}
	err := conn.QueryRowContext(ctx, s.readSQL, id).Scan(ptrs...)
	if err != nil {
		return nil, err
	}
	labels, err := s.q.IssueLabels(ctx, conn, id)
	if err != nil {
		return nil, err
	}
	r := &row{cols: make(map[string]sql.NullString, len(cols))}
	for i, c := range cols {
		r.cols[c] = vals[i]
	}
	_ = json.Unmarshal([]byte(labels), &r.Labels) // SQLite's json_group_array output
	r.ID, r.Title, r.Status = r.text("id"), r.text("title"), r.text("status")
	r.Assignee, r.IssueType, r.ContentHash = r.text("assignee"), r.text("issue_type"), r.text("content_hash")
	r.CreatedAt, r.UpdatedAt = r.text("created_at"), r.text("updated_at")
	r.Priority, _ = strconv.Atoi(r.text("priority")) // INTEGER NOT NULL CHECK 0..4
	if ref := r.cols["external_ref"]; ref.Valid {
		r.ExternalRef = &ref.String
	}
	return r, nil
}

// transition moves r to status and assignee the way bd's UpdateIssue
// writes it: the row with a later updated_at and a recomputed content hash
// (compare-and-swap on the status and assignee it was read with), one event
// (old_value the issue as it was, new_value the change) and one dirty mark.
// It returns the event's id and leaves r as written.
func (s *Store) transition(ctx context.Context, tx db.DBTX, r *row, actor, status, assignee, eventType, comment string, now time.Time) (int64, error) {
	updated := laterThan(now, r.UpdatedAt).Format(time.RFC3339Nano)
	oldValue := s.Features.eventOldValue(r)
	oldStatus, oldAssignee := r.Status, r.Assignee
	r.cols["status"], r.cols["assignee"] = text(status), text(assignee)
	hash := s.Features.contentHash(r)
	r.cols["updated_at"], r.cols["content_hash"] = text(updated), text(hash)
	r.Status, r.Assignee, r.ContentHash, r.UpdatedAt = status, assignee, hash, updated
	n, err := s.q.IssueHolderSet(ctx, tx, db.IssueHolderSetParams{
		Status: status, Assignee: assignee, UpdatedAt: updated, ContentHash: text(hash),
		ID: r.ID, OldStatus: oldStatus, OldAssignee: oldAssignee,
	})
	if err == nil && n != 1 {
		err = Errorf(EUnexpected, "issue %s changed while bd-claim held the write lock", r.ID)
	}
	if err != nil {
		return 0, err
	}
	newValue, _ := json.Marshal(map[string]string{"assignee": assignee, "status": status})
	id, err := s.q.EventInsert(ctx, tx, db.EventInsertParams{
		IssueID: r.ID, EventType: eventType, Actor: actor,
		OldValue: text(oldValue), NewValue: text(string(newValue)), Comment: optional(comment), CreatedAt: now.UTC().Format(eventTime),
	})
	if err == nil {
		err = s.q.DirtyIssueMark(ctx, tx, db.DirtyIssueMarkParams{IssueID: r.ID, MarkedAt: updated})
	}
	return id, err
}

func text(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

func optional(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// laterThan returns now, or just after prev when the clock has not moved
// past it: bd's import keeps whichever copy has the newer updated_at.
func laterThan(now time.Time, prev string) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, prev); err == nil && !now.After(t) {
		return t.Add(time.Microsecond).In(now.Location())
	}
	return now
}

func (r *row) text(col string) string { return r.cols[col].String }

// queryRow runs a squirrel query built by this package (always valid SQL).
func queryRow(ctx context.Context, conn db.DBTX, b sq.SelectBuilder) *sql.Row {
	query, args := b.MustSql()
	return conn.QueryRowContext(ctx, query, args...)
}
