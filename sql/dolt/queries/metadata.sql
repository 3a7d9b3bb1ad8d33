-- name: DatabaseIdentity :one
-- DatabaseIdentity is what bd compares before it touches anything, in one
-- statement: the newest main-series migration applied (66 for bd v1.3.0),
-- and the database's project id, which must be the one metadata.json
-- names (empty when none is recorded; CONCAT: sqlc then types it as text).
SELECT CAST(COALESCE((SELECT MAX(version) FROM schema_migrations), 0) AS SIGNED) AS version,
       CONCAT(COALESCE((SELECT `value` FROM metadata WHERE `key` = '_project_id'), '')) AS project_id;

-- name: CoordinationTouch :exec
-- CoordinationTouch rewrites a dependency coordination cell of bd v1.3.0
-- (issueops.TouchDependencyCoordinationTableInTx): a close writes both
-- tiers' cells of its issue's shard, so that a concurrent new parent-child
-- edge conflicts with it (local_metadata is dolt_ignored).
REPLACE INTO local_metadata (`key`, `value`) VALUES (sqlc.arg(cell), sqlc.arg(stamp));

-- name: CustomTypes :one
-- CustomTypes are the workspace's own issue types as bd v1.3.0 reads them
-- (GetCustomTypes): the custom_types table, comma separated, and config
-- types.custom (a comma-separated list or a JSON array); '' when unset
-- (CONCAT: sqlc then types it as text).
SELECT CONCAT(COALESCE((SELECT GROUP_CONCAT(name ORDER BY name SEPARATOR ',') FROM custom_types), '')) AS table_types,
  CONCAT(COALESCE((SELECT `value` FROM config WHERE `key` = 'types.custom'), '')) AS config_types;

-- name: ClaimEligibility :one
-- ClaimEligibility is what bd v1.3.0's claim by id reads of the workspace's
-- configuration (ClaimableSourceStatusesInTx, ClaimPoolAliasesInTx): the
-- custom_statuses table as a JSON array of [name, category], config
-- status.custom (read when the table is empty) and config claim.pools; ''
-- for a key that is unset (CONCAT: sqlc then types it as text).
SELECT CAST((SELECT COALESCE(JSON_ARRAYAGG(JSON_ARRAY(name, category)), '[]') FROM custom_statuses) AS JSON) AS table_statuses,
  CONCAT(COALESCE((SELECT `value` FROM config WHERE `key` = 'status.custom'), '')) AS config_statuses,
  CONCAT(COALESCE((SELECT `value` FROM config WHERE `key` = 'claim.pools'), '')) AS pools;
