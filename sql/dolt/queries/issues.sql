-- name: IssueClaimSet :execrows
-- IssueClaimSet is bd's claim (issueops.ClaimIssueInTx): the five cells of
-- the move to in_progress, guarded by a compare-and-swap on row_lock (which
-- every writer of status or assignee renews) and on the status the claim
-- found it in (open, or a custom status bd's claim takes an issue from).
UPDATE issues
SET assignee = sqlc.arg(assignee),
    status = 'in_progress',
    updated_at = sqlc.arg(now),
    started_at = COALESCE(started_at, sqlc.arg(started_at)),
    row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status = sqlc.arg(from_status);

-- name: IssueHeldCount :one
-- IssueHeldCount counts the in_progress issues and wisps assigned to an
-- agent (idx_issues_assignee).
SELECT CAST((SELECT count(*) FROM issues i WHERE i.assignee = sqlc.arg(agent) AND i.status = 'in_progress')
  + (SELECT count(*) FROM wisps w WHERE w.assignee = sqlc.arg(agent) AND w.status = 'in_progress') AS SIGNED) AS held;

-- name: IssueClaimState :one
-- IssueClaimState reads what decides who holds an issue: its status and
-- assignee, the row_lock of its last ownership change (bd-claim's claim_id
-- on Dolt), its leases row, if any, the holder's latest claimed event (for
-- a heartbeat to record an asked lease in), and the comment of the claimed
-- event that records the lease the holder asked bd-claim for, for this
-- claim: its comment names the row_lock (NULL when the holder asked for
-- none; claim/dolt/flavor.go doltAskedLease spells the same match).
SELECT i.id, i.status, COALESCE(i.assignee, '') AS assignee, i.row_lock,
       l.holder, l.lease_expires_at, l.heartbeat_at, l.granted_at,
       CONCAT(COALESCE((SELECT e.id FROM events e WHERE e.issue_id = i.id AND e.event_type = 'claimed' AND e.actor = i.assignee
        ORDER BY e.created_at DESC LIMIT 1), '')) AS claim_event,
       (SELECT e.comment FROM events e WHERE e.issue_id = i.id AND e.event_type = 'claimed' AND e.actor = i.assignee
        AND e.comment LIKE CONCAT(sqlc.arg(asked), i.row_lock) LIMIT 1) AS claim_comment
FROM issues i LEFT JOIN leases l ON l.issue_id = i.id
WHERE i.id = sqlc.arg(id);

-- name: IssueUnclaimSet :execrows
-- IssueUnclaimSet is bd's unclaim (issueops.UnclaimIssueInTx): back to open
-- with an empty assignee, started_at cleared, guarded by the row_lock the
-- holder read.
UPDATE issues
SET assignee = '', status = 'open', started_at = NULL, updated_at = sqlc.arg(now), row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status IN ('open', 'in_progress');

-- name: IssueReadyBounds :one
-- IssueReadyBounds is what narrows a claim's query, in one statement. deferred
-- is 1 when an issue or a wisp is deferred beyond now (idx_issues_defer_until;
-- EXISTS stops at the first, where a count read them all and planned a union):
-- when none is, no issue has a deferred parent, and a claim leaves that
-- rule, which the server takes long to plan, out of its query. top_issue
-- and top_wisp are the most urgent priority of an open issue, and of an
-- open wisp (-1 for none): no ready open issue comes before them in the
-- priority order. Each walks the table's priority index in order and stops
-- at the first open row; the status is compared through CONCAT so that the
-- server does not trade that walk for the status index, which would read
-- every open row (at 10k open issues, 15 ms against 1).
SELECT CAST((EXISTS (SELECT 1 FROM issues i WHERE i.defer_until > sqlc.arg(now))
        OR EXISTS (SELECT 1 FROM wisps w WHERE w.defer_until > sqlc.arg(now))) AS SIGNED) AS deferred,
       CAST(COALESCE((SELECT i.priority FROM issues i WHERE CONCAT(i.status) = 'open' ORDER BY i.priority LIMIT 1), -1) AS SIGNED) AS top_issue,
       CAST(COALESCE((SELECT w.priority FROM wisps w WHERE CONCAT(w.status) = 'open' ORDER BY w.priority LIMIT 1), -1) AS SIGNED) AS top_wisp;

-- name: IssueRowLock :one
-- IssueRowLock reads an issue's row_lock: after a COMMIT whose outcome
-- was lost with the connection, it tells whether the write landed (its
-- new row_lock is random, so only that write can have set it).
SELECT row_lock FROM issues WHERE id = sqlc.arg(id);

