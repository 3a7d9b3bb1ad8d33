package dolt

import (
	"context"
	"database/sql"
	"errors"

	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

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
// table's events; wisp_events stores ” for a NULL value or comment, as
// bd's InsertDerivedEventReturningID writes it.
func (tb Table) InsertEvent(ctx context.Context, h doltdb.DBTX, e Event) error {
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
