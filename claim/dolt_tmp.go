package claim

import "database/sql"

// TEMPORARY until the snapshot/event-id work lands (wt-doltjson).
type doltSnapshot struct {
	issue   Issue
	rowLock int64
	json    string
}

func (t *txn) doltSnapshot(id string) (doltSnapshot, error) {
	var s doltSnapshot
	var ref sql.NullString
	err := t.conn.QueryRowContext(t.ctx, "SELECT id, title, status, COALESCE(assignee,''), priority, issue_type, COALESCE(content_hash,''), external_ref, row_lock FROM issues WHERE id = ?", id).
		Scan(&s.issue.ID, &s.issue.Title, &s.issue.Status, &s.issue.Assignee, &s.issue.Priority, &s.issue.IssueType, &s.issue.ContentHash, &ref, &s.rowLock)
	s.json = "{}"
	s.issue.Labels = []string{}
	return s, err
}

func (t *txn) doltEventID(id, eventType, actor string, oldValue, newValue, comment sql.NullString, at string) (string, error) {
	return "00000000-0000-0000-0000-" + at[len(at)-2:] + "0000000000", nil
}
