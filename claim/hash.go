package claim

// placeholder until the per-version recipe is confirmed
func (feat Features) readColumns() []string {
	cols := []string{"id", "content_hash", "title", "description", "design", "acceptance_criteria", "notes",
		"status", "priority", "issue_type", "assignee", "created_at", "updated_at", "external_ref"}
	return cols
}

func (feat Features) contentHash(r *row) string { return "" }

func (feat Features) eventOldValue(r *row) string { return "{}" }

func (feat Features) claimEventType() string {
	if feat.Version.AtLeast(0, 49, 4) {
		return "claimed"
	}
	return "status_changed"
}
