-- name: SchemaColumns :one
-- SchemaColumns lists the columns a table really has, comma separated
-- (empty when the table does not exist).
SELECT CAST(COALESCE(group_concat(name, ','), '') AS TEXT) AS columns
FROM pragma_table_info(@table_name);

-- name: MetadataGet :one
-- MetadataGet reads one key of bd's metadata table (e.g. bd_version).
SELECT value FROM metadata WHERE key = @key;

-- name: ConfigGet :one
-- ConfigGet reads one key of bd's config table.
SELECT value FROM config WHERE key = @key;
