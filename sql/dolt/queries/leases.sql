-- name: LeaseUpsert :exec
-- LeaseUpsert grants a claim's lease as bd's UpsertLeaseInTx does: one row
-- per claimed issue, replaced whole by a new claim.
INSERT INTO leases (issue_id, holder, granted_at, lease_expires_at, heartbeat_at, granted_node)
VALUES (sqlc.arg(issue_id), sqlc.arg(holder), sqlc.arg(granted_at), sqlc.arg(lease_expires_at), sqlc.arg(heartbeat_at), sqlc.arg(granted_node))
ON DUPLICATE KEY UPDATE holder = VALUES(holder), granted_at = VALUES(granted_at),
  lease_expires_at = VALUES(lease_expires_at), heartbeat_at = VALUES(heartbeat_at), granted_node = VALUES(granted_node);

-- name: LeaseHeartbeat :execrows
-- LeaseHeartbeat extends the holder's lease as `bd heartbeat` does.
UPDATE leases
SET lease_expires_at = sqlc.arg(lease_expires_at), heartbeat_at = sqlc.arg(heartbeat_at)
WHERE issue_id = sqlc.arg(issue_id) AND holder = sqlc.arg(holder);

-- name: LeaseDelete :exec
-- LeaseDelete ends an issue's lease: every path that ends a claim does.
DELETE FROM leases WHERE issue_id = sqlc.arg(issue_id);
