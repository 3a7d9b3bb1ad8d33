-- name: BlockedCacheClear :exec
-- BlockedCacheClear empties blocked_issues_cache: the first of the three
-- statements of bd's rebuildBlockedCache (bd v0.41 to v0.50,
-- internal/storage/sqlite/blocked_cache.go) as bd-claim runs it after a
-- close. bd's own is DELETE, then INSERT INTO blocked_issues_cache WITH
-- RECURSIVE ... SELECT; sqlc cannot resolve a recursive CTE under an
-- INSERT, so bd-claim reads bd's SELECT (BlockedCacheBlocked, as a JSON
-- array) and writes its rows (BlockedCacheFill): the same rows, in the same
-- transaction.
DELETE FROM blocked_issues_cache;

-- name: BlockedCacheBlocked :one
-- BlockedCacheBlocked is the SELECT of bd's rebuildBlockedCache, as bd
-- writes it, as a JSON array: the issues blocked by an open 'blocks' blocker, by a
-- 'conditional-blocks' blocker not closed with a failure, by a
-- 'waits-for' gate, and their parent-child descendants to depth 50.
WITH RECURSIVE
  blocked_directly AS (
    SELECT DISTINCT d.issue_id
    FROM dependencies d
    JOIN issues blocker ON d.depends_on_id = blocker.id
    WHERE d.type = 'blocks'
      AND blocker.status IN ('open', 'in_progress', 'blocked', 'deferred', 'hooked')
    UNION
    SELECT DISTINCT d.issue_id
    FROM dependencies d
    JOIN issues blocker ON d.depends_on_id = blocker.id
    WHERE d.type = 'conditional-blocks'
      AND (
        blocker.status IN ('open', 'in_progress', 'blocked', 'deferred')
        OR
        (blocker.status = 'closed' AND NOT (
          LOWER(COALESCE(blocker.close_reason, '')) LIKE '%failed%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%rejected%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%wontfix%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%won''t fix%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%cancelled%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%canceled%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%abandoned%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%blocked%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%error%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%timeout%'
          OR LOWER(COALESCE(blocker.close_reason, '')) LIKE '%aborted%'
        ))
      )
    UNION
    SELECT DISTINCT d.issue_id
    FROM dependencies d
    WHERE d.type = 'waits-for'
      AND (
        COALESCE(json_extract(d.metadata, '$.gate'), 'all-children') = 'all-children'
        AND EXISTS (
          SELECT 1 FROM dependencies child_dep
          JOIN issues child ON child_dep.issue_id = child.id
          WHERE child_dep.type = 'parent-child'
            AND child_dep.depends_on_id = COALESCE(json_extract(d.metadata, '$.spawner_id'), d.depends_on_id)
            AND child.status NOT IN ('closed', 'tombstone')
        )
        OR
        COALESCE(json_extract(d.metadata, '$.gate'), 'all-children') = 'any-children'
        AND NOT EXISTS (
          SELECT 1 FROM dependencies child_dep
          JOIN issues child ON child_dep.issue_id = child.id
          WHERE child_dep.type = 'parent-child'
            AND child_dep.depends_on_id = COALESCE(json_extract(d.metadata, '$.spawner_id'), d.depends_on_id)
            AND child.status IN ('closed', 'tombstone')
        )
      )
  ),
  blocked_transitively AS (
    SELECT issue_id, 0 as depth
    FROM blocked_directly
    UNION ALL
    SELECT d.issue_id, bt.depth + 1
    FROM blocked_transitively bt
    JOIN dependencies d ON d.depends_on_id = bt.issue_id
    WHERE d.type = 'parent-child'
      AND bt.depth < 50
  )
SELECT CAST(json_group_array(issue_id) AS TEXT) AS ids
FROM (SELECT DISTINCT issue_id FROM blocked_transitively);

-- name: BlockedCacheFill :exec
-- BlockedCacheFill writes the ids of BlockedCacheBlocked (a JSON array)
-- into the emptied blocked_issues_cache.
INSERT INTO blocked_issues_cache (issue_id)
SELECT value FROM json_each(CAST(@ids AS TEXT));
