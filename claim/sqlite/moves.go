package sqlite

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/db"
)

// The moves of the claim lifecycle on a SQLite workspace, as bd v0.27-v0.50
// writes them (engine.Tx).

// columns is what the engine read of an issue for a write (Row.Data): the
// columns its flavor's content hash and event payload use, as text.
type columns map[string]sql.NullString

func (c columns) text(col string) string { return c[col].String }

func text(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

func optional(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func (t *tx) notFound(id string) error {
	return engine.Errorf(engine.ENotFound, "no issue %s in %s", id, t.e.path)
}

func (t *tx) State(id string) (engine.State, error) {
	var c engine.State
	ok, err := engine.Found(engine.QueryRow(t.ctx, t.conn, claims(t.now).Where(sq.Eq{"i.id": id})).Scan(stateDest(&c)...))
	if err == nil && !ok {
		err = t.notFound(id)
	}
	return c, err
}

func (t *tx) Lookalikes(part string) (string, []string, error) {
	r, err := t.e.q.IssueLookalikes(t.ctx, t.conn, part)
	var ids []string
	if err == nil {
		err = json.Unmarshal([]byte(r.Ids), &ids)
	}
	return r.Prefix, ids, err
}

func (t *tx) Held() ([]engine.State, error) {
	var out []engine.State
	var c engine.State
	err := engine.Each(t.ctx, t.conn, claims(t.now).Where("i.status = 'in_progress'").OrderBy("2, 1"), stateDest(&c), func() { out = append(out, c) })
	return out, err
}

func (t *tx) HeldCount(agent string) (int64, error) {
	return t.e.q.IssueHeldCount(t.ctx, t.conn, agent)
}

func (t *tx) CustomTypes() ([]string, error) {
	v, err := t.e.q.CustomTypes(t.ctx, t.conn)
	return []string{v}, err
}

// Eligible: bd v0.27-v0.50's claim by id (bd update --claim) takes
// nothing beyond an issue assigned to nobody: neither custom statuses nor
// pools.
func (t *tx) Eligible() (engine.Eligible, error) { return engine.Eligible{}, nil }

// Read loads one issue with the columns the flavor reads.
func (t *tx) Read(id string) (*engine.Row, error) {
	cols := t.e.flavor.readCols
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range cols {
		ptrs[i] = &vals[i]
	}
	if err := t.conn.QueryRowContext(t.ctx, t.e.readSQL, id).Scan(ptrs...); err != nil {
		return nil, err
	}
	labels, err := t.e.q.IssueLabels(t.ctx, t.conn, id)
	if err != nil {
		return nil, err
	}
	c := make(columns, len(cols))
	for i, col := range cols {
		c[col] = vals[i]
	}
	r := &engine.Row{Data: c}
	_ = json.Unmarshal([]byte(labels), &r.Labels) // SQLite's json_group_array output
	r.ID, r.Title, r.Status = c.text("id"), c.text("title"), c.text("status")
	r.Assignee, r.IssueType, r.ContentHash = c.text("assignee"), c.text("issue_type"), c.text("content_hash")
	r.CreatedAt, r.UpdatedAt = c.text("created_at"), c.text("updated_at")
	r.Priority, _ = strconv.Atoi(c.text("priority")) // INTEGER NOT NULL CHECK 0..4
	if ref := c["external_ref"]; ref.Valid {
		r.ExternalRef = &ref.String
	}
	return r, nil
}

// BdJSON is issue id, now, as the workspace's bd prints it in the list of
// `bd update ID --claim --json`, which the SQLite releases print for every
// claim (they have no bd ready --claim): its types.Issue as GetIssue reads
// it (flavor.issueJSON). An issue whose metadata is not JSON is refused, as
// bd's --json fails on it.
func (t *tx) BdJSON(id string, _ bool) ([]byte, error) {
	r, err := t.Read(id)
	if err != nil {
		return nil, err
	}
	b, ok := t.e.flavor.issueJSON(r)
	if !ok {
		return nil, engine.Errorf(engine.ESchema, "issue %s: its metadata is not JSON, and bd's --json cannot print it either; give it JSON metadata (bd update %s --metadata '{}')", id, id)
	}
	return b, nil
}

func (t *tx) Verdicts(spec engine.Spec, id string) ([]bool, error) {
	return engine.ReadVerdicts(t.ctx, t.conn, spec, id)
}

func (t *tx) Failures(id string) (engine.FailureHistory, error) {
	return engine.ReadFailures(t.ctx, t.conn, t.e.cfg.Policy, t.e.flavor.History, t.e.flavor.EventTime, id, t.now)
}

// Take writes claim c as bd's UpdateIssue does (transition); an issue the
// agent holds already is claimed again without a write, its lease renewed
// when c asks for one.
func (t *tx) Take(c engine.Claim) (engine.Taken, error) {
	if c.Held != nil {
		taken := engine.Taken{ClaimID: c.Held.ID}
		var err error
		if c.Renew {
			taken.Lease, err = t.Renew(c.Row.ID, c.Agent, *c.Held, c.Lease)
		}
		return taken, err
	}
	lease := engine.NewLease(t.now, c.Lease)
	if c.Ended != "" {
		if err := t.EndClaim(c.Row, c.Agent, c.Row.Claim.Holder, c.Ended); err != nil {
			return engine.Taken{}, err
		}
	}
	var comment string
	if lease != nil {
		comment = lease.Comment()
	}
	id, err := t.transition(c.Row, move{actor: c.Agent, status: "in_progress", assignee: c.Agent,
		event: t.e.flavor.claimEvent, comment: comment})
	return engine.Taken{ClaimID: id, Lease: lease}, err
}

// Unclaim writes the release as `bd update --status open --assignee ""`
// does, the protocol's note in the status_changed event's comment.
func (t *tx) Unclaim(r *engine.Row, agent string, failed bool, reason string) error {
	_, err := t.transition(r, move{actor: agent, status: "open", event: "status_changed", comment: engine.ReleaseComment(failed, reason)})
	return err
}

// EndClaim writes the end of an expired claim as a status change to open,
// unassigned, and adds bd-claim's note as a comment too.
func (t *tx) EndClaim(r *engine.Row, actor, holder, note string) error {
	if _, err := t.transition(r, move{actor: actor, status: "open", event: "status_changed", comment: engine.ExpiredPrefix + note}); err != nil {
		return err
	}
	return t.Comment(r, actor, "bd-claim: "+note)
}

// Renew writes a new lease into the comment of agent's claim event, in
// place: a heartbeat adds no row, and the issue row, its hash and its
// export are untouched. d 0 renews by the claim's own lease length.
func (t *tx) Renew(id, agent string, c engine.State, d time.Duration) (*engine.Lease, error) {
	if c.ID == 0 || c.Actor != agent {
		return nil, engine.Errorf(engine.ENotClaimable, "issue %s was assigned to %s by %q, not claimed by %s itself, so its claim has no lease to renew: release it and claim it with bd-claim", id, agent, c.Actor, agent)
	}
	if d == 0 {
		old := engine.ParseLease(c.Comment)
		if old == nil || old.Duration <= 0 {
			return nil, engine.Errorf(engine.EInvalid, "claim %d of issue %s has no lease: give its length with --lease", c.ID, id)
		}
		d = old.Duration
	}
	l := engine.NewLease(t.now, d)
	_, err := t.e.q.EventCommentSet(t.ctx, t.conn, db.EventCommentSetParams{ID: c.ID, Comment: text(l.Comment())})
	return l, err
}

// Label adds or removes a label as bd's AddLabel and RemoveLabel do: the
// label row, a label_added or label_removed event and a dirty mark;
// neither updated_at nor the content hash changes.
func (t *tx) Label(r *engine.Row, actor, label string, add bool) error {
	var n int64
	var err error
	if add {
		n, err = t.e.q.LabelAdd(t.ctx, t.conn, db.LabelAddParams{IssueID: r.ID, Label: label})
	} else {
		n, err = t.e.q.LabelRemove(t.ctx, t.conn, db.LabelRemoveParams{IssueID: r.ID, Label: label})
	}
	if err != nil || n == 0 {
		return err
	}
	event, comment := labelEvent(r, label, add)
	_, err = t.event(r.ID, event, actor, sql.NullString{}, sql.NullString{}, comment)
	if err == nil {
		err = t.dirty(r.ID, t.e.flavor.rowAt(t.now))
	}
	return err
}

// labelEvent is the event bd records for a label added to r or removed
// from it, and its comment; r's labels are left as after the change.
func labelEvent(r *engine.Row, label string, add bool) (event, comment string) {
	r.SetLabel(label, add)
	if !add {
		return "label_removed", "Removed label: " + label
	}
	return "label_added", "Added label: " + label
}

// Comment adds a comment as `bd comments add` does, so that bd show lists
// it and bd export carries it.
func (t *tx) Comment(r *engine.Row, author, text string) error {
	err := t.e.q.CommentInsert(t.ctx, t.conn, db.CommentInsertParams{IssueID: r.ID, Author: author, Text: text, CreatedAt: t.e.flavor.EventAt(t.now)})
	if err == nil {
		err = t.dirty(r.ID, t.e.flavor.rowAt(t.now))
	}
	return err
}

// ResetMark touches the issue (bd's AddComment does) and marks the place
// with a commented event.
func (t *tx) ResetMark(r *engine.Row, actor, comment string) error {
	updated := t.e.flavor.updatedAt(t.now, r.UpdatedAt)
	if _, err := t.e.q.IssueTouch(t.ctx, t.conn, db.IssueTouchParams{UpdatedAt: updated, ID: r.ID}); err != nil {
		return err
	}
	r.UpdatedAt = updated
	_, err := t.event(r.ID, "commented", actor, sql.NullString{}, sql.NullString{}, comment)
	return err
}

// Figures reads the counts of stats, and the lifecycle events since since.
func (t *tx) Figures(spec engine.Spec, since time.Time) (engine.Figures, error) {
	fl := t.e.flavor
	f, err := engine.ReadFigures(t.ctx, t.conn, spec, fl.NotBlocked, t.e.cfg.Policy, fl.History, fl.EventTime, t.now)
	if err != nil {
		return f, err
	}
	ev, err := t.e.q.EventCountsSince(t.ctx, t.conn, db.EventCountsSinceParams{
		Since: fl.EventAt(since), Released: engine.Like(engine.ReleasedPrefix), Failed: engine.Like(engine.FailedPrefix), Expired: engine.Like(engine.ExpiredPrefix),
	})
	f.Events = engine.EventCounts{Claims: int(ev.Claims), Releases: int(ev.Releases), Failures: int(ev.Failures), Reclaims: int(ev.Reclaims), Closes: int(ev.Closes)}
	return f, err
}

func (t *tx) Explain(spec engine.Spec) (engine.Explained, error) {
	return engine.ReadExplained(t.ctx, t.conn, spec)
}

// closeVersion is the oldest bd whose close bd-claim writes on SQLite: bd
// v0.47.0 to v0.50 close alike (CloseIssue, the blocked-cache rebuild and
// the convoy completion are the same statements; bd close refuses a
// blocked issue since v0.47.0).
var closeVersion = engine.Version{0, 47, 0}

// closable refuses what bd close (v0.47-v0.50) refuses of a held issue: one
// that is in blocked_issues_cache with open blockers (bd's IsBlocked,
// GH#962). An older bd's workspace is refused: its close differs.
func (t *tx) Closable(id string) error {
	if !t.e.flavor.closes {
		return engine.Errorf(engine.ESchema, "bd %s last wrote this workspace, and bd-claim writes the close of bd %s to %d.%d.x only: release the issue and close it with `bd close %s`",
			t.e.flavor.Version, closeVersion, maxVersion[0], maxVersion[1], id)
	}
	blockers, err := t.e.q.IssueCloseBlockers(t.ctx, t.conn, id)
	if err == nil && blockers != "" {
		err = engine.Errorf(engine.ENotClaimable, "issue %s is blocked by open issues %s: bd close refuses to close it until they are closed", id, blockers)
	}
	return err
}

// Close writes actor's close of r as bd's CloseIssue (v0.47-v0.50)
// does, in one transaction: the issue closed (closed_at and updated_at
// now, close_reason, closed_by_session empty: bd-claim has no session; the
// content hash as it was), a closed event whose comment is the reason, a
// dirty mark, blocked_issues_cache rebuilt, and every convoy (an issue
// labelled gt:convoy) that tracks r and now tracks only closed issues
// closed as bd closes it.
func (t *tx) Close(r *engine.Row, actor, reason string) error {
	at := t.e.flavor.rowAt(t.now)
	n, err := t.e.q.IssueClose(t.ctx, t.conn, db.IssueCloseParams{
		ClosedAt: text(at), UpdatedAt: at, CloseReason: text(reason), ClosedBySession: text(""),
		ID: r.ID, OldStatus: r.Status, OldAssignee: r.Assignee,
	})
	if err := swapped(n, err, r.ID); err != nil {
		return err
	}
	r.Status, r.UpdatedAt = "closed", at
	if err := t.closed(r.ID, actor, reason, at); err != nil {
		return err
	}
	if err := t.rebuildBlockedCache(); err != nil {
		return err
	}
	list, err := t.e.q.ConvoysTracking(t.ctx, t.conn, r.ID)
	var convoys []string
	_ = json.Unmarshal([]byte(list), &convoys) // SQLite's json_group_array output
	for _, id := range convoys {
		var open int64
		if open, err = t.e.q.ConvoyOpenTracked(t.ctx, t.conn, id); err == nil && open == 0 {
			const done = "All tracked issues completed"
			err = t.e.q.ConvoyClose(t.ctx, t.conn, db.ConvoyCloseParams{ClosedAt: text(at), UpdatedAt: at, CloseReason: text(done), ID: id})
			if err == nil {
				err = t.closed(id, "system:convoy-completion", done, at)
			}
		}
		if err != nil {
			break
		}
	}
	return err
}

// rebuildBlockedCache fills blocked_issues_cache anew as bd's
// rebuildBlockedCache does after a close: emptied, then the issues bd's
// blocked rule (BlockedCacheBlocked, bd's own recursive query, as a JSON
// array) finds.
func (t *tx) rebuildBlockedCache() error {
	err := t.e.q.BlockedCacheClear(t.ctx, t.conn)
	var ids string
	if err == nil {
		ids, err = t.e.q.BlockedCacheBlocked(t.ctx, t.conn)
	}
	if err == nil {
		err = t.e.q.BlockedCacheFill(t.ctx, t.conn, ids)
	}
	return err
}

// closed records the close of issue id as bd does: the closed event, its
// comment the reason, and the dirty mark.
func (t *tx) closed(id, actor, reason, at string) error {
	_, err := t.event(id, "closed", actor, sql.NullString{}, sql.NullString{}, reason)
	if err == nil {
		err = t.dirty(id, at)
	}
	return err
}

// move is a change of an issue's status and holder, and the event that
// records it.
type move struct {
	actor            string
	status, assignee string
	event, comment   string // the event's type and comment ("" for none)
}

// transition moves r as bd's UpdateIssue writes it: the row with a later
// updated_at and a recomputed content hash (compare-and-swap on the status
// and assignee it was read with), one event (old_value the issue as it
// was, new_value the change) and one dirty mark. It returns the event's id
// and leaves r as written.
func (t *tx) transition(r *engine.Row, m move) (int64, error) {
	updated := t.e.flavor.updatedAt(t.now, r.UpdatedAt)
	oldValue := t.e.flavor.eventOldValue(r)
	oldStatus, oldAssignee := r.Status, r.Assignee
	cols := r.Data.(columns)
	cols["status"], cols["assignee"] = text(m.status), text(m.assignee)
	hash := t.e.flavor.contentHash(r)
	cols["updated_at"], cols["content_hash"] = text(updated), text(hash)
	r.Status, r.Assignee, r.ContentHash, r.UpdatedAt = m.status, m.assignee, hash, updated
	n, err := t.e.q.IssueHolderSet(t.ctx, t.conn, db.IssueHolderSetParams{
		Status: m.status, Assignee: m.assignee, UpdatedAt: updated, ContentHash: text(hash),
		ID: r.ID, OldStatus: oldStatus, OldAssignee: oldAssignee,
	})
	if err := swapped(n, err, r.ID); err != nil {
		return 0, err
	}
	newValue, _ := json.Marshal(map[string]string{"assignee": m.assignee, "status": m.status})
	id, err := t.event(r.ID, m.event, m.actor, text(oldValue), text(string(newValue)), m.comment)
	if err == nil {
		err = t.dirty(r.ID, updated)
	}
	return id, err
}

// swapped is the compare-and-swap guard of an update of issue id that
// affected n rows (err its error): nil when it changed the one row, read
// in the same write transaction, that it was to change.
func swapped(n int64, err error, id string) error {
	if err == nil && n != 1 {
		err = engine.Errorf(engine.EUnexpected, "issue %s changed while bd-claim held the write lock", id)
	}
	return err
}

// event appends one audit event, dated now in bd's CURRENT_TIMESTAMP form.
func (t *tx) event(id, eventType, actor string, oldValue, newValue sql.NullString, comment string) (int64, error) {
	return t.e.q.EventInsert(t.ctx, t.conn, db.EventInsertParams{
		IssueID: id, EventType: eventType, Actor: actor, OldValue: oldValue, NewValue: newValue,
		Comment: optional(comment), CreatedAt: t.e.flavor.EventAt(t.now),
	})
}

// dirty flags an issue for bd's next JSONL export.
func (t *tx) dirty(id, at string) error {
	return t.e.q.DirtyIssueMark(t.ctx, t.conn, db.DirtyIssueMarkParams{IssueID: id, MarkedAt: at})
}
