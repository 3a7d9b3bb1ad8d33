package claim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/db"
)

// flavor is everything about a workspace that depends on who wrote it,
// decided once when the workspace is opened: the columns a claim reads, the
// exclusions of `bd ready`, the content hash formula, the event payload and
// type, and how times are written. The claim transaction, the rules and the
// lifecycle ask the flavor and never look at a version themselves, so a new
// writer of Beads databases is a new flavor (with its vendored schema and
// fixtures), not an edit of the transaction.
//
// Two families of writers exist: bd v0.27 to v0.50 on SQLite
// (sqliteFlavor), whose choices depend on the bd version and the columns,
// and bd v1.3.x on a dolt sql-server (doltFlavor, in dolt.go). What a
// flavor cannot say as data (how a transaction is framed, how a move is
// written) is its engine's (engine.go).
type flavor struct {
	version    Version
	under      func(root string) sq.Sqlizer     // true for a row i that bd ready --parent root lists
	source     string                           // the rows readiness ranges over, aliased i: issues (and, on Dolt, bd's wisps)
	sourceOf   func(id string) sq.SelectBuilder // source narrowed to one id, where the server would not narrow it (nil: a WHERE on i.id does)
	labels     string                           // the labels of those rows (issue_id, label)
	columns    map[string]bool                  // the columns of issues
	readCols   []string                         // the issues columns a claim reads: those the hash and the payload use
	hash       []hashField                      // bd's ComputeContentHash, field by field
	payload    []jsonField                      // events.old_value: types.Issue as bd's GetIssue fills it
	claimEvent string                           // the event type of a claim
	eventTime  string                           // layout of events.created_at, comments.created_at and the database's datetime()
	rowTime    string                           // layout of issues.updated_at and dirty_issues.marked_at
	history    history                          // how the failure policy reads failed attempts
	// notBlocked is bd's blocked rule; leaseExpired is true, as of now,
	// for an in_progress issue i whose lease has ended (a takeover).
	notBlocked   rule
	leaseExpired func(now time.Time) sq.Sqlizer

	// bd ready's exclusions: those that do not change with the clock
	// (built once), the types it never lists (unless --type asks), and
	// those of defer_until as of now (the database's datetime form).
	ready         []rule
	excludedTypes []string
	idPatterns    []string // ids containing one of them are never ready
	deferral      func(now string) []rule
	// hybrid is the ORDER BY clause (and its arguments) of the hybrid
	// sort as of now: recent issues (48h) by priority first, then the
	// older ones by age.
	hybrid func(now string) (string, []any)
}

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
	minVersion = Version{0, 27, 0}
	maxVersion = Version{0, 50, 99}
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
		return flavor{}, classify(err, "read the schema")
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
			return flavor{}, Errorf(ESchema, "there is no %s table: not a Beads SQLite database", rc.table)
		}
		for _, c := range rc.cols {
			if !cols[c] {
				return flavor{}, Errorf(ESchema, "table %s has no column %s: not a Beads SQLite database bd-claim knows", rc.table, c)
			}
		}
	}
	if tables["blocked_issues_cache"]["blocked_by"] {
		return flavor{}, Errorf(ESchema, "this database was last written by beads_rust (br), whose blocked_issues_cache differs from bd's; open it with bd first")
	}
	set, err := q.SchemaSettings(ctx, conn)
	if err != nil {
		return flavor{}, classify(err, "read bd's metadata")
	}
	v, ok := ParseVersion(set.BdVersion)
	if !ok {
		return flavor{}, Errorf(ESchema, "metadata.bd_version is %q: bd-claim needs the bd version that wrote the database (run any bd command on it once)", set.BdVersion)
	}
	if !v.AtLeast(minVersion[0], minVersion[1], minVersion[2]) || v.AtLeast(maxVersion[0], maxVersion[1]+1, 0) {
		return flavor{}, Errorf(ESchema, "bd %s wrote this database; bd-claim supports SQLite workspaces of bd %s to %d.%d.x", v, minVersion, maxVersion[0], maxVersion[1])
	}
	return sqliteFlavor(v, tables["issues"], set.ExcludeIDPatterns), nil
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
func sqliteFlavor(v Version, columns map[string]bool, idPatterns string) flavor {
	f := flavor{
		version: v, columns: columns, under: sqliteUnder, source: "issues i", labels: "labels",
		hash: modernHash, payload: modernJSON, claimEvent: "status_changed",
		eventTime: sqliteTime, rowTime: rowTime, history: sqliteHistory,
		notBlocked: rule{"blocked", "it is blocked by an open dependency (blocked_issues_cache)",
			sq.Expr("NOT EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)")},
		leaseExpired: leaseExpired, deferral: noDeferral, hybrid: sqliteHybrid,
	}
	if columns["defer_until"] && v.AtLeast(0, 43, 0) {
		f.deferral = sqliteDeferral
	}
	if !v.AtLeast(0, 30, 7) { // bd up to v0.30.6 hashes nine fields and a raw external_ref
		f.hash, f.payload = legacyHash, legacyJSON
	}
	if v.AtLeast(0, 49, 4) {
		f.claimEvent = "claimed"
	}
	if columns["pinned"] && v.AtLeast(0, 30, 7) {
		f.ready = append(f.ready, rule{"pinned", "it is pinned", sq.Expr("i.pinned = 0")})
	}
	if columns["ephemeral"] && v.AtLeast(0, 38, 0) {
		f.ready = append(f.ready, rule{"ephemeral", "it is ephemeral (a wisp)", sq.Expr("(i.ephemeral = 0 OR i.ephemeral IS NULL)")})
	}
	if columns["is_template"] {
		f.ready = append(f.ready, rule{"template", "it is a template", sq.Expr("(i.is_template = 0 OR i.is_template IS NULL)")})
	}
	f.idPatterns = excludeIDPatterns(v, idPatterns)
	for _, p := range f.idPatterns {
		f.ready = append(f.ready, rule{"id_pattern:" + p, fmt.Sprintf("its id matches the excluded pattern %q (ready.exclude_id_patterns)", p),
			sq.Expr("i.id NOT LIKE ?", "%"+p+"%")})
	}
	f.excludedTypes = excludedTypes(v)
	f.readCols = []string{"content_hash"}
	for _, p := range f.payload {
		if p.col != "" && columns[p.col] {
			f.readCols = append(f.readCols, p.col)
		}
	}
	return f
}

