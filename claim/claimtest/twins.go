package claimtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// A twin test moves one issue of a Dolt workspace with the real bd and its
// twin with bd-claim, as the same agent, and compares what the two moves
// wrote (their Footprints): the same issues cells change (the same values
// where they do not depend on the time or chance), the leases rows match,
// the events have the same shape, and the Dolt commits have the same
// messages and authors and touch the same tables, rows and cells.

// View runs fn on a Dolt database: a connection to a server, or an
// embedded database opened for fn and closed after it (so that bd can
// open it again).
type View func(fn func(q Querier))

// Footprint is what one move wrote about one issue: the issues row and
// the leases row before and after it, the events it added, and the Dolt
// commits made since it began (oldest first), with their net change.
type Footprint struct {
	ID                      string
	Before, After           map[string]string // the issues row, every column as text
	LeaseBefore, LeaseAfter map[string]string // the leases row (nil for none)
	Events                  []TwinEvent       // by type (events of one second have no order)
	Commits                 []TwinCommit
	Net                     []string // dolt_diff_stat from before the move to after it
}

// TwinEvent is an event's shape: its type, actor, comment ("NULL" for
// none), new_value, and the keys of its old_value when that is a JSON
// object (else the value itself).
type TwinEvent struct {
	Type, Actor, Comment, NewValue string
	OldKeys                        []string
}

// TwinCommit is a Dolt commit: its message (the moved issue's id written
// ID), its author, and what it changed (dolt_diff_stat, by table).
type TwinCommit struct {
	Message, Author string
	Stat            []string
}

// Cells reads every column of row id of table as text, by name ("NULL"
// for NULL).
func Cells(t testing.TB, q Querier, table, id string) map[string]string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), "SELECT * FROM "+table+" WHERE id = ?", id)
	assert.NilError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	assert.NilError(t, err)
	assert.Assert(t, rows.Next(), "no row %s in %s", id, table)
	return scanText(t, rows, cols)
}

// scanText reads the current row as text by column.
func scanText(t testing.TB, rows *sql.Rows, cols []string) map[string]string {
	t.Helper()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	assert.NilError(t, rows.Scan(ptrs...))
	out := map[string]string{}
	for i, c := range cols {
		out[c] = "NULL"
		if vals[i].Valid {
			out[c] = vals[i].String
		}
	}
	return out
}

// mark is where a move began: the row, lease and events, and HEAD.
type mark struct {
	cells, lease map[string]string
	events       []string
	head         string
}

func readMark(t testing.TB, q Querier, id string) mark {
	t.Helper()
	return mark{
		cells:  Cells(t, q, "issues", id),
		lease:  leaseOf(t, q, id),
		events: Strings(t, q, "SELECT id FROM events WHERE issue_id = ?", id),
		head:   Strings(t, q, "SELECT commit_hash FROM dolt_log LIMIT 1")[0],
	}
}

// leaseOf is issue id's leases row, with its length (ttl: lease_expires_at
// less heartbeat_at, in seconds), or nil.
func leaseOf(t testing.TB, q Querier, id string) map[string]string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), "SELECT *, TIMESTAMPDIFF(SECOND, heartbeat_at, lease_expires_at) AS ttl FROM leases WHERE issue_id = ?", id)
	assert.NilError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	assert.NilError(t, err)
	if !rows.Next() {
		return nil
	}
	return scanText(t, rows, cols)
}

// Watch marks where a move of issue id begins; call what it returns once
// the move is done for the move's Footprint. Moves being compared are
// watched one after the other (a commit made meanwhile would count).
func Watch(t testing.TB, view View, id string) func() Footprint {
	t.Helper()
	var m mark
	view(func(q Querier) { m = readMark(t, q, id) })
	return func() Footprint {
		t.Helper()
		f := Footprint{ID: id, Before: m.cells, LeaseBefore: m.lease}
		view(func(q Querier) {
			f.After, f.LeaseAfter = Cells(t, q, "issues", id), leaseOf(t, q, id)
			rows, err := q.QueryContext(context.Background(),
				"SELECT event_type, actor, COALESCE(comment, 'NULL'), COALESCE(new_value, 'NULL'), COALESCE(old_value, 'NULL'), id FROM events WHERE issue_id = ? ORDER BY created_at", id)
			assert.NilError(t, err)
			defer rows.Close()
			for rows.Next() {
				var e TwinEvent
				var old, eventID string
				assert.NilError(t, rows.Scan(&e.Type, &e.Actor, &e.Comment, &e.NewValue, &old, &eventID))
				if slices.Contains(m.events, eventID) {
					continue
				}
				var obj map[string]any
				if json.Unmarshal([]byte(old), &obj) == nil {
					e.OldKeys = slices.Sorted(maps.Keys(obj))
				} else {
					e.OldKeys = []string{old}
				}
				f.Events = append(f.Events, e)
			}
			assert.NilError(t, rows.Err())
			slices.SortStableFunc(f.Events, func(a, b TwinEvent) int { return strings.Compare(a.Type, b.Type) })
			for _, c := range Strings(t, q, "SELECT CONCAT_WS('\x1f', commit_hash, message, CONCAT(committer, ' <', email, '>')) FROM dolt_log") {
				p := strings.Split(c, "\x1f")
				if p[0] == m.head {
					break
				}
				f.Commits = slices.Insert(f.Commits, 0, TwinCommit{Message: strings.ReplaceAll(p[1], id, "ID"), Author: p[2], Stat: DiffStat(t, q, p[0]+"~1", p[0])})
			}
			f.Net = DiffStat(t, q, m.head, "HEAD")
		})
		return f
	}
}

