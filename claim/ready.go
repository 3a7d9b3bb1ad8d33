package claim

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// spec is the readiness spec of the Store's workspace for agent and f, as
// of now (ReadySpec).
func (s *Store) spec(agent string, f Filters, now time.Time) engine.Spec {
	return ReadySpec(s.flavor, s.policy, agent, f, now)
}

// specs are the specifications one claim's transaction reads, as of now:
// ready, the readiness spec widened by el (readySpec), and, for a
// --resume, held (heldSpec).
func (s *Store) specs(req Request, now time.Time, el engine.Eligible) (ready, held engine.Spec) {
	ready = readySpec(s.flavor, s.policy, req.Agent, req.Filters, now, el)
	if req.Resume {
		held = heldSpec(s.flavor, req.Filters)
	}
	return ready, held
}

// ReadySpec is the one definition of "claimable" that claim-next, --id,
// --dry-run, --explain and stats share (engine.Spec), for a workspace of
// flavor fl under the failure policy p: bd ready's rules for the
// workspace's bd, plus status open (or in_progress under an expired
// lease), the assignee rule, the failure policy and agent's filters f
// (validated), as of now. This is the one place that names the rules, says
// why each refuses, and puts them in order.
func ReadySpec(fl engine.Flavor, p Policy, agent string, f Filters, now time.Time) engine.Spec {
	return readySpec(fl, p, agent, f, now, engine.Eligible{})
}

// readySpec is ReadySpec, widened by what the workspace's bd also lets a
// claim by id take (el): the issues of the other statuses it takes an
// issue from, and those assigned to one of the assignees any agent may
// take an issue from. A claim-next passes none.
func readySpec(fl engine.Flavor, p Policy, agent string, f Filters, now time.Time, el engine.Eligible) engine.Spec {
	nowText := fl.EventAt(now) // in the form of the database's datetime()
	spec := specOf(fl, f)
	add := func(name, reason string, pred sq.Sqlizer) {
		spec.Rules = append(spec.Rules, engine.Rule{Name: name, Reason: reason, Pred: pred})
	}
	// The IN term keeps idx_issues_status_priority usable; an in_progress
	// issue passes only once its asked lease has expired (a takeover).
	if len(el.Statuses) == 0 {
		add("status", "its status is not open", sq.Expr("(i.status IN ('open', 'in_progress') AND (i.status = 'open' OR ?))", fl.LeaseExpired(now)))
	} else {
		from := append([]string{"open"}, el.Statuses...)
		add("status", "its status is not "+strings.Join(from, " or "),
			sq.Expr("(? AND (? OR ?))", sq.Eq{"i.status": append(slices.Clone(from), "in_progress")}, sq.Eq{"i.status": from}, fl.LeaseExpired(now)))
	}
	spec.Rules = append(spec.Rules, fl.NotBlocked)
	if fl.External != nil {
		spec.Rules = append(spec.Rules, fl.External()...)
	}
	switch {
	case f.OnlyUnassigned:
		add("assignee", "it is already assigned", unassigned)
	case len(el.Pools) > 0:
		add("assignee", "it is assigned to someone else", sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.assignee = ? OR ? OR i.status = 'in_progress')", agent, sq.Eq{"i.assignee": el.Pools}))
		spec.Agent = agent
	default:
		add("assignee", "it is assigned to someone else", sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.assignee = ? OR i.status = 'in_progress')", agent))
		spec.Agent = agent
	}
	// bd ready's exclusions: with a type filter, bd ready lists the types
	// it otherwise excludes, and ignores --exclude-type; with
	// --include-deferred it drops its deferral rules.
	spec.Rules = append(spec.Rules, fl.Ready...)
	if len(fl.ExcludedTypes) > 0 && len(f.Types) == 0 {
		add("excluded_type", "its type ("+strings.Join(fl.ExcludedTypes, ", ")+") is never ready", sq.NotEq{"i.issue_type": fl.ExcludedTypes})
	}
	if fl.Deferral != nil && !f.IncludeDeferred {
		spec.Rules = append(spec.Rules, fl.Deferral(nowText)...)
	}
	spec.Rules = append(spec.Rules, p.Rules(fl.History, now)...)
	spec.Clear = p.Clear(fl.History)
	spec.Rules = append(spec.Rules, filterRules(fl, f)...)
	spec.Order, spec.Args = order(fl, f.Sort, nowText)
	return spec
}

