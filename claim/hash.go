package claim

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// What bd writes for a claim depends on the bd version that last wrote the
// workspace. Two things are reproduced here from bd's source and checked
// against real bd-made workspaces (testdata/fixtures) and the real bd:
//
//   - content_hash: SHA-256 over the fields of bd's ComputeContentHash as bd
//     loads them from SQLite (GetIssue), each followed by a NUL byte;
//   - events.old_value: json.Marshal of the issue as GetIssue loads it.
//
// bd up to v0.30.6 hashes nine fields and a raw external_ref (legacy). Later
// versions hash the long list below; spec_id and metadata are hashed where
// the column exists (v0.49.x has them, v0.47.1 does not). Versions between
// the verified ones (v0.27.2, v0.47.1, v0.49.6) follow the same rules by
// their columns. The flavor (flavor.go) picks the tables for a workspace.

type hashEnc int

const (
	hashStr    hashEnc = iota // the text (NULL as ""), then NUL
	hashEmpty                 // a field bd never loads from SQLite: just NUL
	hashFlag                  // the label when the integer is non-zero, then NUL
	hashInt                   // decimal, NULL as 0, then NUL
	hashList                  // each element of a JSON string array, each then NUL
	hashMeta                  // metadata: "" for '' and '{}', else the text; then NUL
	hashRawRef                // legacy external_ref: the text without NUL, only when not NULL
)

type hashField struct {
	col      string
	enc      hashEnc
	label    string // for hashFlag
	optional bool   // hashed only where the column exists
}

var legacyHash = []hashField{
	{col: "title"}, {col: "description"}, {col: "design"}, {col: "acceptance_criteria"}, {col: "notes"},
	{col: "status"}, {col: "priority"}, {col: "issue_type"}, {col: "assignee"}, {col: "external_ref", enc: hashRawRef},
}

var modernHash = []hashField{
	{col: "title"}, {col: "description"}, {col: "design"}, {col: "acceptance_criteria"}, {col: "notes"},
	{col: "spec_id", optional: true}, {col: "status"}, {col: "priority"}, {col: "issue_type"}, {col: "assignee"},
	{col: "owner"}, {col: "created_by"}, {col: "external_ref"}, {col: "source_system", enc: hashEmpty},
	{col: "pinned", enc: hashFlag, label: "pinned"}, {col: "metadata", enc: hashMeta, optional: true},
	{col: "is_template", enc: hashFlag, label: "template"}, {col: "quality_score", enc: hashEmpty},
	{col: "crystallizes", enc: hashFlag, label: "crystallizes"}, {col: "await_type"}, {col: "await_id"},
	{col: "timeout_ns", enc: hashInt}, {col: "waiters", enc: hashList}, {col: "holder", enc: hashEmpty},
	{col: "hook_bead"}, {col: "role_bead"}, {col: "agent_state"}, {col: "role_type"}, {col: "rig"}, {col: "mol_type"},
	{col: "work_type", enc: hashEmpty}, {col: "event_kind"}, {col: "actor"}, {col: "target"}, {col: "payload"},
}

