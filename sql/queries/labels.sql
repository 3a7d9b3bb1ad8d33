-- name: LabelAdd :execrows
-- LabelAdd adds a label as bd's AddLabel does (a no-op when present).
INSERT OR IGNORE INTO labels (issue_id, label)
VALUES (@issue_id, @label);

-- name: LabelRemove :execrows
-- LabelRemove removes a label as bd's RemoveLabel does.
DELETE FROM labels
WHERE issue_id = @issue_id AND label = @label;
