-- name: DirtyIssueMark :exec
-- DirtyIssueMark flags an issue for bd's next JSONL export.
INSERT INTO dirty_issues (issue_id, marked_at)
VALUES (@issue_id, @marked_at)
ON CONFLICT (issue_id) DO UPDATE SET marked_at = excluded.marked_at;
