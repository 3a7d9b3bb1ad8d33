package claim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
	conn := db.Open(ws.DBPath, o.BusyTimeout)
	feat, err := DetectFeatures(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &Store{Workspace: ws, Features: feat, conn: conn, stmts: db.NewStmts(conn), queues: queues{}, q: db.New(), now: o.Now, retry: o.Retry}
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
// A nil issue with a nil error means no issue is available. The row update,
// its event and its dirty mark are written in one BEGIN IMMEDIATE
// transaction, so they land together or not at all.
func (s *Store) Claim(ctx context.Context, req Request) (*Issue, error) {
	if err := ValidateAgent(req.Agent); err != nil {
		return nil, err
	}
	if err := req.Filters.Validate(); err != nil {
		return nil, err
	}
	spec := NewReadySpecification(s.Features, req.Agent, req.Filters, s.now())
	if req.DryRun {
		r, err := s.pick(ctx, s.stmts.On(nil), spec, req, nil)
		return r.issue(), classify(err, "find a ready issue")
	}
	// A Store's claims queue here rather than in SQLite: SQLite has one
	// writer anyway, its busy handler sleeps up to 100ms between looks at
	// the lock, and one connection at a time keeps the claim order valid.
	s.writing.Lock()
	defer s.writing.Unlock()
	q := s.queues.of(req)
	var claimed *Issue
	err := db.Tx(ctx, s.conn, s.retry, func(tx *sql.Tx) error {
		conn := s.stmts.On(tx)
		r, err := s.pick(ctx, conn, spec, req, q)
		if err == nil && r != nil && r.Issue.Status == "open" {
			err = s.write(ctx, conn, r, req.Agent)
		}
		claimed = r.issue()
		return err
	})
	if err != nil {
		return nil, classify(err, "claim an issue")
	}
	if claimed != nil {
		q.taken(claimed.ID)
	}
	return claimed, nil
}

// row is an issue as read for a claim: the contract's fields plus every
// column that bd's content hash and event payload need.
type row struct {
	Issue
	cols map[string]sql.NullString
}

func (r *row) issue() *Issue {
	if r == nil {
		return nil
	}
	return &r.Issue
}

// pick finds the issue req would claim: the first candidate of spec (from
// the remembered order q, when there is one), or the issue req.ID when spec
// admits it. An --id that spec refuses is explained.
func (s *Store) pick(ctx context.Context, conn db.DBTX, spec ReadySpecification, req Request, q *queue) (*row, error) {
	var id string
	var err error
	switch {
	case req.ID != "":
		if err = queryRow(ctx, conn, spec.byID(req.ID)).Scan(&id); errors.Is(err, sql.ErrNoRows) {
			return s.refuse(ctx, conn, spec, req)
		}
	case q == nil:
		err = queryRow(ctx, conn, spec.next()).Scan(&id)
	default:
		id, err = q.next(ctx, conn, spec, s.now())
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return s.read(ctx, conn, id)
}

// refuse says why issue req.ID cannot be claimed, or returns it unchanged
// when req.Agent already holds it (an idempotent re-claim).
func (s *Store) refuse(ctx context.Context, conn db.DBTX, spec ReadySpecification, req Request) (*row, error) {
	st, err := s.q.IssueState(ctx, conn, req.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENotFound, "no issue %s in %s", req.ID, s.Workspace.DBPath)
	} else if err != nil {
		return nil, err
	}
	switch {
	case st.Status == "in_progress" && st.Assignee == req.Agent:
		return s.read(ctx, conn, req.ID)
	case st.Assignee != "" && st.Assignee != req.Agent && (st.Status == "in_progress" || st.Status == "open"):
		e := Errorf(EAlready, "issue %s is %s, held by %s", req.ID, st.Status, st.Assignee)
		e.Holder = st.Assignee
		return nil, e
	}
	verdicts := make([]any, len(spec.Rules))
	for i := range verdicts {
		verdicts[i] = new(int)
	}
	if err := queryRow(ctx, conn, spec.verdicts(req.ID)).Scan(verdicts...); err != nil {
		return nil, err
	}
	var why []string
	for i, r := range spec.Rules {
		if *verdicts[i].(*int) == 0 {
			if r.Name == "status" {
				why = append(why, "its status is "+st.Status)
			} else {
				why = append(why, r.Reason)
			}
		}
	}
	return nil, Errorf(ENotClaimable, "issue %s is not claimable: %s", req.ID, strings.Join(why, "; "))
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

// write claims r for agent the way bd writes a claim: the issue row with a
// later updated_at and a recomputed content hash, one event, one dirty mark.
func (s *Store) write(ctx context.Context, tx db.DBTX, r *row, agent string) error {
	updated := laterThan(s.now(), r.UpdatedAt).Format(time.RFC3339Nano)
	oldValue := s.Features.eventOldValue(r)
	r.cols["status"] = sql.NullString{String: "in_progress", Valid: true}
	r.cols["assignee"] = sql.NullString{String: agent, Valid: true}
	hash := s.Features.contentHash(r)
	n, err := s.q.IssueClaim(ctx, tx, db.IssueClaimParams{
		Agent: agent, UpdatedAt: updated, ContentHash: sql.NullString{String: hash, Valid: true}, ID: r.ID,
	})
	if err == nil && n != 1 {
		err = Errorf(EUnexpected, "issue %s changed while bd-claim held the write lock", r.ID)
	}
	if err == nil {
		newValue, _ := json.Marshal(map[string]string{"assignee": agent, "status": "in_progress"})
		err = s.q.EventInsert(ctx, tx, db.EventInsertParams{
			IssueID: r.ID, EventType: s.Features.claimEventType(), Actor: agent,
			OldValue: sql.NullString{String: oldValue, Valid: true}, NewValue: sql.NullString{String: string(newValue), Valid: true},
		})
	}
	if err == nil {
		err = s.q.DirtyIssueMark(ctx, tx, db.DirtyIssueMarkParams{IssueID: r.ID, MarkedAt: updated})
	}
	r.Status, r.Assignee, r.ContentHash, r.UpdatedAt = "in_progress", agent, hash, updated
	return err
}

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
