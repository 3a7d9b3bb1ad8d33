-- name: DependencyRecords :many
-- DependencyRecords reads an issue's dependency records as bd v1.3.0's
-- proxied unit of work does for the --json of a claim-next
-- (DependencySQLRepository.ListByIssueIDs), in its order, which leaves the
-- order of one issue's records to the server's plan; server and embedded
-- mode order them by target (issueops.GetDependencyRecordsForIssuesInTx,
-- claim/dolt/bdjson.go).
SELECT issue_id, COALESCE(depends_on_issue_id, depends_on_wisp_id, depends_on_external) AS depends_on_id, type, created_at, created_by, metadata, thread_id FROM dependencies WHERE issue_id IN (sqlc.arg(id)) ORDER BY issue_id;
