package claimtest

import (
	"database/sql"
	"testing"
)

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
