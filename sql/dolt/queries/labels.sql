-- name: LabelAdd :execrows
-- LabelAdd adds a label as bd's AddLabelInTx does (INSERT IGNORE): 0 rows
-- when the issue has it already.
INSERT IGNORE INTO labels (issue_id, label) VALUES (sqlc.arg(issue_id), sqlc.arg(label));

-- name: LabelRemove :execrows
-- LabelRemove removes a label as bd's RemoveLabelInTx does.
DELETE FROM labels WHERE issue_id = sqlc.arg(issue_id) AND label = sqlc.arg(label);
