-- name: EventInsert :one
-- EventInsert appends one audit event and returns its id. created_at is
-- written in CURRENT_TIMESTAMP's form ('YYYY-MM-DD HH:MM:SS', UTC), as bd's
-- column default leaves it, but from bd-claim's clock.
INSERT INTO events (issue_id, event_type, actor, old_value, new_value, comment, created_at)
VALUES (@issue_id, @event_type, @actor, @old_value, @new_value, @comment, @created_at)
RETURNING id;

-- name: EventClaimCurrent :one
-- EventClaimCurrent is the claim event of an issue's current holder: its
-- latest claimed or status_changed event (idx_events_issue_type). Its id is
-- the claim's fencing token (claim_id); its comment carries the lease.
SELECT id, actor, CAST(COALESCE(comment, '') AS TEXT) AS comment, CAST(created_at AS TEXT) AS created_at
FROM events
WHERE issue_id = @issue_id AND event_type IN ('claimed', 'status_changed')
ORDER BY id DESC
LIMIT 1;

-- name: EventCommentSet :execrows
-- EventCommentSet rewrites the comment of one event: a heartbeat renews the
-- lease in its claim event instead of adding a row per beat.
UPDATE events
SET comment = @comment
WHERE id = @id;

-- name: EventAttempts :one
-- EventAttempts counts an issue's failed attempts since its last reset and
-- returns the time of the latest (idx_events_issue_type: the cost depends on
-- the issue's own events, not on the size of the table).
SELECT count(*) AS failures,
       CAST(COALESCE(max(f.created_at), '') AS TEXT) AS last_failure_at
FROM events f
WHERE f.issue_id = @issue_id
  AND f.event_type = 'status_changed'
  AND f.comment LIKE 'bd-claim failed:%'
  AND f.id > COALESCE((
      SELECT max(r.id) FROM events r
      WHERE r.issue_id = @issue_id AND r.event_type = 'commented'
        AND r.comment LIKE 'bd-claim reset:%'), 0);

-- name: EventCountsSince :one
-- EventCountsSince counts the claims, releases, failures and reclaims
-- (expired leases taken over or reaped) recorded since a time
-- (idx_events_created_at).
SELECT
    CAST(COALESCE(sum(CASE WHEN event_type IN ('claimed', 'status_changed')
        AND new_value LIKE '%"status":"in_progress"%' THEN 1 ELSE 0 END), 0) AS INTEGER) AS claims,
    CAST(COALESCE(sum(CASE WHEN comment LIKE 'bd-claim released:%' THEN 1 ELSE 0 END), 0) AS INTEGER) AS releases,
    CAST(COALESCE(sum(CASE WHEN comment LIKE 'bd-claim failed:%' THEN 1 ELSE 0 END), 0) AS INTEGER) AS failures,
    CAST(COALESCE(sum(CASE WHEN comment LIKE 'bd-claim expired:%' THEN 1 ELSE 0 END), 0) AS INTEGER) AS reclaims
FROM events
WHERE created_at >= @since;
