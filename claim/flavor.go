package claim

import (
	"fmt"
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
