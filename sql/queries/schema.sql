-- name: SchemaColumns :one
-- SchemaColumns lists the columns of bd's tables as table.column, comma
-- separated, in one round trip (a missing table lists nothing).
WITH bd_tables(name) AS (
    VALUES ('issues'), ('labels'), ('dependencies'), ('blocked_issues_cache'),
           ('events'), ('comments'), ('dirty_issues'), ('metadata'), ('config')
)
SELECT CAST(COALESCE(group_concat(t.name || '.' || p.name, ','), '') AS TEXT) AS columns
FROM bd_tables AS t
JOIN pragma_table_info(t.name) AS p;

-- name: SchemaSettings :one
-- SchemaSettings reads what decides bd's behaviour besides the columns: the
-- bd version that last wrote the database and bd ready's id exclusions
-- ('' when unset); and whether bd's index on issues.created_at is there,
-- which a claim walks in age order (bd has made it since v0.27).
SELECT
    CAST(COALESCE((SELECT value FROM metadata WHERE key = 'bd_version'), '') AS TEXT) AS bd_version,
    CAST(COALESCE((SELECT value FROM config WHERE key = 'ready.exclude_id_patterns'), '') AS TEXT) AS exclude_id_patterns,
    CAST(EXISTS (SELECT 1 FROM pragma_index_list('issues') WHERE name = 'idx_issues_created_at') AS INTEGER) AS created_at_index;

-- name: CustomTypes :one
-- CustomTypes is config types.custom, the workspace's own issue types as
-- bd writes them (a comma-separated list or a JSON array; '' when unset).
SELECT CAST(COALESCE((SELECT value FROM config WHERE key = 'types.custom'), '') AS TEXT) AS custom_types;
