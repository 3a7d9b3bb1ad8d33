-- name: IssueClaim :execrows
-- IssueClaim moves one open issue to in_progress for an agent. The WHERE
-- clause is the compare-and-swap guard: it matches only while the issue is
-- still open and unassigned (or already assigned to the same agent).
UPDATE issues
SET status = 'in_progress',
    assignee = CAST(@agent AS TEXT),
    updated_at = @updated_at,
    content_hash = @content_hash
WHERE id = @id
  AND status = 'open'
  AND (assignee IS NULL OR assignee = '' OR assignee = CAST(@agent AS TEXT));

-- name: IssueState :one
-- IssueState reads what a refused --id claim reports: status and holder.
SELECT status, CAST(COALESCE(assignee, '') AS TEXT) AS assignee
FROM issues
WHERE id = @id;

-- name: IssueLabels :one
-- IssueLabels returns the labels of one issue as a JSON array, sorted.
SELECT CAST(COALESCE(json_group_array(label), '[]') AS TEXT) AS labels
FROM (SELECT label FROM labels WHERE issue_id = @issue_id ORDER BY label);
