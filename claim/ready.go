package claim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// rule is one condition an issue must meet to be claimed, with the reason
// given when it does not.
type rule struct {
	name   string     // stable key: status, blocked, pinned, label:NAME...
	reason string     // what a refused --id claim says when the rule fails
	pred   sq.Sqlizer // true for issues that pass; the issues row is aliased i
}

// readySpec is the one definition of "claimable" that claim-next,
// --id, --dry-run and --explain share: bd ready's predicate for the
// workspace's bd version, plus status open (or in_progress under an expired
// lease), the assignee rule, the failure policy and the agent's filters.
type readySpec struct {
	rules  []rule
	order  string // ORDER BY clause
	args   []any  // arguments of order
	sort   Sort
	byAge  bool                             // the claim may walk bd's index on created_at (flavor.byAge)
	labels []string                         // the labels every claimable issue has (Filters.IncludeLabels)
	from   string                           // the rows a claim chooses from, aliased i (flavor.source)
	fromOf func(id string) sq.SelectBuilder // those rows narrowed to one id (flavor.sourceOf), or nil
	agent  string                           // the agent whose open issues the assignee rule admits ("" with --unassigned)
	clear  sq.Sqlizer                       // a cheap condition under which the failure policy's rules hold (Policy.clear)
}

// newReadySpec builds the specification for one workspace flavor,
// agent, failure policy and set of filters, as of now.
func newReadySpec(fl flavor, agent string, f Filters, p Policy, now time.Time) readySpec {
	nowText := fl.eventAt(now) // in the form of the database's datetime()
	spec := readySpec{sort: f.Sort, byAge: fl.byAge, labels: f.IncludeLabels, from: fl.source, fromOf: fl.sourceOf}
	add := func(name, reason string, pred sq.Sqlizer) {
		spec.rules = append(spec.rules, rule{name, reason, pred})
	}
	// The IN term keeps idx_issues_status_priority usable; an in_progress
	// issue passes only once its lease has expired (a takeover).
	add("status", "its status is not open", sq.Expr("(i.status IN ('open', 'in_progress') AND (i.status = 'open' OR ?))", fl.leaseExpired(now)))
	spec.rules = append(spec.rules, fl.notBlocked)
	if f.OnlyUnassigned {
		add("assignee", "it is already assigned", unassigned)
	} else {
		add("assignee", "it is assigned to someone else", sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.assignee = ? OR i.status = 'in_progress')", agent))
		spec.agent = agent
	}
	spec.rules = fl.readyRules(spec.rules, nowText, f)
	spec.rules = append(spec.rules, p.rules(fl.history, now)...)
	spec.clear = p.clear(fl.history)
	// hasLabel is true for an issue with a label for which pred (on l) holds.
	hasLabel := func(pred sq.Sqlizer) sq.Sqlizer {
		return sq.Expr("EXISTS (SELECT 1 FROM "+fl.labels+" l WHERE l.issue_id = i.id AND ?)", pred)
	}
	for _, l := range f.IncludeLabels {
		add("label:"+l, fmt.Sprintf("it lacks the label %q", l), hasLabel(sq.Eq{"l.label": l}))
	}
	if len(f.LabelsAny) > 0 {
		add("label_any", "it has none of the labels in --label-any", hasLabel(sq.Eq{"l.label": f.LabelsAny}))
	}
	if len(f.ExcludeLabels) > 0 {
		add("exclude_label", "it has a label in --exclude-label", sq.Expr("NOT ?", hasLabel(sq.Eq{"l.label": f.ExcludeLabels})))
	}
	if f.LabelPattern != "" {
		add("label_pattern", fmt.Sprintf("none of its labels matches --label-pattern %q", f.LabelPattern), hasLabel(fl.glob("l.label", f.LabelPattern)))
	}
	// A filter the flavor has no means for (regexp, metadata nil) never
	// gets here: Store.admit refuses it first (flavor.refuse).
	if f.LabelRegex != "" && fl.regexp != nil {
		add("label_regex", fmt.Sprintf("none of its labels matches --label-regex %q", f.LabelRegex), hasLabel(fl.regexp("l.label", f.LabelRegex)))
	}
	if f.MinPriority != nil {
		add("priority", fmt.Sprintf("its priority is below P%d", *f.MinPriority), sq.Expr("i.priority <= ?", *f.MinPriority))
	}
	if f.Priority != nil {
		add("exact_priority", fmt.Sprintf("its priority is not P%d", *f.Priority), sq.Eq{"i.priority": *f.Priority})
	}
	if len(f.Types) > 0 {
		add("type", "its type is not in --type", sq.Eq{"LOWER(i.issue_type)": f.Types}) // Validate lowered f.Types
	}
	if fl.metadata != nil {
		if f.HasMetadataKey != "" {
			add("has_metadata_key", fmt.Sprintf("its metadata has no key %q", f.HasMetadataKey), fl.metadata.has(f.HasMetadataKey))
		}
		for _, k := range slices.Sorted(maps.Keys(f.MetadataFields)) {
			v := f.MetadataFields[k]
			add("metadata_field:"+k, fmt.Sprintf("its metadata %q is not %q", k, v), fl.metadata.field(k, v))
		}
	}
	if f.Parent != "" {
		add("parent", fmt.Sprintf("it is not a descendant of %s", f.Parent), fl.under(f.Parent))
	}
	spec.order, spec.args = fl.order(f.Sort, nowText)
	return spec
}

