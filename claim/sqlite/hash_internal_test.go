package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// openFixture opens a private copy of a bd-made fixture database.
func openFixture(t *testing.T, version string) *claim.Store {
	t.Helper()
	s, err := open(context.Background(), claim.Workspace{DBPath: claimtest.DBPath(claimtest.Fixture(t, version))}, claim.Options{})
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// bd's content hash, recomputed from the columns of every issue of the real
// bd workspaces, equals what bd stored. bd does not recompute the hash when
// it closes, deletes (tombstone) or migrates pinned to hooked, so those rows
// keep a stale hash; every row bd created or updated matches.
func TestContentHashMatchesBd(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"0.27.2": 55, "0.47.1": 87, "0.49.6": 87} {
		t.Run(v, func(t *testing.T) {
			s := openFixture(t, v)
			matched := 0
			for _, id := range claimtest.Strings(t, engineOf(s).conn, "SELECT id FROM issues ORDER BY id") {
				r, err := engineOf(s).tx(context.Background(), nil).Read(id)
				assert.NilError(t, err)
				if engineOf(s).flavor.contentHash(r) == r.ContentHash {
					matched++
					continue
				}
				assert.Assert(t, r.Status == "closed" || r.Status == "tombstone" || r.Status == "hooked",
					"%s (%s): hash %s, bd stored %s", id, r.Status, engineOf(s).flavor.contentHash(r), r.ContentHash)
			}
			assert.Equal(t, matched, want)
		})
	}
}

// The old_value of every status change bd recorded is reproduced byte for
// byte from the columns (with the status, assignee and updated_at it
// had before that change).
func TestEventOldValueMatchesBd(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"0.27.2": 8, "0.47.1": 17, "0.49.6": 17} {
		t.Run(v, func(t *testing.T) {
			s := openFixture(t, v)
			rows, err := engineOf(s).conn.Query(`SELECT issue_id, old_value FROM events WHERE event_type IN ('status_changed', 'claimed') ORDER BY id`)
			assert.NilError(t, err)
			type ev struct{ id, old string }
			var evs []ev
			for rows.Next() {
				var e ev
				assert.NilError(t, rows.Scan(&e.id, &e.old))
				evs = append(evs, e)
			}
			assert.NilError(t, rows.Close())
			assert.Equal(t, len(evs), want)
			for _, e := range evs {
				var before struct{ Status, Assignee, UpdatedAt string }
				assert.NilError(t, json.Unmarshal([]byte(e.old), &struct {
					Status    *string `json:"status"`
					Assignee  *string `json:"assignee"`
					UpdatedAt *string `json:"updated_at"`
				}{&before.Status, &before.Assignee, &before.UpdatedAt}))
				r, err := engineOf(s).tx(context.Background(), nil).Read(e.id)
				assert.NilError(t, err)
				r.Data.(columns)["status"] = sql.NullString{String: before.Status, Valid: true}
				r.Data.(columns)["assignee"] = sql.NullString{String: before.Assignee, Valid: true}
				r.Data.(columns)["updated_at"] = sql.NullString{String: before.UpdatedAt, Valid: true}
				assert.Equal(t, engineOf(s).flavor.eventOldValue(r), e.old)
			}
		})
	}
}
