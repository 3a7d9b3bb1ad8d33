-- name: DoltAddIssues :exec
-- DoltAddIssues stages the issues table, as bd does after a claim's SQL
-- commit (events and leases are dolt_ignored).
CALL DOLT_ADD('issues');

-- name: DoltCommit :exec
-- DoltCommit commits what is staged, with bd's message and author.
CALL DOLT_COMMIT('-m', sqlc.arg(message), '--author', sqlc.arg(author));

-- name: WritersLock :one
-- WritersLock queues bd-claim's writers of one database, on every machine
-- that shares the server: a named lock of the server, held by the session
-- (freed when its connection closes, a killed process included). taken is
-- 1 when taken, 0 when the wait timed out; then holder is who holds it
-- (a connection id, 0 when it is free) and hash the working set's hash as
-- the statement began: a writer that waits in rounds of this statement
-- sees the writers ahead take their turns and commits land.
SELECT CAST(COALESCE(GET_LOCK(sqlc.arg(name), sqlc.arg(timeout_seconds)), 0) AS SIGNED) AS taken,
       CAST(COALESCE(IS_USED_LOCK(sqlc.arg(name)), 0) AS SIGNED) AS holder,
       CONCAT(DOLT_HASHOF_DB()) AS hash;

-- name: WritersUnlock :exec
-- WritersUnlock hands the named lock to the next writer.
SELECT RELEASE_LOCK(sqlc.arg(name));

-- name: DoltAddLabels :exec
-- DoltAddLabels stages the labels table, as bd's label add and remove do.
CALL DOLT_ADD('labels');

-- name: WorkingSetHash :one
-- WorkingSetHash is the hash of the working set, new after every SQL commit
-- (CONCAT: sqlc then types it as text).
SELECT CONCAT(DOLT_HASHOF_DB()) AS hash;

-- name: DoltCommitAll :exec
-- DoltCommitAll stages every table that is not dolt_ignored and commits
-- it, with bd's message and author, as bd's proxied-server mode commits
-- (DOLT_COMMIT('-Am') at the end of the write's transaction).
CALL DOLT_COMMIT('-Am', sqlc.arg(message), '--author', sqlc.arg(author));

-- name: DoltAddComments :exec
-- DoltAddComments stages the comments table, as bd's comments add does.
CALL DOLT_ADD('comments');
