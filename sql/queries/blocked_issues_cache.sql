-- name: BlockedCacheClear :exec
-- BlockedCacheClear empties blocked_issues_cache before bd's rebuild
-- (claim/sqlite.go, blockedCacheRebuild) fills it again, as bd's
-- rebuildBlockedCache does after a close.
DELETE FROM blocked_issues_cache;
