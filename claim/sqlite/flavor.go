package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/db"
)

// flavor is everything about a SQLite workspace that depends on who wrote
// it, decided once when the workspace is opened: what the rules need
// (engine.Flavor: bd ready's exclusions, the dialect of the filters), and
// what the engine's writes need (the columns a claim reads, the content
// hash formula, the event payload and type, how times are written). bd
// v0.27 to v0.50 differ by version and by the columns their schema has.
type flavor struct {
	engine.Flavor
	columns    map[string]bool // the columns of issues
	readCols   []string        // the issues columns a claim reads: those the hash and the payload use
	hash       []hashField     // bd's ComputeContentHash, field by field
	payload    []jsonField     // events.old_value: types.Issue as bd's GetIssue fills it
	claimEvent string          // the event type of a claim
	rowTime    string          // layout of issues.updated_at and dirty_issues.marked_at
	closes     bool            // bd-claim writes this bd's close (tx.Close)
	byAge      bool            // bd's index on issues.created_at is there: a claim may walk it (nextK)
	idPatterns []string        // ids containing one of them are never ready (bd ready's id_pattern rules)
}

// rowAt is t as the flavor writes a row's time.
func (f flavor) rowAt(t time.Time) string { return t.Format(f.rowTime) }

// updatedAt is the updated_at of a write at now to a row last updated at
// prev: now, or just after prev when the clock has not moved past it (bd's
// import keeps whichever copy has the newer updated_at).
func (f flavor) updatedAt(now time.Time, prev string) string {
	if t, err := time.Parse(f.rowTime, prev); err == nil && !now.After(t) {
		return f.rowAt(t.Add(time.Microsecond).In(now.Location()))
	}
	return f.rowAt(now)
}

// history is how SQLite's events record the failure policy's attempts: a
// failed release is a status_changed event, and events are ordered by their
// integer id.
var history = engine.NewHistory("status_changed", "id", "0", "unixepoch(%s)", "min")

// The time layouts of bd's SQLite workspaces, one per format.
const (
	// sqliteTime is CURRENT_TIMESTAMP's and datetime()'s form: how bd's
	// column defaults leave events.created_at and comments.created_at, and
	// what bd's datetime() comparisons use.
	sqliteTime = "2006-01-02 15:04:05"
	// rowTime is how bd writes issues.updated_at and dirty_issues.marked_at.
	rowTime = time.RFC3339Nano
)

// Oldest and newest bd releases whose SQLite workspaces bd-claim writes.
var (
	minVersion = engine.Version{0, 27, 0}
	maxVersion = engine.Version{0, 50, 99}
)

// requiredColumns are the columns a claim reads or writes, per table.
var requiredColumns = []struct {
	table string
	cols  []string
}{
	{"issues", []string{"id", "content_hash", "title", "description", "design", "acceptance_criteria", "notes",
		"status", "priority", "issue_type", "assignee", "created_at", "updated_at", "external_ref"}},
	{"labels", []string{"issue_id", "label"}},
	{"dependencies", []string{"issue_id", "depends_on_id", "type"}},
	{"blocked_issues_cache", []string{"issue_id"}},
	{"events", []string{"id", "issue_id", "event_type", "actor", "old_value", "new_value", "comment", "created_at"}},
	{"comments", []string{"issue_id", "author", "text", "created_at"}},
	{"dirty_issues", []string{"issue_id", "marked_at"}},
	{"metadata", []string{"key", "value"}},
	{"config", []string{"key", "value"}},
}

// detectFlavor checks that conn is a Beads SQLite database bd-claim can
// write faithfully and returns its flavor, in two queries. Extra unknown
// columns are fine; a missing one is SCHEMA_INCOMPATIBLE.
func detectFlavor(ctx context.Context, conn db.DBTX) (flavor, error) {
	q := db.New()
	list, err := q.SchemaColumns(ctx, conn)
	if err != nil {
		return flavor{}, engine.Classify(err, "read the schema", sqliteCode)
	}
	tables := map[string]map[string]bool{}
	for _, tc := range strings.Split(list, ",") {
		table, col, _ := strings.Cut(tc, ".")
		if tables[table] == nil {
			tables[table] = map[string]bool{}
		}
		tables[table][col] = true
	}
	for _, rc := range requiredColumns {
		cols := tables[rc.table]
		if len(cols) == 0 {
			return flavor{}, engine.Errorf(engine.ESchema, "there is no %s table: not a Beads SQLite database", rc.table)
		}
		for _, c := range rc.cols {
			if !cols[c] {
				return flavor{}, engine.Errorf(engine.ESchema, "table %s has no column %s: not a Beads SQLite database bd-claim knows", rc.table, c)
			}
		}
	}
	if tables["blocked_issues_cache"]["blocked_by"] {
		return flavor{}, engine.Errorf(engine.ESchema, "this database was last written by beads_rust (br), whose blocked_issues_cache differs from bd's; open it with bd first")
	}
	set, err := q.SchemaSettings(ctx, conn)
	if err != nil {
		return flavor{}, engine.Classify(err, "read bd's metadata", sqliteCode)
	}
	v, ok := engine.ParseVersion(set.BdVersion)
	if !ok {
		return flavor{}, engine.Errorf(engine.ESchema, "metadata.bd_version is %q: bd-claim needs the bd version that wrote the database (run any bd command on it once)", set.BdVersion)
	}
	if !v.AtLeast(minVersion[0], minVersion[1], minVersion[2]) || v.AtLeast(maxVersion[0], maxVersion[1]+1, 0) {
		return flavor{}, engine.Errorf(engine.ESchema, "bd %s wrote this database; bd-claim supports SQLite workspaces of bd %s to %d.%d.x", v, minVersion, maxVersion[0], maxVersion[1])
	}
	f := sqliteFlavor(v, tables["issues"], set.ExcludeIDPatterns)
	f.byAge = set.CreatedAtIndex == 1
	return f, nil
}

