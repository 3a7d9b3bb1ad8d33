-- name: IssueHolderSet :execrows
-- IssueHolderSet moves one issue to a new status and assignee: a claim,
-- a takeover, a release. The WHERE clause is the compare-and-swap guard: it
-- matches only while the issue still has the status and assignee it was
-- read with.
UPDATE issues
SET status = CAST(@status AS TEXT),
    assignee = CAST(@assignee AS TEXT),
    updated_at = @updated_at,
    content_hash = @content_hash
WHERE id = @id
  AND status = CAST(@old_status AS TEXT)
  AND COALESCE(assignee, '') = CAST(@old_assignee AS TEXT);

-- name: IssueTouch :execrows
-- IssueTouch sets updated_at alone, as bd's AddComment does for an event
-- comment (updated_at is not part of the content hash).
UPDATE issues
SET updated_at = @updated_at
WHERE id = @id;

-- name: IssueLabels :one
-- IssueLabels returns the labels of one issue as a JSON array, sorted.
SELECT CAST(COALESCE(json_group_array(label), '[]') AS TEXT) AS labels
FROM (SELECT label FROM labels WHERE issue_id = @issue_id ORDER BY label);

-- name: IssueHeldCount :one
-- IssueHeldCount counts the in_progress issues assigned to an agent
-- (idx_issues_assignee).
SELECT count(*) FROM issues
WHERE assignee = CAST(@agent AS TEXT) AND status = 'in_progress';
