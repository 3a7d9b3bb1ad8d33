-- name: StatsCounts :one
-- StatsCounts counts the open issues and those of them that are blocked.
SELECT
    CAST(count(*) AS INTEGER) AS open,
    CAST(COALESCE(sum(CASE WHEN EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id) THEN 1 ELSE 0 END), 0) AS INTEGER) AS blocked
FROM issues i
WHERE i.status = 'open';

-- name: StatsAttempts :one
-- StatsAttempts lists the open issues that have failed attempts since
-- their last reset or carry the abandoned label, with the count and the
-- time of the latest failure (index lookups per open issue), as one JSON
-- array of objects ordered by id.
SELECT CAST(COALESCE(json_group_array(json_object(
    'id', id, 'failures', failures, 'last_failure_at', last_failure_at, 'labelled', labelled)), '[]') AS TEXT) AS attempts
FROM (
    SELECT i.id,
        (SELECT count(*) FROM events f
            WHERE f.issue_id = i.id AND f.event_type = 'status_changed' AND f.comment LIKE 'bd-claim failed:%'
              AND f.id > COALESCE((SELECT max(r.id) FROM events r
                  WHERE r.issue_id = i.id AND r.event_type = 'commented' AND r.comment LIKE 'bd-claim reset:%'), 0)) AS failures,
        COALESCE((SELECT max(CAST(f.created_at AS TEXT)) FROM events f
            WHERE f.issue_id = i.id AND f.event_type = 'status_changed' AND f.comment LIKE 'bd-claim failed:%'), '') AS last_failure_at,
        EXISTS (SELECT 1 FROM labels l WHERE l.issue_id = i.id AND l.label = @label) AS labelled
    FROM issues i
    WHERE i.status = 'open'
    ORDER BY i.id
)
WHERE failures > 0 OR labelled;
