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

-- name: IssueOpenCrowd :one
-- IssueOpenCrowd counts the open issues, up to @most (idx_issues_status):
-- whether a claim in age order may walk the age index at all
-- (sqliteTx.crowded).
SELECT count(*) FROM (SELECT 1 FROM issues WHERE status = 'open' LIMIT CAST(@most AS INTEGER));

-- name: IssueTopPriorityCrowd :one
-- IssueTopPriorityCrowd counts the open issues of the most urgent open
-- priority, up to @most (idx_issues_status_priority, whose min() stops at
-- the first entry): whether a claim in priority order may walk the age
-- index at all (sqliteTx.crowded).
SELECT count(*) FROM (SELECT 1 FROM issues WHERE status = 'open'
    AND priority = (SELECT min(priority) FROM issues WHERE status = 'open') LIMIT CAST(@most AS INTEGER));

-- name: IssueHeldCount :one
-- IssueHeldCount counts the in_progress issues assigned to an agent
-- (idx_issues_assignee).
SELECT count(*) FROM issues
WHERE assignee = CAST(@agent AS TEXT) AND status = 'in_progress';

-- name: IssueClose :execrows
-- IssueClose closes one issue as bd's CloseIssue (v0.47-v0.50) writes it:
-- status, closed_at, updated_at, close_reason and closed_by_session; the
-- content hash is left as it was, as bd leaves it. The WHERE clause is the
-- compare-and-swap guard: it matches only while the issue still has the
-- status and assignee it was read with.
UPDATE issues
SET status = 'closed',
    closed_at = @closed_at,
    updated_at = @updated_at,
    close_reason = @close_reason,
    closed_by_session = @closed_by_session
WHERE id = @id
  AND status = CAST(@old_status AS TEXT)
  AND COALESCE(assignee, '') = CAST(@old_assignee AS TEXT);

-- name: IssueCloseBlockers :one
-- IssueCloseBlockers names the open issues that block one issue, most
-- urgent first, comma-separated ('' for none), when the issue is in
-- blocked_issues_cache: bd close (v0.47+) refuses to close a blocked issue
-- (bd's IsBlocked).
SELECT CAST(COALESCE(group_concat(depends_on_id, ', '), '') AS TEXT) AS blockers
FROM (
  SELECT d.depends_on_id
  FROM dependencies d
  JOIN issues blocker ON d.depends_on_id = blocker.id
  WHERE d.issue_id = @issue_id
    AND d.type = 'blocks'
    AND blocker.status IN ('open', 'in_progress', 'blocked', 'deferred', 'hooked')
    AND EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = @issue_id)
  ORDER BY blocker.priority ASC
);

-- name: ConvoysTracking :one
-- ConvoysTracking lists, as a JSON array, the convoys (issues labelled
-- gt:convoy) that track an issue and are not closed: bd's CloseIssue
-- closes each whose tracked issues are all closed ("reactive convoy
-- completion").
SELECT CAST(json_group_array(issue_id) AS TEXT) AS convoys
FROM (
  SELECT DISTINCT d.issue_id
  FROM dependencies d
  JOIN issues i ON d.issue_id = i.id
  JOIN labels l ON i.id = l.issue_id AND l.label = 'gt:convoy'
  WHERE d.depends_on_id = @issue_id
    AND d.type = 'tracks'
    AND i.status != 'closed'
);

-- name: ConvoyOpenTracked :one
-- ConvoyOpenTracked counts the issues a convoy tracks that are neither
-- closed nor tombstones.
SELECT COUNT(*)
FROM dependencies d
JOIN issues i ON d.depends_on_id = i.id
WHERE d.issue_id = @convoy_id
  AND d.type = 'tracks'
  AND i.status != 'closed'
  AND i.status != 'tombstone';

-- name: ConvoyClose :exec
-- ConvoyClose closes a completed convoy as bd's CloseIssue does: without
-- closed_by_session, with bd's reason.
UPDATE issues
SET status = 'closed',
    closed_at = @closed_at,
    updated_at = @updated_at,
    close_reason = @close_reason
WHERE id = @id;

-- name: IssueLookalikes :one
-- IssueLookalikes is what resolves a partial issue id as bd does
-- (utils.ResolvePartialID): the workspace's issue prefix (config
-- issue_prefix, '' without one) and, as a JSON array, the ids of the issues
-- whose id contains part (at most 64; the caller keeps those whose hash
-- starts with it).
SELECT CAST(COALESCE((SELECT value FROM config WHERE key = 'issue_prefix'), '') AS TEXT) AS prefix,
       CAST((SELECT json_group_array(id) FROM (SELECT id FROM issues WHERE instr(id, sqlc.arg(part)) > 0 ORDER BY id LIMIT 64)) AS TEXT) AS ids;