-- name: IssueSnapshot :one
-- IssueSnapshot reads an issue as bd's GetIssueInTx does before a claim: the
-- columns types.Issue is built from, the leases overlay and the labels (as a
-- JSON array, in one statement). The claimed event's old_value is its JSON;
-- row_lock guards the claim's compare-and-swap. NULL flags read as false and
-- a NULL metadata as {}, as bd reads them.
SELECT issues.id, issues.title, issues.description, issues.design, issues.acceptance_criteria, issues.notes,
       issues.status, issues.priority, issues.issue_type, issues.assignee, issues.estimated_minutes,
       issues.created_at, issues.created_by, issues.owner, issues.updated_at, issues.started_at, issues.closed_at,
       issues.external_ref, issues.spec_id,
       issues.compaction_level, issues.compacted_at, issues.compacted_at_commit, issues.original_size,
       issues.close_reason, issues.closed_by_session, issues.sender,
       COALESCE(issues.ephemeral, 0) <> 0 AS ephemeral, COALESCE(issues.no_history, 0) <> 0 AS no_history,
       issues.wisp_type,
       COALESCE(issues.pinned, 0) <> 0 AS pinned, COALESCE(issues.is_template, 0) <> 0 AS is_template,
       issues.await_type, issues.await_id, issues.timeout_ns, issues.waiters,
       issues.mol_type, issues.event_kind, issues.actor, issues.target, issues.payload,
       issues.due_at, issues.defer_until, issues.work_type, issues.source_system,
       COALESCE(issues.metadata, JSON_OBJECT()) AS metadata,
       issues.row_lock, issues.storage_class, issues.content_hash,
       leases.lease_expires_at, leases.heartbeat_at, leases.granted_node,
       CAST((SELECT COALESCE(JSON_ARRAYAGG(labels.label), '[]') FROM labels WHERE labels.issue_id = issues.id) AS JSON) AS labels
FROM issues LEFT JOIN leases ON leases.issue_id = issues.id
WHERE issues.id = sqlc.arg(id);

-- name: IssueReclaimSet :execrows
-- IssueReclaimSet is bd's reclaim of an expired lease
-- (issueops.ReclaimExpiredLeasesInTx): back to open with a NULL assignee,
-- started_at cleared, guarded by the row_lock read with the expired claim.
UPDATE issues
SET status = 'open', assignee = NULL, started_at = NULL, updated_at = sqlc.arg(now), row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status = 'in_progress';

