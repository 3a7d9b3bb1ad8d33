package claim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
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
	closes     bool                             // bd-claim writes this bd's close (engineTx.closeIssue)
	byAge      bool                             // bd's index on issues.created_at is there: a claim may walk it (nextK)
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
	// deferral is nil where bd has no defer_until.
	// glob, regexp and metadata are how bd ready's --label-pattern,
	// --label-regex and metadata filters read on this engine; regexp and
	// metadata are nil where that bd has no such filter.
	glob     func(col, pattern string) sq.Sqlizer
	regexp   func(col, re string) sq.Sqlizer
	metadata *metadataMatch
	kind     string   // the engine, as refusals name it: SQLite, Dolt
	types    []string // the issue types built into the flavor's bd
	// hybrid is the ORDER BY clause (and its arguments) of the hybrid
	// sort as of now: recent issues (48h) by priority first, then the
	// older ones by age.
	hybrid func(now string) (string, []any)
}

// readyRules appends the exclusions of `bd ready` for this flavor, as of
// now, to rules, as the filters adjust them. With a type filter, bd ready
// lists the types it otherwise excludes, and ignores --exclude-type; with
// --include-deferred it drops its deferral rules.
func (f flavor) readyRules(rules []rule, now string, fs Filters) []rule {
	rules = append(rules, f.ready...)
	if len(f.excludedTypes) > 0 && len(fs.Types) == 0 {
		rules = append(rules, rule{"excluded_type", "its type (" + strings.Join(f.excludedTypes, ", ") + ") is never ready", sq.NotEq{"i.issue_type": f.excludedTypes}})
	}
	if len(fs.ExcludeTypes) > 0 && len(fs.Types) == 0 {
		rules = append(rules, rule{"exclude_type", "its type is in --exclude-type", sq.NotEq{"LOWER(i.issue_type)": fs.ExcludeTypes}}) // Validate lowered them
	}
	if f.deferral == nil || fs.IncludeDeferred {
		return rules
	}
	return append(rules, f.deferral(now)...)
}

// metadataMatch is how a flavor reads bd's issues.metadata (a JSON object)
// as bd ready's --has-metadata-key and --metadata-field do, for a row i.
type metadataMatch struct {
	has   func(key string) sq.Sqlizer        // the object has the top-level key (a JSON null counts)
	field func(key, value string) sq.Sqlizer // the key's value, unquoted, is value
}

// refuse says which of fs the workspace's bd has no concept of (nil when
// it has every one): bd-claim refuses such a filter rather than ignore it.
func (f flavor) refuse(fs Filters) error {
	var missing []string
	if fs.LabelRegex != "" && f.regexp == nil {
		missing = append(missing, "--label-regex (no REGEXP in its database)")
	}
	if (fs.HasMetadataKey != "" || len(fs.MetadataFields) > 0) && f.metadata == nil {
		missing = append(missing, "--has-metadata-key and --metadata-field (no issues.metadata column)")
	}
	if fs.IncludeDeferred && f.deferral == nil {
		missing = append(missing, "--include-deferred (no defer_until)")
	}
	if len(missing) > 0 {
		return Errorf(EInvalid, "the workspace's bd %s (%s) has no such filter: %s", f.version, f.kind, strings.Join(missing, "; "))
	}
	return nil
}

// jsonKey is the JSON path of a top-level metadata key, quoted as bd's
// storage.JSONMetadataPath quotes it, so that a dotted key is one key (the
// key is checked: no quote or backslash).
func jsonKey(key string) string { return `$."` + key + `"` }

// knownType says whether t is a type the flavor's bd builds in, or one of
// custom, in any case.
func (f flavor) knownType(t string, custom []string) bool {
	same := func(u string) bool { return strings.EqualFold(u, t) }
	return slices.ContainsFunc(f.types, same) || slices.ContainsFunc(f.excludedTypes, same) || slices.ContainsFunc(custom, same)
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