// sqliteUnder is bd ready --parent of bd v0.27-v0.50: the descendants of
// root through parent-child edges.
func sqliteUnder(root string) sq.Sqlizer {
	return sq.Expr(`i.id IN (
	WITH RECURSIVE descendants(id) AS (
		SELECT issue_id FROM dependencies WHERE type = 'parent-child' AND depends_on_id = ?
		UNION
		SELECT d.issue_id FROM dependencies d JOIN descendants ON d.depends_on_id = descendants.id
		WHERE d.type = 'parent-child')
	SELECT id FROM descendants)`, root)
}

// sqliteFlavor is the flavor of a SQLite workspace last written by bd v,
// whose issues table has columns, with bd ready's configured id exclusions.
func sqliteFlavor(v engine.Version, columns map[string]bool, idPatterns string) flavor {
	f := flavor{
		Flavor: engine.Flavor{
			Version: v, Kind: "SQLite", Types: []string{"bug", "feature", "task", "epic", "chore", "event"},
			Source: "issues i", Labels: "labels", Under: sqliteUnder, EventTime: sqliteTime, History: history,
			NotBlocked: engine.Rule{Name: "blocked", Reason: "it is blocked by an open dependency (blocked_issues_cache)",
				Pred: sq.Expr("NOT EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)")},
			LeaseExpired: leaseExpired, Hybrid: sqliteHybrid, Glob: sqliteGlob,
			DirectoryLabels: v.AtLeast(0, 31, 0), // GH#541
		},
		columns: columns, hash: modernHash, payload: modernJSON, claimEvent: "status_changed", rowTime: rowTime,
	}
	if columns["metadata"] {
		f.Metadata = &sqliteMetadata
	}
	if columns["defer_until"] && v.AtLeast(0, 43, 0) {
		f.Deferral = sqliteDeferral
	}
	if !v.AtLeast(0, 30, 7) { // bd up to v0.30.6 hashes nine fields and a raw external_ref
		f.hash, f.payload = legacyHash, legacyJSON
	}
	if v.AtLeast(0, 49, 4) {
		f.claimEvent = "claimed"
	}
	f.closes = v.AtLeast(closeVersion[0], closeVersion[1], closeVersion[2]) && columns["close_reason"] && columns["closed_by_session"]
	rule := func(name, reason string, pred sq.Sqlizer) {
		f.Ready = append(f.Ready, engine.Rule{Name: name, Reason: reason, Pred: pred})
	}
	if columns["pinned"] && v.AtLeast(0, 30, 7) {
		rule("pinned", "it is pinned", sq.Expr("i.pinned = 0"))
	}
	if columns["ephemeral"] && v.AtLeast(0, 38, 0) {
		rule("ephemeral", "it is ephemeral (a wisp)", sq.Expr("(i.ephemeral = 0 OR i.ephemeral IS NULL)"))
	}
	if columns["is_template"] {
		rule("template", "it is a template", sq.Expr("(i.is_template = 0 OR i.is_template IS NULL)"))
	}
	f.idPatterns = excludeIDPatterns(v, idPatterns)
	for _, p := range f.idPatterns {
		rule("id_pattern:"+p, fmt.Sprintf("its id matches the excluded pattern %q (ready.exclude_id_patterns)", p), sq.Expr("i.id NOT LIKE ?", "%"+p+"%"))
	}
	f.ExcludedTypes = excludedTypes(v)
	f.readCols = []string{"content_hash"}
	for _, p := range f.payload {
		if p.col != "" && columns[p.col] {
			f.readCols = append(f.readCols, p.col)
		}
	}
	return f
}