-- name: IssueInProgressClaims :one
-- IssueInProgressClaims is IssueClaimState of every in_progress issue and
-- wisp (but the claim event's id), as one JSON array (idx_issues_status_updated_at): row_lock as a
-- string (a JSON number loses a 64-bit integer's last digits) and the
-- lease's times as RFC 3339 (they are UTC). A wisp has no lease: its
-- claimed_at is the time of its last claimed event in wisp_events.
SELECT CAST(COALESCE(JSON_ARRAYAGG(c.claim), '[]') AS JSON) AS claims FROM (
  SELECT JSON_OBJECT(
           'id', i.id, 'status', i.status, 'assignee', COALESCE(i.assignee, ''), 'row_lock', CAST(i.row_lock AS CHAR),
           'holder', l.holder,
           'lease_expires_at', DATE_FORMAT(l.lease_expires_at, '%Y-%m-%dT%H:%i:%sZ'),
           'heartbeat_at', DATE_FORMAT(l.heartbeat_at, '%Y-%m-%dT%H:%i:%sZ'),
           'granted_at', DATE_FORMAT(l.granted_at, '%Y-%m-%dT%H:%i:%sZ'),
           'claim_comment', (SELECT e.comment FROM events e WHERE e.issue_id = i.id AND e.event_type = 'claimed' AND e.actor = i.assignee
                             AND e.comment LIKE CONCAT(sqlc.arg(asked), i.row_lock) LIMIT 1)) AS claim
  FROM issues i LEFT JOIN leases l ON l.issue_id = i.id
  WHERE i.status = 'in_progress'
  UNION ALL
  SELECT JSON_OBJECT(
           'id', w.id, 'status', w.status, 'assignee', COALESCE(w.assignee, ''), 'row_lock', CAST(w.row_lock AS CHAR),
           'wisp', TRUE,
           'claimed_at', DATE_FORMAT((SELECT max(e.created_at) FROM wisp_events e WHERE e.issue_id = w.id AND e.event_type = 'claimed'),
                                     '%Y-%m-%dT%H:%i:%sZ')) AS claim
  FROM wisps w
  WHERE w.status = 'in_progress') c;

-- name: IssueCloseSet :execrows
-- IssueCloseSet is bd v1.3.0's close (issueops.closeIssueInTx): status
-- closed, closed_at and updated_at now, the reason, the session, a fresh
-- row_lock (a concurrent reclaim conflicts on it), guarded by the row_lock
-- the holder read.
UPDATE issues
SET status = 'closed', closed_at = sqlc.arg(closed_at), updated_at = sqlc.arg(now), close_reason = sqlc.arg(reason),
    closed_by_session = sqlc.arg(session), row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status <> 'closed';

-- name: IssueCloseRefusal :one
-- IssueCloseRefusal is what bd v1.3.0's close policy (issueops
-- enforceClosePolicyForTargetInTx) reads of an issue: its open children
-- (parent-child dependents, issues and wisps, not closed), and, when it is
-- is_blocked, its live direct blockers (blocks, waits-for and
-- conditional-blocks edges to an issue or wisp neither closed nor pinned),
-- comma-separated as bd names them ("" for none).
SELECT
    CAST((SELECT COUNT(DISTINCT c.issue_id) FROM dependencies c JOIN issues ch ON ch.id = c.issue_id
          WHERE c.depends_on_issue_id = i.id AND c.type = 'parent-child' AND ch.status <> 'closed')
       + (SELECT COUNT(DISTINCT c.issue_id) FROM wisp_dependencies c JOIN wisps ch ON ch.id = c.issue_id
          WHERE c.depends_on_issue_id = i.id AND c.type = 'parent-child' AND ch.status <> 'closed'
            AND NOT EXISTS (SELECT 1 FROM dependencies durable WHERE durable.id = c.id)) AS SIGNED) AS open_children,
    CONCAT(COALESCE((SELECT GROUP_CONCAT(CASE WHEN e.type = 'blocks' THEN e.target ELSE CONCAT(e.target, ' (', e.type, ')') END SEPARATOR ', ')
        FROM (SELECT COALESCE(d.depends_on_issue_id, d.depends_on_wisp_id, d.depends_on_external) AS target, d.type
              FROM dependencies d WHERE d.issue_id = i.id AND d.type IN ('blocks', 'waits-for', 'conditional-blocks')
              UNION ALL
              SELECT COALESCE(d.depends_on_issue_id, d.depends_on_wisp_id, d.depends_on_external) AS target, d.type
              FROM wisp_dependencies d WHERE d.issue_id = i.id AND d.type IN ('blocks', 'waits-for', 'conditional-blocks')) e
        WHERE i.is_blocked = 1
          AND (EXISTS (SELECT 1 FROM issues b WHERE b.id = e.target AND b.status <> 'closed' AND b.status <> 'pinned')
            OR EXISTS (SELECT 1 FROM wisps b WHERE b.id = e.target AND b.status <> 'closed' AND b.status <> 'pinned'))), '')) AS blockers
FROM issues i
WHERE i.id = sqlc.arg(id);

-- name: IssueCloseAffected :one
-- IssueCloseAffected lists, as a JSON array of {"id", "wisp"} (wisp 1 for a
-- row of the wisps table), the issues and wisps whose is_blocked a close of
-- issue id may change, as bd v1.3.0's AffectedByStatusChangeInTx and
-- expandByParentChildDescendantsInTx find them: the issue, its blocking
-- dependers (blocks and conditional-blocks edges to it), the waiters on it
-- (waits-for edges to it) and on its parents, and all their parent-child
-- descendants, in issues and wisps.
WITH RECURSIVE affected (issue_id, wisp) AS (
    SELECT CAST(sqlc.arg(id) AS CHAR) AS issue_id, 0 AS wisp
    UNION
    SELECT d.issue_id, 0 FROM dependencies d
    WHERE d.depends_on_issue_id = CAST(sqlc.arg(id) AS CHAR) AND d.type IN ('blocks', 'conditional-blocks', 'waits-for')
    UNION
    SELECT d.issue_id, 1 FROM wisp_dependencies d
    WHERE d.depends_on_issue_id = CAST(sqlc.arg(id) AS CHAR) AND d.type IN ('blocks', 'conditional-blocks', 'waits-for')
    UNION
    SELECT w.issue_id, 0 FROM dependencies p JOIN dependencies w
      ON w.type = 'waits-for' AND (w.depends_on_issue_id = p.depends_on_issue_id OR w.depends_on_wisp_id = p.depends_on_wisp_id)
    WHERE p.issue_id = CAST(sqlc.arg(id) AS CHAR) AND p.type = 'parent-child'
    UNION
    SELECT w.issue_id, 1 FROM dependencies p JOIN wisp_dependencies w
      ON w.type = 'waits-for' AND (w.depends_on_issue_id = p.depends_on_issue_id OR w.depends_on_wisp_id = p.depends_on_wisp_id)
    WHERE p.issue_id = CAST(sqlc.arg(id) AS CHAR) AND p.type = 'parent-child'
    UNION
    SELECT c.issue_id, c.wisp FROM (
        SELECT d.issue_id, 0 AS wisp, d.depends_on_issue_id, d.depends_on_wisp_id FROM dependencies d WHERE d.type = 'parent-child'
        UNION ALL
        SELECT d.issue_id, 1 AS wisp, d.depends_on_issue_id, d.depends_on_wisp_id FROM wisp_dependencies d WHERE d.type = 'parent-child'
    ) c JOIN affected a ON c.depends_on_issue_id = a.issue_id OR c.depends_on_wisp_id = a.issue_id
)
SELECT CAST(COALESCE(JSON_ARRAYAGG(JSON_OBJECT('id', a.issue_id, 'wisp', a.wisp)), '[]') AS JSON) AS affected FROM affected a;

-- name: IssueBlockedPass :execrows
-- IssueBlockedPass is one pass of bd v1.3.0's RecomputeIsBlockedInTx over
-- issue id (updated_at kept): with was 0 the mark pass, is_blocked 1 for
-- those an open blocker, a blocked parent or a waits-for gate blocks; with
-- was 1 the unmark pass, is_blocked 0 for those nothing blocks any more (or
-- closed, or pinned). bd writes the passes as two statements whose
-- conditions are each other's negation; here the one condition is
-- compared with was.
UPDATE issues i SET i.is_blocked = 1 - CAST(sqlc.arg(was) AS SIGNED), i.updated_at = i.updated_at
WHERE i.id = sqlc.arg(id)
  AND i.is_blocked = CAST(sqlc.arg(was) AS SIGNED)
  AND (i.status <> 'closed' AND i.status <> 'pinned' AND (
      EXISTS (
        SELECT 1 FROM dependencies d
        JOIN issues t ON t.id = d.depends_on_issue_id
        WHERE d.issue_id = i.id
          AND (d.type = 'blocks' OR d.type = 'conditional-blocks')
          AND t.status <> 'closed' AND t.status <> 'pinned'
      )
      OR EXISTS (
        SELECT 1 FROM dependencies d
        JOIN wisps t ON t.id = d.depends_on_wisp_id
        WHERE d.issue_id = i.id
          AND (d.type = 'blocks' OR d.type = 'conditional-blocks')
          AND t.status <> 'closed' AND t.status <> 'pinned'
      )
      OR EXISTS (
        SELECT 1 FROM dependencies d
        JOIN issues p ON p.id = d.depends_on_issue_id
        WHERE d.issue_id = i.id
          AND d.type = 'parent-child'
          AND p.is_blocked = 1
      )
      OR EXISTS (
        SELECT 1 FROM dependencies d
        JOIN wisps p ON p.id = d.depends_on_wisp_id
        WHERE d.issue_id = i.id
          AND d.type = 'parent-child'
          AND p.is_blocked = 1
      )
      OR EXISTS (
        SELECT 1 FROM dependencies d
        WHERE d.issue_id = i.id AND d.type = 'waits-for'
          AND (
            (
              (
                EXISTS (
                  SELECT 1 FROM dependencies cd JOIN issues child ON child.id = cd.issue_id
                  WHERE cd.type = 'parent-child'
                    AND ((d.depends_on_issue_id IS NOT NULL AND cd.depends_on_issue_id = d.depends_on_issue_id)
                      OR (d.depends_on_wisp_id IS NOT NULL AND cd.depends_on_wisp_id = d.depends_on_wisp_id))
                    AND child.status <> 'closed' AND child.status <> 'pinned'
                )
                OR EXISTS (
                  SELECT 1 FROM wisp_dependencies cd JOIN wisps child ON child.id = cd.issue_id
                  WHERE cd.type = 'parent-child'
                    AND ((d.depends_on_issue_id IS NOT NULL AND cd.depends_on_issue_id = d.depends_on_issue_id)
                      OR (d.depends_on_wisp_id IS NOT NULL AND cd.depends_on_wisp_id = d.depends_on_wisp_id))
                    AND child.status <> 'closed' AND child.status <> 'pinned'
                )
              )
              AND NOT (
                COALESCE(JSON_UNQUOTE(JSON_EXTRACT(d.metadata, '$.gate')), 'all-children') = 'any-children'
                AND (
                  EXISTS (
                    SELECT 1 FROM dependencies cd JOIN issues child ON child.id = cd.issue_id
                    WHERE cd.type = 'parent-child'
                      AND ((d.depends_on_issue_id IS NOT NULL AND cd.depends_on_issue_id = d.depends_on_issue_id)
                        OR (d.depends_on_wisp_id IS NOT NULL AND cd.depends_on_wisp_id = d.depends_on_wisp_id))
                      AND child.status = 'closed'
                  )
                  OR EXISTS (
                    SELECT 1 FROM wisp_dependencies cd JOIN wisps child ON child.id = cd.issue_id
                    WHERE cd.type = 'parent-child'
                      AND ((d.depends_on_issue_id IS NOT NULL AND cd.depends_on_issue_id = d.depends_on_issue_id)
                        OR (d.depends_on_wisp_id IS NOT NULL AND cd.depends_on_wisp_id = d.depends_on_wisp_id))
                      AND child.status = 'closed'
                  )
                )
              )
            )
            OR (
              COALESCE(JSON_UNQUOTE(JSON_EXTRACT(d.metadata, '$.also_blocks')), 'false') = 'true'
              AND (
                EXISTS (
                  SELECT 1 FROM issues sp
                  WHERE sp.id = d.depends_on_issue_id
                    AND sp.status <> 'closed' AND sp.status <> 'pinned'
                )
                OR EXISTS (
                  SELECT 1 FROM wisps sp
                  WHERE sp.id = d.depends_on_wisp_id
                    AND sp.status <> 'closed' AND sp.status <> 'pinned'
                )
              )
            )
          )
      )
  )) <> CAST(sqlc.arg(was) AS SIGNED);


-- name: IssueLookalikes :one
-- IssueLookalikes is what resolves a partial issue id as bd v1.3.0 does
-- (utils.ResolvePartialID): the workspace's issue prefix (config
-- issue_prefix, '' without one) and, as a JSON array, the ids of the issues
-- and wisps whose id contains part (at most 64 of each; the caller keeps
-- those whose hash starts with it).
SELECT CONCAT(COALESCE((SELECT c.value FROM config c WHERE c.`key` = 'issue_prefix'), '')) AS prefix,
       CAST(COALESCE((SELECT JSON_ARRAYAGG(x.id) FROM (
           (SELECT i.id FROM issues i WHERE LOCATE(sqlc.arg(part), i.id) > 0 ORDER BY i.id LIMIT 64)
           UNION ALL
           (SELECT w.id FROM wisps w WHERE LOCATE(sqlc.arg(part), w.id) > 0 ORDER BY w.id LIMIT 64)) x), '[]') AS JSON) AS ids;