// unassigned is the assignee rule with --unassigned: an issue assigned to
// nobody, or held (whose lease may have expired: a takeover).
var unassigned = sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.status = 'in_progress')")

// without is s less the rules that drop says to leave out.
func (s readySpec) without(drop func(rule) bool) readySpec {
	s.rules = slices.DeleteFunc(slices.Clone(s.rules), drop)
	return s
}

// where is the conjunction of every rule.
func (s readySpec) where() sq.And {
	where := make(sq.And, len(s.rules))
	for i, r := range s.rules {
		where[i] = r.pred
	}
	return where
}

// candidates selects the claimable issues in claim order.
func (s readySpec) candidates() sq.SelectBuilder {
	return sq.Select("i.id").From(s.from).Where(s.where()).OrderByClause(s.order, s.args...)
}

// split parts the rules into the cheap ones and the failure policy's,
// which look up events and labels: those are best checked on sorted
// candidates only, until enough pass.
func (s readySpec) split() (cheap, costly sq.And) {
	for _, r := range s.rules {
		if r.costly() {
			costly = append(costly, r.pred)
		} else {
			cheap = append(cheap, r.pred)
		}
	}
	return cheap, costly
}

// costly says whether r is one of the failure policy's rules.
func (r rule) costly() bool { return r.name == "backoff" || r.name == "abandoned" }

// bdReady counts what `bd ready -u` lists: the open issues assigned to
// nobody that pass bd's own rules (every rule of s but the status, the
// assignee, the failure policy's and the agent's filters: s is built
// without filters).
func (s readySpec) bdReady() sq.SelectBuilder {
	bds := s.without(func(r rule) bool { return r.name == "status" || r.name == "assignee" || r.costly() })
	return sq.Select("count(*)").From(s.from).Where(bds.where()).Where("i.status = 'open'").Where(unassigned)
}

// byID selects issue id when it is claimable.
func (s readySpec) byID(id string) sq.SelectBuilder {
	return s.narrow(s.candidates().Where(sq.Eq{"i.id": id}).Limit(1), id)
}

// narrow makes b, a query on issue id, read the flavor's rows of that id
// only.
func (s readySpec) narrow(b sq.SelectBuilder, id string) sq.SelectBuilder {
	if s.fromOf == nil {
		return b
	}
	return b.FromSelect(s.fromOf(id), "i")
}

// verdicts evaluates every rule for one issue: one 0/1 column per rule.
func (s readySpec) verdicts(id string) sq.SelectBuilder {
	b := s.narrow(sq.Select().From(s.from).Where(sq.Eq{"i.id": id}), id)
	for _, r := range s.rules {
		b = b.Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END", r.pred))
	}
	return b
}
