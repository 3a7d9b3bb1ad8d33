-- name: IssueClaimSet :execrows
-- IssueClaimSet is bd's claim (issueops.ClaimIssueInTx): the five cells of
-- the move to in_progress, guarded by a compare-and-swap on row_lock (which
-- every writer of status or assignee renews) and on the open status.
UPDATE issues
SET assignee = sqlc.arg(assignee),
    status = 'in_progress',
    updated_at = sqlc.arg(now),
    started_at = COALESCE(started_at, sqlc.arg(started_at)),
    row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status = 'open';

-- name: IssueHeldCount :one
-- IssueHeldCount counts the in_progress issues assigned to an agent
-- (idx_issues_assignee).
SELECT count(*) FROM issues WHERE assignee = sqlc.arg(agent) AND status = 'in_progress';

-- name: IssueClaimState :one
-- IssueClaimState reads what decides who holds an issue: its status and
-- assignee, the row_lock of its last ownership change (bd-claim's claim_id
-- on Dolt) and its leases row, if any.
SELECT i.id, i.status, COALESCE(i.assignee, '') AS assignee, i.row_lock,
       l.holder, l.lease_expires_at, l.heartbeat_at
FROM issues i LEFT JOIN leases l ON l.issue_id = i.id
WHERE i.id = sqlc.arg(id);

-- name: IssueUnclaimSet :execrows
-- IssueUnclaimSet is bd's unclaim (issueops.UnclaimIssueInTx): back to open
-- with an empty assignee, started_at cleared, guarded by the row_lock the
-- holder read.
UPDATE issues
SET assignee = '', status = 'open', started_at = NULL, updated_at = sqlc.arg(now), row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status IN ('open', 'in_progress');

-- name: IssueRowLock :one
-- IssueRowLock reads an issue's row_lock: after a COMMIT whose outcome
-- was lost with the connection, it tells whether the write landed (its
-- new row_lock is random, so only that write can have set it).
SELECT row_lock FROM issues WHERE id = sqlc.arg(id);