// specOf is a specification of the rows of a workspace of flavor fl for
// the filters f, without a rule yet.
func specOf(fl engine.Flavor, f Filters) engine.Spec {
	key, _ := json.Marshal(f) // Filters always marshal
	return engine.Spec{Sort: f.Sort, Labels: f.IncludeLabels, From: fl.Source, FromOf: fl.SourceOf, Unassigned: unassigned, Key: string(key)}
}

// filterRules are the rules of the filters f (validated) on a workspace of
// flavor fl: what the agent asks of an issue, beyond bd ready's rules.
func filterRules(fl engine.Flavor, f Filters) []engine.Rule {
	var rules []engine.Rule
	add := func(name, reason string, pred sq.Sqlizer) {
		rules = append(rules, engine.Rule{Name: name, Reason: reason, Pred: pred})
	}
	if len(f.ExcludeTypes) > 0 && len(f.Types) == 0 {
		add("exclude_type", "its type is in --exclude-type", sq.NotEq{"LOWER(i.issue_type)": f.ExcludeTypes}) // Validate lowered them
	}
	// hasLabel is true for an issue with a label for which pred (on l) holds.
	hasLabel := func(pred sq.Sqlizer) sq.Sqlizer {
		return sq.Expr("EXISTS (SELECT 1 FROM "+fl.Labels+" l WHERE l.issue_id = i.id AND ?)", pred)
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
		add("label_pattern", fmt.Sprintf("none of its labels matches --label-pattern %q", f.LabelPattern), hasLabel(fl.Glob("l.label", f.LabelPattern)))
	}
	// A filter the flavor has no means for (regexp, metadata nil) never
	// gets here: Store.admit refuses it first (refuse).
	if f.LabelRegex != "" && fl.Regexp != nil {
		add("label_regex", fmt.Sprintf("none of its labels matches --label-regex %q", f.LabelRegex), hasLabel(fl.Regexp("l.label", f.LabelRegex)))
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
	if fl.Metadata != nil {
		if f.HasMetadataKey != "" {
			add("has_metadata_key", fmt.Sprintf("its metadata has no key %q", f.HasMetadataKey), fl.Metadata.Has(f.HasMetadataKey))
		}
		for _, k := range slices.Sorted(maps.Keys(f.MetadataFields)) {
			v := f.MetadataFields[k]
			add("metadata_field:"+k, fmt.Sprintf("its metadata %q is not %q", k, v), fl.Metadata.Field(k, v))
		}
	}
	if f.Parent != "" {
		add("parent", fmt.Sprintf("it is not a descendant of %s", f.Parent), fl.Under(f.Parent))
	}
	return rules
}

// heldSpec is the specification that a held issue of an agent passes for
// a --resume with the filters f to return it: in_progress, and passing
// every rule of f. Whose it is, resumable decides (sameActor: the engine's
// SQL cannot compare spellings as bd does). bd ready's rules and the
// failure policy do not apply: the issue is the agent's already.
func heldSpec(fl engine.Flavor, f Filters) engine.Spec {
	spec := specOf(fl, f)
	spec.Rules = append([]engine.Rule{{Name: "held", Reason: "it is not in_progress", Pred: sq.Expr("i.status = 'in_progress'")}},
		filterRules(fl, f)...)
	return spec
}

// order is the ORDER BY clause (and its arguments) of a sort policy in
// flavor fl, as of now (the flavor's datetime form).
func order(fl engine.Flavor, s Sort, now string) (string, []any) {
	switch s {
	case SortOldest:
		return "i.created_at ASC, i.id ASC", nil
	case SortHybrid:
		return fl.Hybrid(now)
	default:
		return "i.priority ASC, i.created_at ASC, i.id ASC", nil
	}
}

// unassigned is the assignee rule with --unassigned: an issue assigned to
// nobody, or held (whose lease may have expired: a takeover).
var unassigned = sq.Expr("(i.assignee IS NULL OR i.assignee = '' OR i.status = 'in_progress')")
