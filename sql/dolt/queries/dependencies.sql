-- name: DependencyRecords :one
-- DependencyRecords reads an issue's dependency records as bd v1.3.0's
-- proxied unit of work does for the --json of a claim-next
-- (DependencySQLRepository.ListByIssueIDs: its statement is the derived
-- table d, word for word), in its order, which leaves the order of one
-- issue's records to the server's plan; server and embedded mode order
-- them by target (issueops.GetDependencyRecordsForIssuesInTx,
-- claim/dolt/bdjson.go). One JSON array, each record with bd's JSON keys:
-- created_at as RFC 3339 (a DATETIME, UTC, whole seconds), metadata as the
-- JSON value, which the engine prints as the link hands bd the column
-- (doltStyle.spacedJSON).
SELECT CAST(COALESCE(JSON_ARRAYAGG(JSON_OBJECT(
         'issue_id', d.issue_id, 'depends_on_id', d.depends_on_id, 'type', d.type,
         'created_at', DATE_FORMAT(d.created_at, '%Y-%m-%dT%H:%i:%sZ'), 'created_by', d.created_by,
         'metadata', d.metadata, 'thread_id', d.thread_id)), '[]') AS JSON) AS records
FROM (SELECT issue_id, COALESCE(depends_on_issue_id, depends_on_wisp_id, depends_on_external) AS depends_on_id, type, created_at, created_by, metadata, thread_id FROM dependencies WHERE issue_id IN (sqlc.arg(id)) ORDER BY issue_id) d;
