-- name: LabelAdd :execrows
-- LabelAdd adds a label as bd's AddLabel does (a no-op when present).
INSERT OR IGNORE INTO labels (issue_id, label)
VALUES (@issue_id, @label);

-- name: LabelRemove :execrows
-- LabelRemove removes a label as bd's RemoveLabel does.
DELETE FROM labels
WHERE issue_id = @issue_id AND label = @label;

-- name: ShippedLabels :one
-- ShippedLabels are the provides: labels of the closed issues of a
-- workspace, what another project's external dependencies on it read
-- (bd v0.34-v0.49's checkProjectCapabilities), as a JSON array (one row:
-- no rows to iterate; LIKE is bd-claim's, which keeps the exact provides:
-- prefix in Go, as bd compares exact labels).
SELECT CAST(json_group_array(l.label) AS TEXT) AS labels FROM labels l JOIN issues i ON l.issue_id = i.id
WHERE i.status = 'closed' AND l.label LIKE 'provides:%';
