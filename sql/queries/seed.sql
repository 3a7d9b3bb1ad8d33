-- Queries that build workspaces: the embedded demo, tests and benchmarks.
-- bd-claim never runs them on a user's database.

-- name: SeedIssueInsert :exec
-- SeedIssueInsert adds one issue with the columns every bd version has.
INSERT INTO issues (id, content_hash, title, description, status, priority, issue_type, assignee,
                    created_at, updated_at, closed_at)
VALUES (@id, @content_hash, @title, @description, @status, @priority, @issue_type, @assignee,
        @created_at, @updated_at, @closed_at);

-- name: SeedLabelInsert :exec
-- SeedLabelInsert labels an issue.
INSERT INTO labels (issue_id, label) VALUES (@issue_id, @label);

-- name: SeedDependencyInsert :exec
-- SeedDependencyInsert adds an edge: issue_id depends on depends_on_id.
INSERT INTO dependencies (issue_id, depends_on_id, type, created_at, created_by)
VALUES (@issue_id, @depends_on_id, @type, @created_at, @created_by);

-- name: SeedMetadataSet :exec
-- SeedMetadataSet writes one key of bd's metadata table.
INSERT INTO metadata (key, value) VALUES (@key, @value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: SeedConfigSet :exec
-- SeedConfigSet writes one key of bd's config table.
INSERT INTO config (key, value) VALUES (@key, @value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: SeedBlockedInsert :exec
-- SeedBlockedInsert records an issue in blocked_issues_cache; the seeder
-- computes the blocked set as bd would for the edges it made.
INSERT INTO blocked_issues_cache (issue_id) VALUES (@issue_id);
