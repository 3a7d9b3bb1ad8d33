package dolt

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim/claimtest"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

func null(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

// Rows that the real bd v1.3.0 wrote into `events` on a dolt 2.2.0 server,
// copied byte for byte (fixtures): the first is the claim recorded in
// ../shared/docs/beads-dolt-facts.md section 4; the others were captured
// from a `bd init --server` workspace while writing this test (`bd create
// 'A <bug> & "q"' -p 0 -t bug -l backend -l a-label`, then
// `BEADS_ACTOR=agent-x bd update fx-dwe --claim`). Between them they cover
// a NULL and an empty old_value/new_value and a NULL and a set comment.
func TestEventIDMatchesBd(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(auxTimeLayout, s)
		assert.NilError(t, err)
		return v
	}
	for _, c := range []struct {
		id string
		e  Event
	}{
		{"e396a26b-61df-580e-af35-861ae07f8c4b", Event{IssueID: "fx-3pu", Type: "claimed", Actor: "agent-1",
			OldValue:  null(`{"id":"fx-3pu","title":"Beta task","status":"open","priority":2,"issue_type":"task","owner":"a@b.c","created_at":"2026-11-22T22:02:56Z","created_by":"creator","updated_at":"2026-11-22T22:02:56Z"}`),
			NewValue:  null(`{"assignee":"agent-1","status":"in_progress"}`),
			CreatedAt: at("2026-11-22 22:03:06")}},
		{"939d2e63-b8b3-52aa-8ce3-c7f4386f9f3f", Event{IssueID: "fx-dwe", Type: "claimed", Actor: "agent-x",
			OldValue:  null(`{"id":"fx-dwe","title":"A \u003cbug\u003e \u0026 \"q\"","status":"open","priority":0,"issue_type":"bug","owner":"t@example.com","created_at":"2026-11-23T01:28:01Z","created_by":"creator","updated_at":"2026-11-23T01:28:01Z","labels":["a-label","backend"]}`),
			NewValue:  null(`{"assignee":"agent-x","status":"in_progress"}`),
			CreatedAt: at("2026-11-23 01:28:04")}},
		{"23b4fa8c-18b1-5742-b05a-447286de4a12", Event{IssueID: "fx-dwe", Type: "created", Actor: "creator",
			OldValue: null(""), NewValue: null(""), CreatedAt: at("2026-11-23 01:28:00")}},
		{"5b500fd8-2e9f-558d-9fe3-efa112993a82", Event{IssueID: "fx-dwe", Type: "label_added", Actor: "creator",
			Comment: null("Added label: backend"), CreatedAt: at("2026-11-23 01:28:00")}},
		{"e3819caf-a30e-5174-b7da-d18b95a6b310", Event{IssueID: "fx-dwe", Type: "label_added", Actor: "creator",
			Comment: null("Added label: a-label"), CreatedAt: at("2026-11-23 01:28:00")}},
	} {
		assert.Check(t, is.Equal(eventID("events", c.e, 0), c.id), "%s %s", c.e.IssueID, c.e.Type)
		assert.Check(t, eventID("events", c.e, 1) != c.id && eventID("wisp_events", c.e, 0) != c.id)
	}
	// A wisp's claim, as `bd ready --claim` wrote it into wisp_events (a
	// `bd create --no-history -l x` wisp): its comment is '', not NULL.
	wisp := Event{IssueID: "sc-wisp-gtn", Type: "claimed", Actor: "creator",
		OldValue:  null(`{"id":"sc-wisp-gtn","title":"nh","status":"open","priority":1,"issue_type":"task","owner":"t@e.x","created_at":"2026-11-23T04:32:48Z","created_by":"creator","updated_at":"2026-11-23T04:32:48Z","labels":["x"],"no_history":true}`),
		NewValue:  null(`{"assignee":"creator","status":"in_progress"}`),
		Comment:   null(""),
		CreatedAt: at("2026-11-23 04:33:02")}
	assert.Check(t, is.Equal(eventID("wisp_events", wisp, 0), "21efd080-89ff-558e-b3bf-eaeefa394dd6"))
	// A claim event as ClaimedEvent builds it: bd's new_value, no comment,
	// created_at truncated (not rounded) to the second.
	e := ClaimedEvent("fx-dwe", "agent-x", `{"id":"fx-dwe","title":"A \u003cbug\u003e \u0026 \"q\"","status":"open","priority":0,"issue_type":"bug","owner":"t@example.com","created_at":"2026-11-23T01:28:01Z","created_by":"creator","updated_at":"2026-11-23T01:28:01Z","labels":["a-label","backend"]}`,
		time.Date(2026, 11, 23, 2, 28, 4, 999e6, time.FixedZone("CET", 3600)))
	assert.Check(t, is.Equal(e.CreatedAt, at("2026-11-23 01:28:04")))
	assert.Check(t, !e.Comment.Valid)
	assert.Check(t, is.Equal(eventID("events", e, 0), "939d2e63-b8b3-52aa-8ce3-c7f4386f9f3f"))
}

