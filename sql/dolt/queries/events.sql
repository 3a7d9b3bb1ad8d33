-- name: EventInsert :exec
-- EventInsert appends one audit event with its content-derived id
-- (issueops.derivedid: UUIDv5 of the row's content).
INSERT INTO events (id, issue_id, event_type, actor, old_value, new_value, comment, created_at)
VALUES (sqlc.arg(id), sqlc.arg(issue_id), sqlc.arg(event_type), sqlc.arg(actor), sqlc.arg(old_value), sqlc.arg(new_value), sqlc.arg(comment), sqlc.arg(created_at));
