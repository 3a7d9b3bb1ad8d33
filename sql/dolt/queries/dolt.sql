-- name: DoltAddIssues :exec
-- DoltAddIssues stages the issues table, as bd does after a claim's SQL
-- commit (events and leases are dolt_ignored).
CALL DOLT_ADD('issues');

-- name: DoltCommit :exec
-- DoltCommit commits what is staged, with bd's message and author.
CALL DOLT_COMMIT('-m', sqlc.arg(message), '--author', sqlc.arg(author));