// The ordinal is the lowest one whose id no same-content row holds; an id
// of another shape (a legacy random one) takes no ordinal.
func TestFirstFreeEventID(t *testing.T) {
	e := ClaimedEvent("x-1", "a", "{}", time.Unix(1e9, 0))
	id := func(n int) string { return eventID("events", e, n) }
	assert.Check(t, is.Equal(firstFreeEventID("events", e, nil), id(0)))
	assert.Check(t, is.Equal(firstFreeEventID("events", e, []string{id(0)}), id(1)))
	assert.Check(t, is.Equal(firstFreeEventID("events", e, []string{id(1), id(0), id(2)}), id(3)))
	assert.Check(t, is.Equal(firstFreeEventID("events", e, []string{id(1)}), id(0)), "a gap is filled first")
	assert.Check(t, is.Equal(firstFreeEventID("events", e, []string{"0190a0b1-7c2e-7def-8123-456789abcdef"}), id(0)))
}

// What bd's ScanIssueFrom does with values its CLI does not write.
func TestDoltIssueOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", -7200))
	row := doltdb.IssueSnapshotRow{ID: "x-1", Title: "T", Status: "open", IssueType: "task", CreatedAt: at, UpdatedAt: at,
		Metadata: sql.NullString{String: `{}`, Valid: true}, Labels: `["b","B","a","ä"]`,
		ExternalRef: null(""), Waiters: null(`["a@x", "b@y"]`), CompactionLevel: sql.NullInt32{Int32: 2, Valid: true},
		StartedAt: sql.NullTime{Time: at, Valid: true}}
	iss, err := IssueOf(row)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(iss.EventJSON(), `{"id":"x-1","title":"T","status":"open","priority":0,"issue_type":"task",`+
		`"created_at":"2026-01-02T05:04:05Z","updated_at":"2026-01-02T05:04:05Z","started_at":"2026-01-02T05:04:05Z",`+
		`"external_ref":"","compaction_level":2,"labels":["B","a","b","ä"],"waiters":["a@x","b@y"]}`))

	for _, waiters := range []string{"", "[", `["a", 1]`, `{"a":1}`} {
		row.Waiters = null(waiters)
		iss, err := IssueOf(row)
		assert.NilError(t, err)
		assert.Check(t, is.Nil(iss.Waiters), "waiters %q", waiters)
	}
	row.Labels = `[]`
	iss, err = IssueOf(row)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(iss.EventJSON(), "labels"))

	row.Labels = `["a",1]`
	_, err = IssueOf(row)
	assert.ErrorContains(t, err, "labels of x-1: json: cannot unmarshal number")
}

