-- name: CommentInsert :exec
-- CommentInsert adds a comment as bd's AddIssueComment does (`bd comments
-- add`): shown by bd show and exported with the issue.
INSERT INTO comments (issue_id, author, text, created_at)
VALUES (@issue_id, @author, @text, @created_at);
