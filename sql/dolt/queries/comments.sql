-- name: CommentNewest :one
-- CommentNewest is the time of an issue's newest comment, as text (no rows
-- without one): bd's NextLiveCommentTime dates a new comment a second after
-- it when the clock has not moved past it.
SELECT DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s') AS created_at FROM comments
WHERE issue_id = sqlc.arg(issue_id) ORDER BY created_at DESC LIMIT 1;

-- name: CommentSameContent :one
-- CommentSameContent finds a comment with the same content, onto which bd's
-- InsertDerivedComment collapses a new one (no rows when there is none).
SELECT id FROM comments
WHERE issue_id = sqlc.arg(issue_id) AND author = sqlc.arg(author) AND text = sqlc.arg(text) AND created_at = sqlc.arg(created_at)
ORDER BY id LIMIT 1;

-- name: CommentInsert :exec
-- CommentInsert adds a comment as `bd comments add` does
-- (issueops.InsertDerivedComment), under its content-derived id.
INSERT INTO comments (id, issue_id, author, text, created_at)
VALUES (sqlc.arg(id), sqlc.arg(issue_id), sqlc.arg(author), sqlc.arg(text), sqlc.arg(created_at));