// excludedTypes lists the issue types bd ready never lists at version v.
func excludedTypes(v engine.Version) []string {
	switch {
	case v.AtLeast(0, 48, 0):
		return []string{"merge-request", "gate", "molecule", "message", "agent", "role", "rig"}
	case v.AtLeast(0, 42, 0):
		return []string{"merge-request", "gate", "molecule", "message", "agent"}
	case v.AtLeast(0, 36, 0):
		return []string{"merge-request", "gate", "molecule", "message"}
	}
	return nil
}

// excludeIDPatterns is bd ready's id filter: none before v0.47.2, then the
// configured comma-separated list, or the version's default.
func excludeIDPatterns(v engine.Version, configured string) []string {
	if !v.AtLeast(0, 47, 2) {
		return nil
	}
	var out []string
	for _, p := range strings.Split(configured, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	switch {
	case len(out) > 0:
		return out
	case v.AtLeast(0, 49, 0):
		return []string{"-mol-", "-wisp-"}
	default:
		return []string{"-wisp-"}
	}
}

// sqliteGlob is bd ready --label-pattern (a glob, case-sensitive: LIKE
// on Dolt's binary collation) in SQLite's GLOB, whose * and ? are bd's and
// whose [ is made literal, as it is in bd's LIKE.
func sqliteGlob(col, pattern string) sq.Sqlizer {
	return sq.Expr(col+" GLOB ?", strings.ReplaceAll(pattern, "[", "[[]"))
}

// sqliteMetadata reads issues.metadata (JSON text, where the column is) as bd
// v1.3.0's JSON_UNQUOTE(JSON_EXTRACT(metadata, '$."key"')) does on Dolt:
// a string's text, any other value's JSON text (2, true, null). A row
// whose metadata is not JSON matches nothing.
var sqliteMetadata = engine.MetadataMatch{
	Has: func(key string) sq.Sqlizer {
		return sq.Expr("CASE WHEN json_valid(i.metadata) THEN json_type(i.metadata, ?) IS NOT NULL ELSE 0 END", engine.JSONKey(key))
	},
	Field: func(key, value string) sq.Sqlizer {
		p := engine.JSONKey(key)
		return sq.Expr(`CASE WHEN json_valid(i.metadata) THEN COALESCE(CASE json_type(i.metadata, ?) WHEN 'text' THEN json_extract(i.metadata, ?)
			ELSE i.metadata -> ? END = ?, 0) ELSE 0 END`, p, p, p, value)
	},
}

// sqliteDeferral is bd ready's defer_until rule on SQLite.
func sqliteDeferral(now string) []engine.Rule {
	return []engine.Rule{{Name: "deferred", Reason: "it is deferred (defer_until is in the future)", Pred: sq.Expr("(i.defer_until IS NULL OR datetime(i.defer_until) <= datetime(?))", now)}}
}

// sqliteHybrid is bd's hybrid policy on SQLite, with bd's datetime('now')
// bound to our clock.
func sqliteHybrid(now string) (string, []any) {
	return `CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN 0 ELSE 1 END ASC,
	CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN i.priority ELSE NULL END ASC,
	CASE WHEN datetime(i.created_at) < datetime(?, '-48 hours') THEN i.created_at ELSE NULL END ASC,
	i.created_at ASC, i.id ASC`, []any{now, now, now}
}

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
func (fl flavor) contentHash(r *engine.Row) string {
	cols := r.Data.(columns)
	h := sha256.New()
	for _, f := range fl.hash {
		v := cols[f.col]
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
	jsonLabels                    // the issue's labels, omitted when none
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
// bd's json.Marshal prints it (issueJSON). Like bd, it falls back to
// {"id":...} when the issue cannot be marshalled (invalid metadata JSON).
func (fl flavor) eventOldValue(r *engine.Row) string {
	b, ok := fl.issueJSON(r)
	if !ok {
		b, _ = json.Marshal(map[string]string{"id": r.ID})
	}
	return string(b)
}

// issueJSON is r as bd's json.Marshal prints the types.Issue its GetIssue
// reads (the flavor's payload fields, labels included); ok is false when
// bd cannot marshal it (invalid metadata JSON).
func (fl flavor) issueJSON(r *engine.Row) (_ []byte, ok bool) {
	cols := r.Data.(columns)
	var b bytes.Buffer
	b.WriteByte('{')
	for _, f := range fl.payload {
		v, has := cols[f.col]
		if f.kind == jsonLabels {
			has, v.Valid = len(r.Labels) > 0, true
		}
		val, ok := jsonValue(f.kind, v, r.Labels)
		if !has || !ok {
			continue
		}
		if val == nil {
			return nil, false
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
	return b.Bytes(), true
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
		// json.RawMessage: compacted, and <, > and & escaped, as in the
		// rest of encoding/json's output.
		c, err := json.Marshal(json.RawMessage(v.String))
		if err != nil {
			return nil, true
		}
		return c, true
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