// contentHash computes bd's content_hash of r.
func (fl flavor) contentHash(r *row) string {
	h := sha256.New()
	for _, f := range fl.hash {
		v := r.cols[f.col]
		if f.optional && !fl.columns[f.col] {
			continue
		}
		switch f.enc {
		case hashRawRef:
			if v.Valid {
				h.Write([]byte(v.String))
			}
			continue
		case hashEmpty:
		case hashFlag:
			if v.Valid && v.String != "0" {
				h.Write([]byte(f.label))
			}
		case hashInt:
			n, _ := strconv.ParseInt(v.String, 10, 64)
			h.Write([]byte(strconv.FormatInt(n, 10)))
		case hashList:
			for _, w := range stringList(v.String) {
				h.Write([]byte(w))
				h.Write([]byte{0})
			}
			continue
		case hashMeta:
			if v.String != "{}" {
				h.Write([]byte(v.String))
			}
		default:
			h.Write([]byte(v.String))
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// stringList reads a JSON array of strings; anything else is empty, as in bd.
func stringList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

type jsonKind int

const (
	jsonStr       jsonKind = iota // string, omitted when empty
	jsonStrAlways                 // string, always present
	jsonRef                       // *string: present whenever the column is not NULL
	jsonInt                       // int, always present
	jsonIntOmit                   // int, omitted when 0
	jsonIntPtr                    // *int: present whenever the column is not NULL
	jsonTime                      // time.Time, always present
	jsonTimePtr                   // *time.Time: present whenever the column is not NULL
	jsonBool                      // bool, present only when true
	jsonRaw                       // metadata: raw JSON unless '' or '{}'
	jsonList                      // []string from a JSON column, omitted when empty
	jsonLabels                    // the labels, omitted when none
)

type jsonField struct {
	key, col string
	kind     jsonKind
}

// legacyJSON is bd v0.27's types.Issue as GetIssue fills it.
var legacyJSON = []jsonField{
	{"id", "id", jsonStrAlways}, {"title", "title", jsonStrAlways}, {"description", "description", jsonStrAlways},
	{"design", "design", jsonStr}, {"acceptance_criteria", "acceptance_criteria", jsonStr}, {"notes", "notes", jsonStr},
	{"status", "status", jsonStrAlways}, {"priority", "priority", jsonInt}, {"issue_type", "issue_type", jsonStrAlways},
	{"assignee", "assignee", jsonStr}, {"estimated_minutes", "estimated_minutes", jsonIntPtr},
	{"created_at", "created_at", jsonTime}, {"updated_at", "updated_at", jsonTime}, {"closed_at", "closed_at", jsonTimePtr},
	{"close_reason", "close_reason", jsonStr}, {"external_ref", "external_ref", jsonRef},
	{"compaction_level", "compaction_level", jsonIntOmit}, {"compacted_at", "compacted_at", jsonTimePtr},
	{"compacted_at_commit", "compacted_at_commit", jsonRef}, {"original_size", "original_size", jsonIntOmit},
	{"labels", "", jsonLabels},
}

// modernJSON is types.Issue of bd v0.47-v0.49 as GetIssue fills it; fields
// whose column a workspace lacks are left out.
var modernJSON = []jsonField{
	{"id", "id", jsonStrAlways}, {"title", "title", jsonStrAlways}, {"description", "description", jsonStr},
	{"design", "design", jsonStr}, {"acceptance_criteria", "acceptance_criteria", jsonStr}, {"notes", "notes", jsonStr},
	{"spec_id", "spec_id", jsonStr}, {"status", "status", jsonStr}, {"priority", "priority", jsonInt},
	{"issue_type", "issue_type", jsonStr}, {"assignee", "assignee", jsonStr}, {"owner", "owner", jsonStr},
	{"estimated_minutes", "estimated_minutes", jsonIntPtr}, {"created_at", "created_at", jsonTime},
	{"created_by", "created_by", jsonStr}, {"updated_at", "updated_at", jsonTime}, {"closed_at", "closed_at", jsonTimePtr},
	{"close_reason", "close_reason", jsonStr}, {"due_at", "due_at", jsonTimePtr}, {"defer_until", "defer_until", jsonTimePtr},
	{"external_ref", "external_ref", jsonRef}, {"metadata", "metadata", jsonRaw},
	{"compaction_level", "compaction_level", jsonIntOmit}, {"compacted_at", "compacted_at", jsonTimePtr},
	{"compacted_at_commit", "compacted_at_commit", jsonRef}, {"original_size", "original_size", jsonIntOmit},
	{"labels", "", jsonLabels}, {"deleted_at", "deleted_at", jsonTimePtr}, {"deleted_by", "deleted_by", jsonStr},
	{"delete_reason", "delete_reason", jsonStr}, {"original_type", "original_type", jsonStr}, {"sender", "sender", jsonStr},
	{"ephemeral", "ephemeral", jsonBool}, {"wisp_type", "wisp_type", jsonStr}, {"pinned", "pinned", jsonBool},
	{"is_template", "is_template", jsonBool}, {"crystallizes", "crystallizes", jsonBool},
	{"await_type", "await_type", jsonStr}, {"await_id", "await_id", jsonStr}, {"timeout", "timeout_ns", jsonIntOmit},
	{"waiters", "waiters", jsonList}, {"hook_bead", "hook_bead", jsonStr}, {"role_bead", "role_bead", jsonStr},
	{"agent_state", "agent_state", jsonStr}, {"last_activity", "last_activity", jsonTimePtr},
	{"role_type", "role_type", jsonStr}, {"rig", "rig", jsonStr}, {"mol_type", "mol_type", jsonStr},
	{"event_kind", "event_kind", jsonStr}, {"actor", "actor", jsonStr}, {"target", "target", jsonStr},
	{"payload", "payload", jsonStr},
}

// eventOldValue is the old_value bd writes in a claim's event: the issue as
// bd's json.Marshal prints it. Like bd, it falls back to {"id":...} when the
// issue cannot be marshalled (invalid metadata JSON).
func (fl flavor) eventOldValue(r *row) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, f := range fl.payload {
		v, has := r.cols[f.col]
		if f.kind == jsonLabels {
			has, v.Valid = len(r.Labels) > 0, true
		}
		val, ok := jsonValue(f.kind, v, r.Labels)
		if !has || !ok {
			continue
		}
		if val == nil {
			idOnly, _ := json.Marshal(map[string]string{"id": r.ID})
			return string(idOnly)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.String()
}

// jsonValue encodes one field; ok is false when bd would omit it, and a nil
// value with ok means the whole issue cannot be marshalled.
func jsonValue(kind jsonKind, v sql.NullString, labels []string) (val []byte, ok bool) {
	var x any
	switch kind {
	case jsonStr:
		if v.String == "" {
			return nil, false
		}
		x = v.String
	case jsonStrAlways:
		x = v.String
	case jsonRef, jsonIntPtr, jsonTimePtr:
		if !v.Valid {
			return nil, false
		}
		return jsonValue(map[jsonKind]jsonKind{jsonRef: jsonStrAlways, jsonIntPtr: jsonInt, jsonTimePtr: jsonTime}[kind], v, labels)
	case jsonInt, jsonIntOmit:
		n, _ := strconv.ParseInt(v.String, 10, 64)
		if n == 0 && kind == jsonIntOmit {
			return nil, false
		}
		x = n
	case jsonTime:
		x = parseTime(v.String)
	case jsonBool:
		if !v.Valid || v.String == "0" {
			return nil, false
		}
		x = true
	case jsonRaw:
		if v.String == "" || v.String == "{}" {
			return nil, false
		}
		var c bytes.Buffer
		if json.Compact(&c, []byte(v.String)) != nil {
			return nil, true
		}
		return c.Bytes(), true
	case jsonList:
		list := stringList(v.String)
		if len(list) == 0 {
			return nil, false
		}
		x = list
	case jsonLabels:
		x = labels
	}
	b, _ := json.Marshal(x)
	return b, true
}

// parseTime reads a timestamp as bd's driver does: RFC3339Nano text, or
// SQLite's own "YYYY-MM-DD HH:MM:SS" as UTC; anything else stays text.
func parseTime(s string) any {
	for _, layout := range []string{rowTime, sqliteTime} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return s
}