// excludedTypes lists the issue types bd ready never lists at version v.
func excludedTypes(v Version) []string {
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

// readyRules appends the exclusions of `bd ready` for this flavor, as of
// now, to rules. With a type filter, bd ready lists the types it otherwise
// excludes.
func (f flavor) readyRules(rules []rule, now string, typeFilter bool) []rule {
	rules = append(rules, f.ready...)
	if len(f.excludedTypes) > 0 && !typeFilter {
		rules = append(rules, rule{"excluded_type", "its type (" + strings.Join(f.excludedTypes, ", ") + ") is never ready", sq.NotEq{"i.issue_type": f.excludedTypes}})
	}
	return append(rules, f.deferral(now)...)
}

// noDeferral is bd ready before defer_until (bd < v0.43): nothing is deferred.
func noDeferral(string) []rule { return nil }

// sqliteDeferral is bd ready's defer_until rule on SQLite.
func sqliteDeferral(now string) []rule {
	return []rule{{"deferred", "it is deferred (defer_until is in the future)",
		sq.Expr("(i.defer_until IS NULL OR datetime(i.defer_until) <= datetime(?))", now)}}
}

// sqliteHybrid is bd's hybrid policy on SQLite, with bd's datetime('now')
// bound to our clock.
func sqliteHybrid(now string) (string, []any) {
	return `CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN 0 ELSE 1 END ASC,
	CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN i.priority ELSE NULL END ASC,
	CASE WHEN datetime(i.created_at) < datetime(?, '-48 hours') THEN i.created_at ELSE NULL END ASC,
	i.created_at ASC, i.id ASC`, []any{now, now, now}
}

// eventAt is t as the flavor writes an event's time.
func (f flavor) eventAt(t time.Time) string { return t.UTC().Format(f.eventTime) }

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

// order is the ORDER BY clause (and its arguments) of a sort policy, as of
// now (SQLite's datetime form).
func (f flavor) order(s Sort, now string) (string, []any) {
	switch s {
	case SortOldest:
		return "i.created_at ASC, i.id ASC", nil
	case SortHybrid:
		return f.hybrid(now)
	default:
		return "i.priority ASC, i.created_at ASC, i.id ASC", nil
	}
}

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
