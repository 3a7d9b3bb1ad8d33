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

-- name: IssueState :one
-- IssueState reads what a refusal reports: status and holder.
SELECT status, CAST(COALESCE(assignee, '') AS TEXT) AS assignee
FROM issues
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

-- name: IssueHeld :one
-- IssueHeld lists every in_progress issue with its current claim event
-- (the latest claimed or status_changed event; claim_id 0 when there is
-- none) as one JSON array of objects, ordered by assignee and id.
SELECT CAST(COALESCE(json_group_array(json_object(
    'id', id, 'assignee', assignee, 'claim_id', claim_id,
    'claim_actor', claim_actor, 'claim_comment', claim_comment, 'claimed_at', claimed_at)), '[]') AS TEXT) AS held
FROM (
    SELECT i.id,
           COALESCE(i.assignee, '') AS assignee,
           COALESCE(e.id, 0) AS claim_id,
           COALESCE(e.actor, '') AS claim_actor,
           COALESCE(e.comment, '') AS claim_comment,
           COALESCE(CAST(e.created_at AS TEXT), '') AS claimed_at
    FROM issues i
    LEFT JOIN events e ON e.id = (
        SELECT max(c.id) FROM events c
        WHERE c.issue_id = i.id AND c.event_type IN ('claimed', 'status_changed'))
    WHERE i.status = 'in_progress'
    ORDER BY 2, 1
);
