package claimtest

import (
	"context"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

// RowOf reads every column of a row of table whose key column is value,
// as text by name.
func RowOf(t testing.TB, conn Querier, table, key, value string) map[string]string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SELECT * FROM "+table+" WHERE "+key+" = ?", value)
	assert.NilError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	assert.NilError(t, err)
	out := map[string]string{}
	if !rows.Next() {
		return out
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	assert.NilError(t, rows.Scan(vals...))
	for i, c := range cols {
		v := *(vals[i].(*any))
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		out[c] = fmt.Sprint(v)
	}
	return out
}

// CloseEvents is the closed events of an issue after its claim, as twins share
// them: type, actor, old_value, new_value and comment.
func CloseEvents(t testing.TB, conn Querier, id string) []string {
	t.Helper()
	return Strings(t, conn, `SELECT CONCAT(event_type, '|', actor, '|', COALESCE(old_value, '<null>'), '|', COALESCE(new_value, '<null>'), '|', COALESCE(comment, '<null>'))
		FROM events WHERE issue_id = ? AND event_type = 'closed' ORDER BY created_at`, id)
}
