package claim

import (
	"fmt"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// Rule is one condition an issue must meet to be claimed, with the reason
// given when it does not.
type Rule struct {
	Name   string     // stable key: status, blocked, pinned, label:NAME...
	Reason string     // what a refused --id claim says when the rule fails
	Pred   sq.Sqlizer // true for issues that pass; the issues row is aliased i
}

// ReadySpecification is the one definition of "claimable" that claim-next,
// --id, --dry-run and --explain share: bd ready's predicate for the
// workspace's bd version, plus status open (or in_progress under an expired
// lease), the assignee rule, the failure policy and the agent's filters.
type ReadySpecification struct {
	Rules []Rule
	Order string // ORDER BY clause
	Args  []any  // arguments of Order
	sort  Sort
}

// bdSQLiteTime is how SQLite's datetime() prints a time: the form every
// comparison with datetime(...) in bd's queries works in.
const bdSQLiteTime = "2006-01-02 15:04:05"

// NewReadySpecification builds the specification for one workspace, agent,
// failure policy and set of filters, as of now.
func NewReadySpecification(feat Features, agent string, f Filters, p Policy, now time.Time) ReadySpecification {
	nowText := now.UTC().Format(bdSQLiteTime)
	spec := ReadySpecification{sort: f.Sort}
	add := func(name, reason string, pred sq.Sqlizer) {
		spec.Rules = append(spec.Rules, Rule{Name: name, Reason: reason, Pred: pred})
	}
	// The IN term keeps idx_issues_status_priority usable; an in_progress
	// issue passes only once its lease has expired (a takeover).
	expired := leaseExpired(now)
	add("status", "its status is not open", sq.Expr("(i.status IN ('open', 'in_progress') AND (i.status = 'open' OR ?))", expired))
	add("blocked", "it is blocked by an open dependency (blocked_issues_cache)",
		sq.Expr("NOT EXISTS (SELECT 1 FROM blocked_issues_cache b WHERE b.issue_id = i.id)"))
	if f.OnlyUnassigned {
		add("assignee", "it is already assigned", sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.status = 'in_progress')"))
	} else {
		add("assignee", "it is assigned to someone else", sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.assignee = ? OR i.status = 'in_progress')", agent))
	}
	for _, r := range feat.bdReadyRules(nowText, len(f.Types) > 0) {
		add(r.Name, r.Reason, r.Pred)
	}
	for _, r := range p.rules(now) {
		add(r.Name, r.Reason, r.Pred)
	}
	for _, l := range f.IncludeLabels {
		add("label:"+l, fmt.Sprintf("it lacks the label %q", l),
			sq.Expr("EXISTS (SELECT 1 FROM labels l WHERE l.issue_id = i.id AND l.label = ?)", l))
	}
	if len(f.ExcludeLabels) > 0 {
		add("exclude_label", "it has a label in --exclude-label",
			sq.Expr("NOT EXISTS (SELECT 1 FROM labels l WHERE l.issue_id = i.id AND l.label IN ("+placeholders(len(f.ExcludeLabels))+"))", anys(f.ExcludeLabels)...))
	}
	if f.MinPriority != nil {
		add("priority", fmt.Sprintf("its priority is below P%d", *f.MinPriority), sq.Expr("i.priority <= ?", *f.MinPriority))
	}
	if len(f.Types) > 0 {
		add("type", "its type is not in --type", sq.Eq{"i.issue_type": f.Types})
	}
	if f.Parent != "" {
		add("parent", fmt.Sprintf("it is not a descendant of %s", f.Parent), sq.Expr(`i.id IN (
	WITH RECURSIVE descendants(id) AS (
		SELECT issue_id FROM dependencies WHERE type = 'parent-child' AND depends_on_id = ?
		UNION
		SELECT d.issue_id FROM dependencies d JOIN descendants ON d.depends_on_id = descendants.id
		WHERE d.type = 'parent-child')
	SELECT id FROM descendants)`, f.Parent))
	}
	switch f.Sort {
	case SortOldest:
		spec.Order = "i.created_at ASC, i.id ASC"
	case SortHybrid:
		// bd's hybrid policy, with bd's datetime('now') bound to our clock.
		spec.Order = `CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN 0 ELSE 1 END ASC,
	CASE WHEN datetime(i.created_at) >= datetime(?, '-48 hours') THEN i.priority ELSE NULL END ASC,
	CASE WHEN datetime(i.created_at) < datetime(?, '-48 hours') THEN i.created_at ELSE NULL END ASC,
	i.created_at ASC, i.id ASC`
		spec.Args = []any{nowText, nowText, nowText}
	default:
		spec.Order = "i.priority ASC, i.created_at ASC, i.id ASC"
	}
	return spec
}

// bdReadyRules are the exclusions of `bd ready` that depend on the bd version
// that last wrote the workspace and on the columns its schema has.
func (feat Features) bdReadyRules(now string, typeFilter bool) []Rule {
	var rules []Rule
	v := feat.Version
	if feat.Issues["pinned"] && v.AtLeast(0, 30, 7) {
		rules = append(rules, Rule{"pinned", "it is pinned", sq.Expr("i.pinned = 0")})
	}
	if feat.Issues["ephemeral"] && v.AtLeast(0, 38, 0) {
		rules = append(rules, Rule{"ephemeral", "it is ephemeral (a wisp)", sq.Expr("(i.ephemeral = 0 OR i.ephemeral IS NULL)")})
	}
	if feat.Issues["is_template"] {
		rules = append(rules, Rule{"template", "it is a template", sq.Expr("(i.is_template = 0 OR i.is_template IS NULL)")})
	}
	if types := excludedTypes(v); len(types) > 0 && !typeFilter {
		rules = append(rules, Rule{"excluded_type", "its type (" + strings.Join(types, ", ") + ") is never ready", sq.NotEq{"i.issue_type": types}})
	}
	if feat.Issues["defer_until"] && v.AtLeast(0, 43, 0) {
		rules = append(rules, Rule{"deferred", "it is deferred (defer_until is in the future)",
			sq.Expr("(i.defer_until IS NULL OR datetime(i.defer_until) <= datetime(?))", now)})
	}
	for _, p := range feat.ExcludeIDPatterns {
		rules = append(rules, Rule{"id_pattern:" + p, fmt.Sprintf("its id matches the excluded pattern %q (ready.exclude_id_patterns)", p),
			sq.Expr("i.id NOT LIKE ?", "%"+p+"%")})
	}
	return rules
}

// failuresSQL counts the failed attempts of issue i since its last reset:
// two lookups in idx_events_issue_type, whatever the size of events.
const failuresSQL = `SELECT count(*) AS n, max(f.created_at) AS last FROM events f
	WHERE f.issue_id = i.id AND f.event_type = 'status_changed' AND f.comment LIKE '` + failedPrefix + `%'
	  AND f.id > COALESCE((SELECT max(r.id) FROM events r
	      WHERE r.issue_id = i.id AND r.event_type = 'commented' AND r.comment LIKE '` + resetPrefix + `%'), 0)`

// anyFailureSQL finds any failed attempt of issue i: one range of
// idx_events_issue_type, which spares
// the common issue without failures the counting of failuresSQL.
const anyFailureSQL = `SELECT 1 FROM events f
	WHERE f.issue_id = i.id AND f.event_type = 'status_changed' AND f.comment LIKE '` + failedPrefix + `%'`

// rules are the failure policy's exclusions: an issue waits out its
// backoff after a failed attempt, and an abandoned one (max-failures
// reached, or carrying the abandoned label) waits for a reset.
func (p Policy) rules(now time.Time) []Rule {
	var rules []Rule
	if p.BackoffInitial > 0 {
		rules = append(rules, Rule{"backoff", "it is in backoff after a failed attempt", sq.Expr(
			"(NOT EXISTS ("+anyFailureSQL+") OR NOT EXISTS (SELECT 1 FROM ("+failuresSQL+") WHERE n > 0 AND unixepoch(last) + min(?, ? * pow(?, n - 1)) > ?))",
			p.BackoffMax.Seconds(), p.BackoffInitial.Seconds(), p.BackoffMultiplier, now.Unix())})
	}
	abandoned := sq.Expr("NOT EXISTS (SELECT 1 FROM labels l WHERE l.issue_id = i.id AND l.label = ?)", p.AbandonedLabel)
	reason := fmt.Sprintf("it is abandoned: it has the label %s (bd-claim reset clears it)", p.AbandonedLabel)
	if p.MaxFailures > 0 {
		abandoned = sq.Expr("(? AND (NOT EXISTS ("+anyFailureSQL+") OR (SELECT n FROM ("+failuresSQL+")) < ?))", abandoned, p.MaxFailures)
		reason = fmt.Sprintf("it is abandoned: it has the label %s or %d failed attempts (bd-claim reset clears them)", p.AbandonedLabel, p.MaxFailures)
	}
	return append(rules, Rule{"abandoned", reason, abandoned})
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

// Where is the conjunction of every rule.
func (s ReadySpecification) Where() sq.And {
	where := make(sq.And, len(s.Rules))
	for i, r := range s.Rules {
		where[i] = r.Pred
	}
	return where
}

// candidates selects the claimable issues in claim order.
func (s ReadySpecification) candidates() sq.SelectBuilder {
	return sq.Select("i.id").From("issues i").Where(s.Where()).OrderByClause(s.Order, s.Args...)
}

// next selects the first claimable issue. For the priority order it first
// narrows to the most urgent priority that has a claimable issue: min()
// walks idx_issues_status_priority and stops at the first match, so only
// that priority's issues are sorted by age, not every open issue. The
// failure policy's rules, which look up events, are checked last: on the
// sorted candidates, one at a time, until one passes (the LIMIT keeps
// SQLite from merging the two levels).
func (s ReadySpecification) next() sq.SelectBuilder {
	var cheap, costly sq.And
	for _, r := range s.Rules {
		if r.Name == "backoff" || r.Name == "abandoned" {
			costly = append(costly, r.Pred)
		} else {
			cheap = append(cheap, r.Pred)
		}
	}
	b := sq.Select("i.id").From("issues i").Where(cheap).OrderByClause(s.Order, s.Args...)
	if s.sort == SortPriority {
		// The inner alias i shadows the outer one: the same rules apply.
		// One min() per status (open, and in_progress for an expired
		// lease): with an equality on status, each stops at its first
		// match in the index.
		where := s.Where()
		b = b.Where(sq.Expr(`i.priority = min(
	COALESCE((SELECT min(i.priority) FROM issues i WHERE i.status = 'open' AND ?), 5),
	COALESCE((SELECT min(i.priority) FROM issues i WHERE i.status = 'in_progress' AND ?), 5))`, where, where))
	}
	// costly always holds the abandoned rule.
	return sq.Select("i.id").FromSelect(b.Limit(1<<62), "i").Where(costly).Limit(1)
}

// byID selects issue id when it is claimable.
func (s ReadySpecification) byID(id string) sq.SelectBuilder {
	return s.candidates().Where(sq.Eq{"i.id": id}).Limit(1)
}

// order selects every claimable issue's id in claim order, as one JSON array.
func (s ReadySpecification) order() sq.SelectBuilder {
	return sq.Select().Column(sq.Expr("json_group_array(i.id ORDER BY "+s.Order+")", s.Args...)).From("issues i").Where(s.Where())
}

// CandidateSQL is the query that picks the next issue to claim, with its
// arguments, as Claim runs it.
func (s ReadySpecification) CandidateSQL() (string, []any) { return s.next().MustSql() }

// verdicts evaluates every rule for one issue: one 0/1 column per rule.
func (s ReadySpecification) verdicts(id string) sq.SelectBuilder {
	b := sq.Select().From("issues i").Where(sq.Eq{"i.id": id})
	for _, r := range s.Rules {
		b = b.Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END", r.Pred))
	}
	return b
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
