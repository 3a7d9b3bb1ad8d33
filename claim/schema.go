package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bdclaim/bd-claim/db"
)

// Version is a bd release, major.minor.patch.
type Version [3]int

// ParseVersion reads "0.49.6" (a leading v and a suffix after - or space are ignored).
func ParseVersion(s string) (Version, bool) {
	var v Version
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "- +"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// AtLeast reports whether v >= major.minor.patch.
func (v Version) AtLeast(major, minor, patch int) bool {
	w := Version{major, minor, patch}
	for i := range v {
		if v[i] != w[i] {
			return v[i] > w[i]
		}
	}
	return true
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// Features is what bd-claim learns about a database before it touches it:
// the bd version that last wrote it and the columns it really has.
type Features struct {
	Version           Version
	Issues            map[string]bool // columns of issues
	ExcludeIDPatterns []string        // bd ready's id exclusions for this version and config
}

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

// Oldest and newest bd releases whose SQLite workspaces bd-claim writes.
var (
	minVersion = Version{0, 27, 0}
	maxVersion = Version{0, 50, 99}
)

// DetectFeatures checks that conn is a Beads SQLite database bd-claim can
// write faithfully and returns its features, in two queries. Extra unknown
// columns are fine; a missing one is SCHEMA_INCOMPATIBLE.
func DetectFeatures(ctx context.Context, conn db.DBTX) (Features, error) {
	q := db.New()
	feat := Features{}
	list, err := q.SchemaColumns(ctx, conn)
	if err != nil {
		return feat, classify(err, "read the schema")
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
			return feat, Errorf(ESchema, "there is no %s table: not a Beads SQLite database", rc.table)
		}
		for _, c := range rc.cols {
			if !cols[c] {
				return feat, Errorf(ESchema, "table %s has no column %s: not a Beads SQLite database bd-claim knows", rc.table, c)
			}
		}
	}
	if tables["blocked_issues_cache"]["blocked_by"] {
		return feat, Errorf(ESchema, "this database was last written by beads_rust (br), whose blocked_issues_cache differs from bd's; open it with bd first")
	}
	feat.Issues = tables["issues"]
	set, err := q.SchemaSettings(ctx, conn)
	if err != nil {
		return feat, classify(err, "read bd's metadata")
	}
	v, ok := ParseVersion(set.BdVersion)
	if !ok {
		return feat, Errorf(ESchema, "metadata.bd_version is %q: bd-claim needs the bd version that wrote the database (run any bd command on it once)", set.BdVersion)
	}
	if !v.AtLeast(minVersion[0], minVersion[1], minVersion[2]) || v.AtLeast(maxVersion[0], maxVersion[1]+1, 0) {
		return feat, Errorf(ESchema, "bd %s wrote this database; bd-claim supports SQLite workspaces of bd %s to %d.%d.x", v, minVersion, maxVersion[0], maxVersion[1])
	}
	feat.Version = v
	feat.ExcludeIDPatterns = excludeIDPatterns(v, set.ExcludeIDPatterns)
	return feat, nil
}

// excludeIDPatterns is bd ready's id filter: none before v0.47.2, then the
// configured comma-separated list, or the version's default.
func excludeIDPatterns(v Version, configured string) []string {
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

// classify turns a driver error into a coded error whose message says what
// to do, keeping the driver's text as detail.
func classify(err error, doing string) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: EInterrupted, Message: "interrupted before it could " + doing + "; nothing was written", Err: err}
	}
	code, detail := EUnexpected, err.Error()
	switch db.Code(err) {
	case db.CodeBusy, db.CodeLocked:
		code, detail = EBusy, "the database stayed locked by another writer; retry later or raise --timeout-ms ("+detail+")"
	case db.CodeNotADB:
		code, detail = ESchema, "the file is not a SQLite database ("+detail+")"
	case db.CodeCorrupt:
		code, detail = ESchema, "the database file is corrupt; restore it or rebuild it with bd from issues.jsonl ("+detail+")"
	case db.CodeCantOpen:
		code, detail = EDBNotFound, "the database cannot be opened ("+detail+")"
	}
	e = Errorf(code, "could not %s: %s", doing, detail)
	e.Err = err
	return e
}
