package claimtest

import (
	"database/sql"
	"strings"
	"testing"
)

// Getenv looks a variable up in the environment bd runs with in the
// workspace, so that bd-claim's discovery sees what bd sees.
func (w *DoltWorkspace) Getenv(key string) string {
	for _, kv := range w.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// DoltRows is every row of the tables a claim may change (issues, leases,
// events) and the number of Dolt commits: equal before and after means
// nothing was written.
func DoltRows(t testing.TB, conn *sql.DB) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		"SELECT CONCAT_WS('|', id, status, COALESCE(assignee, '-'), row_lock, updated_at) FROM issues ORDER BY id",
		"SELECT CONCAT_WS('|', issue_id, holder, lease_expires_at) FROM leases ORDER BY issue_id",
		"SELECT CONCAT_WS('|', id, issue_id, event_type) FROM events ORDER BY id",
		"SELECT CONCAT_WS('|', id, status, COALESCE(assignee, '-'), row_lock, updated_at) FROM wisps ORDER BY id",
		"SELECT CONCAT_WS('|', id, issue_id, event_type) FROM wisp_events ORDER BY id",
		"SELECT CAST(count(*) AS CHAR) FROM dolt_log",
	} {
		out = append(out, q)
		out = append(out, Strings(t, conn, q)...)
	}
	return out
}
