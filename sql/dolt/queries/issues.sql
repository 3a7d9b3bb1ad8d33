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
