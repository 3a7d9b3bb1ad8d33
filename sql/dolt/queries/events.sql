-- name: EventInsert :exec
-- EventInsert appends one audit event with its content-derived id
-- (issueops.derivedid: UUIDv5 of the row's content).
INSERT INTO events (id, issue_id, event_type, actor, old_value, new_value, comment, created_at)
VALUES (sqlc.arg(id), sqlc.arg(issue_id), sqlc.arg(event_type), sqlc.arg(actor), sqlc.arg(old_value), sqlc.arg(new_value), sqlc.arg(comment), sqlc.arg(created_at));

-- name: EventIDsSameContent :one
-- EventIDsSameContent lists, as a JSON array, the ids of the events rows
-- whose content equals a new row's: bd gives the new row the lowest ordinal
-- whose derived id none of them holds (issueops.InsertDerivedEvent).
SELECT CAST(COALESCE(JSON_ARRAYAGG(id), '[]') AS JSON) AS ids FROM events
WHERE issue_id = sqlc.arg(issue_id) AND event_type = sqlc.arg(event_type) AND actor = sqlc.arg(actor)
  AND old_value <=> sqlc.arg(old_value) AND new_value <=> sqlc.arg(new_value) AND comment <=> sqlc.arg(comment)
  AND created_at = sqlc.arg(created_at);

-- name: EventCountsSince :one
-- EventCountsSince counts the claims, releases, failures, reclaims
-- (expired leases taken over or reaped, bd reclaim's included) and closes
-- (bd close's included) recorded
-- since a time (idx_events_created_at). A release is any unclaimed event
-- but a failed attempt: bd-claim's release and bd unclaim are the same
-- move. The failure pattern is bound from claim/engine/protocol.go.
SELECT
    CAST(COALESCE(SUM(CASE WHEN event_type = 'claimed' THEN 1 ELSE 0 END), 0) AS SIGNED) AS claims,
    CAST(COALESCE(SUM(CASE WHEN event_type = 'unclaimed' AND (comment IS NULL OR comment NOT LIKE sqlc.arg(failed)) THEN 1 ELSE 0 END), 0) AS SIGNED) AS releases,
    CAST(COALESCE(SUM(CASE WHEN event_type = 'unclaimed' AND comment LIKE sqlc.arg(failed) THEN 1 ELSE 0 END), 0) AS SIGNED) AS failures,
    CAST(COALESCE(SUM(CASE WHEN event_type = 'lease_reclaimed' THEN 1 ELSE 0 END), 0) AS SIGNED) AS reclaims,
    CAST(COALESCE(SUM(CASE WHEN event_type = 'closed' THEN 1 ELSE 0 END), 0) AS SIGNED) AS closes
FROM events
WHERE created_at >= sqlc.arg(since);

-- name: EventCommentSet :exec
-- EventCommentSet writes the lease a holder asked for into the comment of
-- its claim event (IssueClaimState's claim_event), as on SQLite: a heartbeat
-- adds no row. The lease itself is bd's leases row.
UPDATE events SET comment = sqlc.arg(comment) WHERE id = sqlc.arg(id);