// The old_value, new_value and id of the claimed event that the real bd
// v1.3.0 writes equal what this package computes from the issue as it was
// before the claim, for issues with every field bd prints set.
func TestDoltClaimedEventMatchesBd(t *testing.T) {
	srv := claimtest.NeedDolt(t)
	t.Parallel()
	ctx := context.Background()
	w := srv.Workspace(t, "ev")
	conn := w.DB(t)
	var ids []string
	create := func(args ...string) string {
		t.Helper()
		var iss struct{ ID string }
		w.As("creator").JSON(&iss, append([]string{"create"}, args...)...)
		ids = append(ids, iss.ID)
		return iss.ID
	}
	create("Plain task")
	create(`Ünïcödé "quoted" <title> & 'more' — ✓ 漢字`, "-p", "0", "-t", "bug",
		"-l", "zeta,Alpha,alpha,ünï,a-b,_x", "-d", "line one\nline <two> & \"three\"\ttab",
		"--design", "design ✓", "--acceptance", "accept", "--notes", "notes\n", "-e", "90",
		"--due", "2031-07-04", "--defer", "2020-01-02", "--external-ref", "gh-9", "--spec-id", "specs/a b.md")
	create("Metadata", "-t", "feature", "-p", "4", "--metadata", `{"z":1,"a":{"b":[1,2.5,"<&>"]},"n":null,"t":true,"u":"ü\u0001"}`)
	create("Epic", "-t", "epic", "-p", "1")
	create("Chore", "-t", "chore", "-p", "3", "--external-ref", "")
	// Columns bd's CLI does not write at create, set directly: GetIssueInTx
	// reads (and old_value prints) every one of them, and a lease row left
	// behind on an open issue joins in.
	sink := create("Kitchen sink", "-t", "task")
	exec := func(query string, args ...any) {
		t.Helper()
		_, err := conn.ExecContext(ctx, query, args...)
		assert.NilError(t, err)
	}
	exec(`UPDATE issues SET assignee = 'agent-x', started_at = '2026-01-01 10:00:00',
		closed_at = '2026-01-03 00:00:00', close_reason = 'dup', closed_by_session = 'sess-1',
		compaction_level = 2, compacted_at = '2026-01-04 00:00:00', compacted_at_commit = 'abc123', original_size = 4096,
		sender = 'mayor', ephemeral = 1, no_history = 1, wisp_type = 'heartbeat', pinned = 1,
		await_type = 'gh:run', await_id = '42', timeout_ns = 5000000000, waiters = '["a@x","b@y"]',
		mol_type = 'swarm', work_type = 'open_competition', event_kind = 'patrol.muted', actor = 'ent://a',
		target = 'ev-1', payload = '{"k":1}', source_system = 'jira', storage_class = 'versioned',
		external_ref = '', spec_id = '', owner = NULL, created_by = NULL, estimated_minutes = 0
		WHERE id = ?`, sink)
	exec(`INSERT INTO leases (issue_id, holder, granted_at, lease_expires_at, heartbeat_at, granted_node)
		VALUES (?, 'ghost', '2026-01-01 10:00:00', '2026-01-01 10:05:00', '2026-01-01 10:01:00', 'node-7')`, sink)
	// bd update --claim refuses a template ("templates are read-only") but bd
	// ready --claim takes it: it is claimed last, when nothing else is ready.
	tmpl := create("Template", "-l", "t")
	exec(`UPDATE issues SET is_template = 1, sender = 's', wisp_type = 'patrol', storage_class = 'versioned',
		await_type = 'human', mol_type = 'patrol' WHERE id = ?`, tmpl)

	for _, id := range ids {
		row, err := doltdb.New().IssueSnapshot(ctx, conn, id)
		assert.NilError(t, err)
		iss, err := IssueOf(row)
		assert.NilError(t, err)
		old := iss.EventJSON()

		if id == tmpl {
			var claimed []struct{ ID string }
			w.As("agent-x").JSON(&claimed, "ready", "--claim")
			assert.Assert(t, is.Len(claimed, 1))
			assert.Assert(t, is.Equal(claimed[0].ID, tmpl), "bd ready --claim took another issue")
		} else {
			w.As("agent-x").OK("update", id, "--claim", "--json")
		}
		var got Event
		var gotID string
		assert.NilError(t, conn.QueryRowContext(ctx, `SELECT id, issue_id, event_type, actor, old_value, new_value, comment, created_at
			FROM events WHERE issue_id = ? AND event_type = 'claimed'`, id).
			Scan(&gotID, &got.IssueID, &got.Type, &got.Actor, &got.OldValue, &got.NewValue, &got.Comment, &got.CreatedAt))
		assert.Check(t, is.Equal(got.OldValue.String, old), "old_value of %s", id)
		want := ClaimedEvent(id, "agent-x", old, got.CreatedAt)
		assert.Check(t, is.DeepEqual(got, want), "the claimed event of %s", id)
		assert.Check(t, is.Equal(eventID("events", got, 0), gotID), "id of %s's event", id)

		// Another event of the same content would take the next ordinal.
		next, err := NewEventID(ctx, conn, false, want)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(next, eventID("events", want, 1)))
		want.CreatedAt = want.CreatedAt.Add(time.Second)
		next, err = NewEventID(ctx, conn, false, want)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(next, eventID("events", want, 0)))
		if id == sink || id == tmpl {
			t.Logf("bd's old_value of %s:\n%s", id, old)
		}
	}

	_, err := doltdb.New().IssueSnapshot(ctx, conn, "ev-nope")
	assert.Check(t, is.ErrorIs(err, sql.ErrNoRows))
}

// NewEventID reports a failed read instead of guessing an ordinal.
func TestNewEventIDFails(t *testing.T) {
	srv := claimtest.NeedDolt(t)
	t.Parallel()
	conn, err := sql.Open("mysql", srv.DSN(""))
	assert.NilError(t, err)
	defer conn.Close()
	e := ClaimedEvent("ef-1", "a", "{}", time.Now())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NewEventID(cancelled, conn, false, e)
	assert.Check(t, is.ErrorIs(err, context.Canceled))

	_, err = NewEventID(context.Background(), oneRow{conn, `SELECT CAST('{"id":1}' AS JSON)`}, false, e)
	assert.Check(t, is.ErrorContains(err, "ids of same-content events: json: cannot unmarshal object"))
}

// oneRow answers every single-row query with the row of its own query.
type oneRow struct {
	doltdb.DBTX
	query string
}

func (o oneRow) QueryRowContext(ctx context.Context, _ string, _ ...any) *sql.Row {
	return o.DBTX.QueryRowContext(ctx, o.query)
}

// A comment's id is bd v1.3.0's: measured with the real bd, `bd comments add
// em-qae hello` as actor t at 2026-11-28 17:43:15 UTC got this id.
func TestCommentIDAsBd(t *testing.T) {
	str := func(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
	got := rowID("comments", 0, digest(str("em-qae"), str("t"), str("hello"), str("2026-11-28 17:43:15")))
	assert.Equal(t, got, "b394d59a-4cc0-5426-a12d-c6ae23403e63")
}
