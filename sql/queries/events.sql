-- name: EventInsert :exec
-- EventInsert appends one audit event; created_at keeps the column default
-- (CURRENT_TIMESTAMP), as bd leaves it.
INSERT INTO events (issue_id, event_type, actor, old_value, new_value)
VALUES (@issue_id, @event_type, @actor, @old_value, @new_value);
