-- name: EventInsert :one
-- EventInsert appends one audit event and returns its id. created_at is
-- written in CURRENT_TIMESTAMP's form ('YYYY-MM-DD HH:MM:SS', UTC), as bd's
-- column default leaves it, but from bd-claim's clock.
INSERT INTO events (issue_id, event_type, actor, old_value, new_value, comment, created_at)
VALUES (@issue_id, @event_type, @actor, @old_value, @new_value, @comment, @created_at)
RETURNING id;

-- name: EventCommentSet :execrows
-- EventCommentSet rewrites the comment of one event: a heartbeat renews the
-- lease in its claim event instead of adding a row per beat.
UPDATE events
SET comment = @comment
WHERE id = @id;

-- name: EventCountsSince :one
-- EventCountsSince counts the claims, releases, failures, reclaims
-- (expired leases taken over or reaped) and closes (bd close's included)
-- recorded since a time
-- (idx_events_created_at). The comment patterns of bd-claim's protocol
-- are bound from claim/engine/protocol.go, the one place that spells them.
SELECT
    CAST(COALESCE(sum(CASE WHEN event_type IN ('claimed', 'status_changed')
        AND new_value LIKE '%"status":"in_progress"%' THEN 1 ELSE 0 END), 0) AS INTEGER) AS claims,
    CAST(COALESCE(sum(CASE WHEN comment LIKE CAST(@released AS TEXT) THEN 1 ELSE 0 END), 0) AS INTEGER) AS releases,
    CAST(COALESCE(sum(CASE WHEN comment LIKE CAST(@failed AS TEXT) THEN 1 ELSE 0 END), 0) AS INTEGER) AS failures,
    CAST(COALESCE(sum(CASE WHEN comment LIKE CAST(@expired AS TEXT) THEN 1 ELSE 0 END), 0) AS INTEGER) AS reclaims,
    CAST(COALESCE(sum(CASE WHEN event_type = 'closed' THEN 1 ELSE 0 END), 0) AS INTEGER) AS closes
FROM events
WHERE created_at >= @since;