// DiffStat is what changed from one commit to another, by table: rows
// added, deleted and modified, cells modified.
func DiffStat(t testing.TB, q Querier, from, to string) []string {
	t.Helper()
	return Strings(t, q, "SELECT CONCAT_WS(' ', table_name, rows_added, rows_deleted, rows_modified, cells_modified) FROM dolt_diff_stat(?, ?) ORDER BY table_name", from, to)
}

// Changed is the issues cells the move changed.
func (f Footprint) Changed() []string { return Changed(f.Before, f.After) }

// LeaseChanged is the columns of the leases row the move changed (every
// one for a new row, "deleted" for a removed one), its length aside (Twin
// compares it within a second).
func (f Footprint) LeaseChanged() []string {
	if f.LeaseBefore != nil && f.LeaseAfter == nil {
		return []string{"deleted"}
	}
	return slices.DeleteFunc(Changed(f.LeaseBefore, f.LeaseAfter), func(c string) bool { return c == "ttl" })
}

// Twin compares bd's footprint (f) with bd-claim's (ours): the same
// issues cells changed, and the cells named in same are equal after; the
// same leases columns changed, with the same holder, node and length
// (within a second: bd-claim rounds the expiry to the second as the
// column stores it); the events have the same shapes; the Dolt commits
// have the same messages, authors and changes.
func (f Footprint) Twin(t testing.TB, ours Footprint, same ...string) {
	t.Helper()
	assert.DeepEqual(t, ours.Changed(), f.Changed())
	for _, c := range same {
		assert.Equal(t, ours.After[c], f.After[c], "issues.%s", c)
	}
	assert.DeepEqual(t, ours.LeaseChanged(), f.LeaseChanged())
	if f.LeaseAfter != nil {
		for _, c := range []string{"holder", "granted_node"} {
			assert.Equal(t, ours.LeaseAfter[c], f.LeaseAfter[c], "leases.%s", c)
		}
		var ttl, ourTTL int
		_, err := fmt.Sscan(f.LeaseAfter["ttl"]+" "+ours.LeaseAfter["ttl"], &ttl, &ourTTL)
		assert.NilError(t, err)
		assert.Assert(t, ourTTL == ttl || ourTTL == ttl+1, "lease length: bd %d s, bd-claim %d s", ttl, ourTTL)
	}
	assert.DeepEqual(t, ours.Events, f.Events)
	assert.DeepEqual(t, ours.Commits, f.Commits)
}

// ReclaimNote checks the one way in which bd-claim's lease_reclaimed event
// (ours) differs from bd reclaim's (bd): its comment is bd-claim's note
// (whose lease ended, when, and what came next), where bd's is NULL. It
// blanks the note, for Twin to compare the rest.
func ReclaimNote(t testing.TB, bd, ours *Footprint, holder, next string) {
	t.Helper()
	i := slices.IndexFunc(ours.Events, func(e TwinEvent) bool { return e.Type == "lease_reclaimed" })
	assert.Assert(t, i >= 0, "no lease_reclaimed event: %+v", ours.Events)
	assert.Assert(t, len(bd.Events) > i && bd.Events[i].Type == "lease_reclaimed" && bd.Events[i].Comment == "NULL", "%+v", bd.Events)
	note := ours.Events[i].Comment
	assert.Assert(t, strings.HasPrefix(note, "bd-claim expired: lease of "+holder+" (claim ") && strings.HasSuffix(note, "; "+next), note)
	ours.Events[i].Comment = bd.Events[i].Comment
}

// Moves has bd move a (bdMove) and bd-claim move b (ours), each in a
// later second than what came before (updated_at changes, the events and
// commits tell apart), and returns their footprints.
func Moves(t testing.TB, view View, a, b string, bdMove, ours func()) (Footprint, Footprint) {
	t.Helper()
	move := func(id string, fn func()) Footprint {
		done := Watch(t, view, id)
		time.Sleep(1100 * time.Millisecond)
		fn()
		return done()
	}
	return move(a, bdMove), move(b, ours)
}