-- name: IssueCounts :one
-- IssueCounts reads the counts bd v1.3.0's --json of a claim-next prints
-- for an issue or a wisp, each from the issues' tables and from the wisp
-- tables, for the mode's bd to add up as it does (claim/dolt/bdjson.go):
-- its blocks edges (dependency_count), the blocks edges to it
-- (dependent_count) and its comments.
SELECT CAST((SELECT count(*) FROM dependencies d WHERE d.issue_id = sqlc.arg(id) AND d.type = 'blocks') AS SIGNED) AS blockers,
       CAST((SELECT count(*) FROM wisp_dependencies d WHERE d.issue_id = sqlc.arg(id) AND d.type = 'blocks') AS SIGNED) AS wisp_blockers,
       CAST((SELECT count(*) FROM dependencies d
             WHERE COALESCE(d.depends_on_issue_id, d.depends_on_wisp_id, d.depends_on_external) = CAST(sqlc.arg(id) AS CHAR) AND d.type = 'blocks') AS SIGNED) AS dependents,
       CAST((SELECT count(*) FROM wisp_dependencies d
             WHERE COALESCE(d.depends_on_issue_id, d.depends_on_wisp_id, d.depends_on_external) = CAST(sqlc.arg(id) AS CHAR) AND d.type = 'blocks') AS SIGNED) AS wisp_dependents,
       CAST((SELECT count(*) FROM comments c WHERE c.issue_id = sqlc.arg(id)) AS SIGNED) AS comments,
       CAST((SELECT count(*) FROM wisp_comments c WHERE c.issue_id = sqlc.arg(id)) AS SIGNED) AS wisp_comments;
