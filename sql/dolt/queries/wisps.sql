-- name: WispClaimState :one
-- WispClaimState reads what decides who holds a wisp (a row of bd's wisps
-- table, where `bd create --no-history` puts an issue): its status,
-- assignee and row_lock. bd never leases a wisp.
SELECT w.id, w.status, COALESCE(w.assignee, '') AS assignee, w.row_lock
FROM wisps w
WHERE w.id = sqlc.arg(id);

-- name: WispRowLock :one
-- WispRowLock is IssueRowLock for a wisp.
SELECT row_lock FROM wisps WHERE id = sqlc.arg(id);

-- name: WispSnapshot :one
-- WispSnapshot is IssueSnapshot for a wisp: bd's GetIssueInTx reads the
-- wisps table (with the leases overlay, which a wisp never has) and
-- wisp_labels when the id is not in issues.
SELECT wisps.id, wisps.title, wisps.description, wisps.design, wisps.acceptance_criteria, wisps.notes,
       wisps.status, wisps.priority, wisps.issue_type, wisps.assignee, wisps.estimated_minutes,
       wisps.created_at, wisps.created_by, wisps.owner, wisps.updated_at, wisps.started_at, wisps.closed_at,
       wisps.external_ref, wisps.spec_id,
       wisps.compaction_level, wisps.compacted_at, wisps.compacted_at_commit, wisps.original_size,
       wisps.close_reason, wisps.closed_by_session, wisps.sender,
       COALESCE(wisps.ephemeral, 0) <> 0 AS ephemeral, COALESCE(wisps.no_history, 0) <> 0 AS no_history,
       wisps.wisp_type,
       COALESCE(wisps.pinned, 0) <> 0 AS pinned, COALESCE(wisps.is_template, 0) <> 0 AS is_template,
       wisps.await_type, wisps.await_id, wisps.timeout_ns, wisps.waiters,
       wisps.mol_type, wisps.event_kind, wisps.actor, wisps.target, wisps.payload,
       wisps.due_at, wisps.defer_until, wisps.work_type, wisps.source_system,
       COALESCE(wisps.metadata, JSON_OBJECT()) AS metadata,
       wisps.row_lock, wisps.storage_class, wisps.content_hash,
       leases.lease_expires_at, leases.heartbeat_at, leases.granted_node,
       CAST((SELECT COALESCE(JSON_ARRAYAGG(wisp_labels.label), '[]') FROM wisp_labels WHERE wisp_labels.issue_id = wisps.id) AS JSON) AS labels
FROM wisps LEFT JOIN leases ON leases.issue_id = wisps.id
WHERE wisps.id = sqlc.arg(id);

-- name: WispClaimSet :execrows
-- WispClaimSet is IssueClaimSet on the wisps table: bd's ClaimIssueInTx
-- routes a wisp's claim there, with the same compare-and-swap.
UPDATE wisps
SET assignee = sqlc.arg(assignee),
    status = 'in_progress',
    updated_at = sqlc.arg(now),
    started_at = COALESCE(started_at, sqlc.arg(started_at)),
    row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status = sqlc.arg(from_status);

-- name: WispUnclaimSet :execrows
-- WispUnclaimSet is IssueUnclaimSet on the wisps table (bd's
-- UnclaimIssueInTx routes a wisp there).
UPDATE wisps
SET assignee = '', status = 'open', started_at = NULL, updated_at = sqlc.arg(now), row_lock = sqlc.arg(new_row_lock)
WHERE id = sqlc.arg(id) AND row_lock = sqlc.arg(row_lock) AND status IN ('open', 'in_progress');

-- name: WispEventInsert :exec
-- WispEventInsert is EventInsert into wisp_events, where bd records a
-- wisp's events.
INSERT INTO wisp_events (id, issue_id, event_type, actor, old_value, new_value, comment, created_at)
VALUES (sqlc.arg(id), sqlc.arg(issue_id), sqlc.arg(event_type), sqlc.arg(actor), sqlc.arg(old_value), sqlc.arg(new_value), sqlc.arg(comment), sqlc.arg(created_at));

-- name: WispEventIDsSameContent :one
-- WispEventIDsSameContent is EventIDsSameContent in wisp_events.
SELECT CAST(COALESCE(JSON_ARRAYAGG(id), '[]') AS JSON) AS ids FROM wisp_events
WHERE issue_id = sqlc.arg(issue_id) AND event_type = sqlc.arg(event_type) AND actor = sqlc.arg(actor)
  AND old_value <=> sqlc.arg(old_value) AND new_value <=> sqlc.arg(new_value) AND comment <=> sqlc.arg(comment)
  AND created_at = sqlc.arg(created_at);

-- name: WispBlockedPass :execrows
-- WispBlockedPass is IssueBlockedPass for wisp id.
UPDATE wisps w SET w.is_blocked = 1 - CAST(sqlc.arg(was) AS SIGNED), w.updated_at = w.updated_at
WHERE w.id = sqlc.arg(id)
  AND w.is_blocked = CAST(sqlc.arg(was) AS SIGNED)
  AND (w.status <> 'closed' AND w.status <> 'pinned' AND (
      EXISTS (
        SELECT 1 FROM wisp_dependencies d
        JOIN issues t ON t.id = d.depends_on_issue_id
        WHERE d.issue_id = w.id
          AND (d.type = 'blocks' OR d.type = 'conditional-blocks')
          AND t.status <> 'closed' AND t.status <> 'pinned'
      )
      OR EXISTS (
        SELECT 1 FROM wisp_dependencies d
        JOIN wisps t ON t.id = d.depends_on_wisp_id
        WHERE d.issue_id = w.id
          AND (d.type = 'blocks' OR d.type = 'conditional-blocks')
          AND t.status <> 'closed' AND t.status <> 'pinned'
      )
      OR EXISTS (
        SELECT 1 FROM wisp_dependencies d
        JOIN issues p ON p.id = d.depends_on_issue_id
        WHERE d.issue_id = w.id
          AND d.type = 'parent-child'
          AND p.is_blocked = 1
      )
      OR EXISTS (
        SELECT 1 FROM wisp_dependencies d
        JOIN wisps p ON p.id = d.depends_on_wisp_id
        WHERE d.issue_id = w.id
          AND d.type = 'parent-child'
          AND p.is_blocked = 1
      )
      OR EXISTS (
        SELECT 1 FROM wisp_dependencies d
        WHERE d.issue_id = w.id AND d.type = 'waits-for'
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


-- name: WispDependencyRecords :one
-- WispDependencyRecords is DependencyRecords for a wisp, whose records bd
-- keeps in wisp_dependencies.
SELECT CAST(COALESCE(JSON_ARRAYAGG(JSON_OBJECT(
         'issue_id', d.issue_id, 'depends_on_id', d.depends_on_id, 'type', d.type,
         'created_at', DATE_FORMAT(d.created_at, '%Y-%m-%dT%H:%i:%sZ'), 'created_by', d.created_by,
         'metadata', d.metadata, 'thread_id', d.thread_id)), '[]') AS JSON) AS records
FROM (SELECT issue_id, COALESCE(depends_on_issue_id, depends_on_wisp_id, depends_on_external) AS depends_on_id, type, created_at, created_by, metadata, thread_id FROM wisp_dependencies WHERE issue_id IN (sqlc.arg(id)) ORDER BY issue_id) d;
