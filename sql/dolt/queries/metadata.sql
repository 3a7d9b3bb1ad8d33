-- name: MetadataProjectID :one
-- MetadataProjectID is the database's project id, which bd compares with
-- metadata.json's project_id before it touches anything.
SELECT `value` FROM metadata WHERE `key` = '_project_id';

-- name: SchemaMigrationsMax :one
-- SchemaMigrationsMax is the newest main-series migration applied (66 for
-- bd v1.3.0).
SELECT CAST(COALESCE(MAX(version), 0) AS SIGNED) AS version FROM schema_migrations;
