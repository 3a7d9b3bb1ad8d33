package dolt

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// What bd v1.3.0 writes into `events` for a claim on a Dolt server, rebuilt
// byte for byte: old_value is encoding/json of its types.Issue as
// GetIssueInTx reads it, and the row's id is a UUIDv5 of the row's content
// (internal/storage/rowid, issueops/derivedid.go).

// Issue mirrors bd v1.3.0's types.Issue (internal/types/types.go): every
// field that encoding/json prints, in the same order with the same tags, so
// that json.Marshal prints the same bytes. The json:"-" fields are left out;
// the relational ones (dependencies, comments, bonded_from) are never filled
// by GetIssueInTx and stay nil, but for the dependencies that bd ready
// --claim's --json lists (bdjson.go).
type Issue struct {
	ID                 string `json:"id"`
	Title              string `json:"title"`
	Description        string `json:"description,omitempty"`
	Design             string `json:"design,omitempty"`
	AcceptanceCriteria string `json:"acceptance_criteria,omitempty"`
	Notes              string `json:"notes,omitempty"`
	SpecID             string `json:"spec_id,omitempty"`
	Status             string `json:"status,omitempty"`
	Priority           int    `json:"priority"`
	IssueType          string `json:"issue_type,omitempty"`
	IsBlocked          bool   `json:"is_blocked,omitempty"` // only bd's journal fills it
	Assignee           string `json:"assignee,omitempty"`
	Owner              string `json:"owner,omitempty"`
	EstimatedMinutes   *int   `json:"estimated_minutes,omitempty"`

	CreatedAt       time.Time  `json:"created_at"`
	CreatedBy       string     `json:"created_by,omitempty"`
	UpdatedAt       time.Time  `json:"updated_at"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	ClosedAt        *time.Time `json:"closed_at,omitempty"`
	CloseReason     string     `json:"close_reason,omitempty"`
	ClosedBySession string     `json:"closed_by_session,omitempty"`

	LeaseExpiresAt   *time.Time `json:"lease_expires_at,omitempty"`
	HeartbeatAt      *time.Time `json:"heartbeat_at,omitempty"`
	LeaseGrantedNode string     `json:"lease_granted_node,omitempty"`

	DueAt      *time.Time `json:"due_at,omitempty"`
	DeferUntil *time.Time `json:"defer_until,omitempty"`

	ExternalRef  *string `json:"external_ref,omitempty"` // a pointer: "" is printed, NULL is not
	SourceSystem string  `json:"source_system,omitempty"`

	Metadata json.RawMessage `json:"metadata,omitempty"`

	CompactionLevel   int        `json:"compaction_level,omitempty"`
	CompactedAt       *time.Time `json:"compacted_at,omitempty"`
	CompactedAtCommit *string    `json:"compacted_at_commit,omitempty"`
	OriginalSize      int        `json:"original_size,omitempty"`

	Labels       []string          `json:"labels,omitempty"`
	Dependencies []*Dependency     `json:"dependencies,omitempty"` // only bd ready --claim's --json fills them (ReadyIssue)
	Comments     []json.RawMessage `json:"comments,omitempty"`     // never filled here

	Sender       string `json:"sender,omitempty"`
	Ephemeral    bool   `json:"ephemeral,omitempty"`
	NoHistory    bool   `json:"no_history,omitempty"`
	WispType     string `json:"wisp_type,omitempty"`
	StorageClass string `json:"storage_class,omitempty"`

	Pinned     bool `json:"pinned,omitempty"`
	IsTemplate bool `json:"is_template,omitempty"`

	BondedFrom []json.RawMessage `json:"bonded_from,omitempty"` // never filled here

	AwaitType string        `json:"await_type,omitempty"`
	AwaitID   string        `json:"await_id,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"` // nanoseconds (timeout_ns)
	Waiters   []string      `json:"waiters,omitempty"`

	SourceFormula  string `json:"source_formula,omitempty"`  // no column
	SourceLocation string `json:"source_location,omitempty"` // no column

	MolType  string `json:"mol_type,omitempty"`
	WorkType string `json:"work_type,omitempty"`

	EventKind string `json:"event_kind,omitempty"`
	Actor     string `json:"actor,omitempty"`
	Target    string `json:"target,omitempty"`
	Payload   string `json:"payload,omitempty"`
}

// IssueOf builds the issue from an IssueSnapshot row as bd's
// issueops.ScanIssueFrom does. Only labels that are not a JSON array of
// strings fail, which the server's JSON_ARRAYAGG never produces.
func IssueOf(r doltdb.IssueSnapshotRow) (Issue, error) {
	iss := Issue{
		ID: r.ID, Title: r.Title, Description: r.Description, Design: r.Design,
		AcceptanceCriteria: r.AcceptanceCriteria, Notes: r.Notes, SpecID: r.SpecID.String,
		Status: r.Status, Priority: int(r.Priority), IssueType: r.IssueType,
		Assignee: r.Assignee.String, Owner: r.Owner.String, EstimatedMinutes: nullInt(r.EstimatedMinutes),
		CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy.String, UpdatedAt: r.UpdatedAt.UTC(),
		StartedAt: nullTime(r.StartedAt), ClosedAt: nullTime(r.ClosedAt),
		CloseReason: r.CloseReason.String, ClosedBySession: r.ClosedBySession.String,
		LeaseExpiresAt: nullTime(r.LeaseExpiresAt), HeartbeatAt: nullTime(r.HeartbeatAt), LeaseGrantedNode: r.GrantedNode.String,
		DueAt: nullTime(r.DueAt), DeferUntil: nullTime(r.DeferUntil),
		ExternalRef: nullString(r.ExternalRef), SourceSystem: r.SourceSystem.String,
		CompactionLevel: int(r.CompactionLevel.Int32), CompactedAt: nullTime(r.CompactedAt),
		CompactedAtCommit: nullString(r.CompactedAtCommit), OriginalSize: int(r.OriginalSize.Int32),
		Sender: r.Sender.String, Ephemeral: r.Ephemeral, NoHistory: r.NoHistory, WispType: r.WispType.String,
		StorageClass: r.StorageClass.String, Pinned: r.Pinned, IsTemplate: r.IsTemplate,
		AwaitType: r.AwaitType.String, AwaitID: r.AwaitID.String, Timeout: time.Duration(r.TimeoutNs.Int64),
		Waiters: jsonStrings(r.Waiters.String), MolType: r.MolType.String, WorkType: r.WorkType.String,
		EventKind: r.EventKind.String, Actor: r.Actor.String, Target: r.Target.String, Payload: r.Payload.String,
	}
	if r.Metadata.Valid && r.Metadata.String != "{}" {
		iss.Metadata = json.RawMessage(r.Metadata.String)
	}
	if err := json.Unmarshal([]byte(r.Labels), &iss.Labels); err != nil {
		return Issue{}, fmt.Errorf("labels of %s: %w", r.ID, err)
	}
	// bd reads them ORDER BY label; the utf8mb4_0900_bin collation orders by
	// code point, which is Go's byte order for UTF-8.
	slices.Sort(iss.Labels)
	return iss, nil
}

// nullTime is a nullable DATETIME as bd holds it; UTC whatever the
// connection's loc, as bd's connection reads it (times print with "Z").
func nullTime(v sql.NullTime) *time.Time {
	if !v.Valid {
		return nil
	}
	t := v.Time.UTC()
	return &t
}

func nullString(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

// jsonStrings is bd's ParseJSONStringArray: nil unless the text is a JSON
// array of strings (a partly decoded array is dropped too).
func jsonStrings(s string) []string {
	var a []string
	if json.Unmarshal([]byte(s), &a) != nil {
		return nil
	}
	return a
}

func nullInt(v sql.NullInt32) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int32)
	return &n
}

// EventJSON is the issue as bd's events old_value holds it. bd ignores a
// Marshal error (then storing ""), as here; only an invalid metadata text
// could cause one, and the server's JSON column holds valid JSON.
func (iss Issue) EventJSON() string {
	b, _ := json.Marshal(iss)
	return string(b)
}

// ClaimedNewValue is a claim event's new_value: bd marshals a map, whose
// keys encoding/json sorts.
func ClaimedNewValue(actor string) string {
	b, _ := json.Marshal(map[string]string{"assignee": actor, "status": "in_progress"})
	return string(b)
}

// Event is an events row's content, the fields bd derives the row's id
// from (issueops.AuxEvent).
type Event struct {
	IssueID, Type, Actor        string
	OldValue, NewValue, Comment sql.NullString
	CreatedAt                   time.Time // InsertEvent binds it truncated to the second, as bd does
}

// ClaimedEvent is the event bd records for a claim of an issue by actor at
// now, given the issue as it was (Issue.EventJSON). bd stamps created_at
// separately from the issue's updated_at, truncated to the second (where the
// server rounds updated_at), so the two can differ by a second.
func ClaimedEvent(issueID, actor, oldValue string, now time.Time) Event {
	return Event{
		IssueID: issueID, Type: "claimed", Actor: actor,
		OldValue:  sql.NullString{String: oldValue, Valid: true},
		NewValue:  sql.NullString{String: ClaimedNewValue(actor), Valid: true},
		CreatedAt: now.UTC().Truncate(time.Second),
	}
}

// auxTimeLayout is how created_at enters the digest (and how bd binds it).
const auxTimeLayout = "2006-01-02 15:04:05"

// eventNamespace is bd's fixed UUIDv5 namespace for the ids of its events,
// comments and snapshots (rowid.Namespace): 92da14b5-20a8-5252-8eb2-3839e97b2156.
const eventNamespace = "\x92\xda\x14\xb5\x20\xa8\x52\x52\x8e\xb2\x38\x39\xe9\x7b\x21\x56"

// digest is rowid.Digest of a row's fields: hex SHA-256 over them, each
// "n" when NULL, else "v<byte length>:<bytes>".
func digest(fields ...sql.NullString) string {
	h := sha256.New()
	for _, f := range fields {
		if !f.Valid {
			h.Write([]byte("n"))
			continue
		}
		h.Write([]byte("v" + strconv.Itoa(len(f.String)) + ":" + f.String))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// digest is the event's digest: its seven fields in bd's order.
func (e Event) digest() string {
	return digest(sql.NullString{String: e.IssueID, Valid: true}, sql.NullString{String: e.Type, Valid: true},
		sql.NullString{String: e.Actor, Valid: true}, e.OldValue, e.NewValue, e.Comment,
		sql.NullString{String: e.CreatedAt.UTC().Format(auxTimeLayout), Valid: true})
}

// eventID is the id bd gives the row in table (events or wisp_events) at an
// ordinal (rowID).
func eventID(table string, e Event, ordinal int) string { return rowID(table, ordinal, e.digest()) }

// rowID is the id bd gives a row of table at an ordinal, by its digest
// (rowid.New): the RFC 4122 UUIDv5 of table, ordinal and digest joined by
// 0x1F.
func rowID(table string, ordinal int, digest string) string {
	h := sha1.New()
	h.Write([]byte(eventNamespace + table + "\x1f" + strconv.Itoa(ordinal) + "\x1f" + digest))
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	x := hex.EncodeToString(u)
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// firstFreeEventID is the id at the lowest ordinal that none of taken (the
// ids of the rows with the same content) holds, as bd picks it. Older random
// ids in taken never collide, so this ends within len(taken)+1 tries.
func firstFreeEventID(table string, e Event, taken []string) string {
	for ordinal := 0; ; ordinal++ {
		if id := eventID(table, e, ordinal); !slices.Contains(taken, id) {
			return id
		}
	}
}

// NewEventID is the id bd would give the row if it inserted it now, in the
// events table (wisp_events for a wisp), through q (the claim's
// transaction).
func NewEventID(ctx context.Context, q doltdb.DBTX, wisp bool, e Event) (string, error) {
	same := doltdb.EventIDsSameContentParams{
		IssueID: e.IssueID, EventType: e.Type, Actor: e.Actor,
		OldValue: e.OldValue, NewValue: e.NewValue, Comment: e.Comment, CreatedAt: e.CreatedAt.UTC().Truncate(time.Second),
	}
	table := "events"
	var raw string
	var err error
	if wisp {
		table = "wisp_events"
		raw, err = doltdb.New().WispEventIDsSameContent(ctx, q, doltdb.WispEventIDsSameContentParams{IssueID: e.IssueID, EventType: e.Type,
			Actor: sql.NullString{String: e.Actor, Valid: true}, OldValue: e.OldValue, NewValue: e.NewValue, Comment: e.Comment, CreatedAt: sql.NullTime{Time: same.CreatedAt, Valid: true}})
	} else {
		raw, err = doltdb.New().EventIDsSameContent(ctx, q, same)
	}
	if err != nil {
		return "", err
	}
	var taken []string
	if err := json.Unmarshal([]byte(raw), &taken); err != nil {
		return "", fmt.Errorf("ids of same-content events: %w", err)
	}
	return firstFreeEventID(table, e, taken), nil
}

// AddComment adds author's comment on issue id as bd v1.3.0's `bd comments
// add` writes it (issueops.AddIssueCommentInTx): dated now, truncated to the
// second, or a second after the issue's newest comment when the clock has
// not moved past it (NextLiveCommentTime); under the id derived from its
// content at ordinal 0, or not at all when a comment with the same content
// is there already (InsertDerivedComment). bd's events journal, when a
// workspace turns it on, is not written.
func AddComment(ctx context.Context, h doltdb.DBTX, id, author, text string, now time.Time) error {
	q := doltdb.New()
	at := now.UTC().Truncate(time.Second)
	newest, err := q.CommentNewest(ctx, h, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		if last, perr := time.Parse(auxTimeLayout, newest); perr == nil && !last.Before(at) {
			at = last.Add(time.Second)
		}
	}
	same := doltdb.CommentSameContentParams{IssueID: id, Author: author, Text: text, CreatedAt: at}
	if _, err := q.CommentSameContent(ctx, h, same); !errors.Is(err, sql.ErrNoRows) {
		return err // nil: the same comment is there
	}
	str := func(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
	cid := rowID("comments", 0, digest(str(id), str(author), str(text), str(at.Format(auxTimeLayout))))
	return q.CommentInsert(ctx, h, doltdb.CommentInsertParams{ID: cid, IssueID: id, Author: author, Text: text, CreatedAt: at})
}

// Table is where bd v1.3 keeps an issue, and so where a write of it goes
// (issueops.WispTableRouting): the issues table and its events, or for a
// wisp the wisps table and wisp_events. bd leases an issue, never a wisp.
type Table struct{ Wisp bool }

// Snapshot reads issue id as a write does: from issues, else from wisps,
// as bd's GetIssueInTx looks it up; sql.ErrNoRows when neither has it.
func Snapshot(ctx context.Context, h doltdb.DBTX, id string) (doltdb.IssueSnapshotRow, Table, error) {
	q := doltdb.New()
	r, err := q.IssueSnapshot(ctx, h, id)
	if !errors.Is(err, sql.ErrNoRows) {
		return r, Table{}, err
	}
	w, err := q.WispSnapshot(ctx, h, id)
	return doltdb.IssueSnapshotRow(w), Table{Wisp: true}, err
}

// RowLock reads the row_lock of row id of the table (IssueRowLock).
func (tb Table) RowLock(ctx context.Context, h doltdb.DBTX, id string) (int64, error) {
	if tb.Wisp {
		return doltdb.New().WispRowLock(ctx, h, id)
	}
	return doltdb.New().IssueRowLock(ctx, h, id)
}

// DependencyRecords reads the dependency records of row id of the table,
// as one JSON array (DependencyRecords).
func (tb Table) DependencyRecords(ctx context.Context, h doltdb.DBTX, id string) (string, error) {
	if tb.Wisp {
		return doltdb.New().WispDependencyRecords(ctx, h, id)
	}
	return doltdb.New().DependencyRecords(ctx, h, id)
}

// Leased says whether bd keeps a lease for the table's rows.
func (tb Table) Leased() bool { return !tb.Wisp }

// ClaimSet writes a claim's cells under the compare-and-swap on row_lock:
// the number of rows changed.
func (tb Table) ClaimSet(ctx context.Context, h doltdb.DBTX, p doltdb.IssueClaimSetParams) (int64, error) {
	if tb.Wisp {
		return doltdb.New().WispClaimSet(ctx, h, doltdb.WispClaimSetParams(p))
	}
	return doltdb.New().IssueClaimSet(ctx, h, p)
}

// UnclaimSet writes a release's cells under the compare-and-swap on
// row_lock: the number of rows changed.
func (tb Table) UnclaimSet(ctx context.Context, h doltdb.DBTX, p doltdb.IssueUnclaimSetParams) (int64, error) {
	if tb.Wisp {
		return doltdb.New().WispUnclaimSet(ctx, h, doltdb.WispUnclaimSetParams(p))
	}
	return doltdb.New().IssueUnclaimSet(ctx, h, p)
}

// InsertEvent appends e with bd's content-derived id (NewEventID) to the
// table's events, dated e.CreatedAt truncated to the second as bd binds
// it; wisp_events stores ” for a NULL value or comment, as bd's
// InsertDerivedEventReturningID writes it.
func (tb Table) InsertEvent(ctx context.Context, h doltdb.DBTX, e Event) error {
	e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Second)
	if tb.Wisp {
		for _, v := range []*sql.NullString{&e.OldValue, &e.NewValue, &e.Comment} {
			v.Valid = true
		}
	}
	eid, err := NewEventID(ctx, h, tb.Wisp, e)
	switch {
	case err != nil:
	case tb.Wisp:
		err = doltdb.New().WispEventInsert(ctx, h, doltdb.WispEventInsertParams{ID: eid, IssueID: e.IssueID, EventType: e.Type,
			Actor: sql.NullString{String: e.Actor, Valid: true}, OldValue: e.OldValue, NewValue: e.NewValue, Comment: e.Comment,
			CreatedAt: sql.NullTime{Time: e.CreatedAt, Valid: true}})
	default:
		err = doltdb.New().EventInsert(ctx, h, doltdb.EventInsertParams{ID: eid, IssueID: e.IssueID, EventType: e.Type, Actor: e.Actor,
			OldValue: e.OldValue, NewValue: e.NewValue, Comment: e.Comment, CreatedAt: e.CreatedAt})
	}
	return err
}
