package engine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// Sort is the order in which ready issues are handed out.
type Sort string

// The sort policies. SortPriority is bd-claim's default; SortHybrid and
// SortOldest reproduce `bd ready --sort hybrid|oldest`.
const (
	SortPriority Sort = "priority" // priority ASC, created_at ASC, id ASC
	SortHybrid   Sort = "hybrid"   // issues created in the last 48h by priority, then older ones by age
	SortOldest   Sort = "oldest"   // created_at ASC, id ASC
)

// Rule is one condition an issue must meet to be claimed, with the reason
// given when it does not.
type Rule struct {
	Name   string     // stable key: status, blocked, pinned, label:NAME...
	Reason string     // what a refused --id claim says when the rule fails
	Pred   sq.Sqlizer // true for issues that pass; the issues row is aliased i
}

// Costly says whether r is one of the failure policy's rules, which look
// up events and labels: those are best checked on sorted candidates only,
// until enough pass.
func (r Rule) Costly() bool { return r.Name == "backoff" || r.Name == "abandoned" }

// Spec is the one definition of "claimable" that claim-next, --id,
// --dry-run, --explain and stats share, as package claim builds it for a
// request (its rules, their names and reasons, in order) over an engine's
// Flavor: bd ready's predicate for the workspace's bd, plus status open (or
// in_progress under an expired lease), the assignee rule, the failure
// policy and the agent's filters. Each engine runs it in the query shapes
// of its own (its claim-next's), over the generic ones here.
type Spec struct {
	Rules  []Rule
	Order  string // ORDER BY clause
	Args   []any  // arguments of Order
	Sort   Sort
	Labels []string                         // the labels every claimable issue has (the --label filters)
	From   string                           // the rows a claim chooses from, aliased i (Flavor.Source)
	FromOf func(id string) sq.SelectBuilder // those rows narrowed to one id (Flavor.SourceOf), or nil
	Agent  string                           // the agent whose open issues the assignee rule admits ("" with --unassigned)
	// Unassigned is the assignee rule as it reads for an agent that holds
	// no open issue of its own: an issue assigned to nobody (or held: a
	// takeover).
	Unassigned sq.Sqlizer
	Clear      sq.Sqlizer // a cheap condition under which the failure policy's rules hold (Policy.Clear)
	// Key names the filters the spec was built with: agents with the same
	// key judge every issue they do not hold alike (Shared), and may share
	// one claim order.
	Key string
}

// Without is s less the rules that drop says to leave out.
func (s Spec) Without(drop func(Rule) bool) Spec {
	s.Rules = slices.DeleteFunc(slices.Clone(s.Rules), drop)
	return s
}

// Where is the conjunction of every rule.
func (s Spec) Where() sq.And {
	where := make(sq.And, len(s.Rules))
	for i, r := range s.Rules {
		where[i] = r.Pred
	}
	return where
}

// Candidates selects the claimable issues in claim order.
func (s Spec) Candidates() sq.SelectBuilder {
	return sq.Select("i.id").From(s.From).Where(s.Where()).OrderByClause(s.Order, s.Args...)
}

// Split parts the rules into the cheap ones and the failure policy's.
func (s Spec) Split() (cheap, costly sq.And) {
	for _, r := range s.Rules {
		if r.Costly() {
			costly = append(costly, r.Pred)
		} else {
			cheap = append(cheap, r.Pred)
		}
	}
	return cheap, costly
}

// ByID selects issue id when it is claimable.
func (s Spec) ByID(id string) sq.SelectBuilder {
	return s.narrow(s.Candidates().Where(sq.Eq{"i.id": id}).Limit(1), id)
}

// narrow makes b, a query on issue id, read the flavor's rows of that id
// only.
func (s Spec) narrow(b sq.SelectBuilder, id string) sq.SelectBuilder {
	if s.FromOf == nil {
		return b
	}
	return b.FromSelect(s.FromOf(id), "i")
}

// Verdicts evaluates every rule for one issue: one 0/1 column per rule.
func (s Spec) Verdicts(id string) sq.SelectBuilder {
	b := s.narrow(sq.Select().From(s.From).Where(sq.Eq{"i.id": id}), id)
	for _, r := range s.Rules {
		b = b.Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END", r.Pred))
	}
	return b
}

// Shared is s as every agent with s's filters sees it: the assignee rule
// admits only the issues assigned to nobody (or held: a takeover), which
// each of those agents' specifications judges alike and orders alike.
func (s Spec) Shared() Spec {
	s.Rules = slices.Clone(s.Rules)
	for i, r := range s.Rules {
		if r.Name == "assignee" {
			s.Rules[i].Pred = s.Unassigned
		}
	}
	s.Agent = ""
	return s
}

// Ready counts, for a spec built for a new agent without filters, the
// claimable issues (its issues of each priority 0 to 4, and how many of
// them are in_progress: takeovers), and the open issues that bd ready -u
// lists (every rule but the status, the assignee and the failure policy's,
// of the open issues assigned to nobody): Scan them with Figures.
func (s Spec) Ready() sq.SelectBuilder {
	bds := s.Without(func(r Rule) bool { return r.Name == "status" || r.Name == "assignee" || r.Costly() })
	bdReady := sq.Select("count(*)").From(s.From).Where(bds.Where()).Where("i.status = 'open'").Where(s.Unassigned)
	b := sq.Select("COALESCE(sum(i.status = 'in_progress'), 0)").From(s.From).Where(s.Where())
	for p := range Priorities {
		b = b.Column(sq.Expr("COALESCE(sum(i.priority = ?), 0)", p))
	}
	return b.Column(sq.Expr("(?)", bdReady))
}

// Priorities is how many priorities bd has: 0 (critical) to 4 (backlog).
const Priorities = 5

// Explain counts, over the open and in_progress issues, the open ones
// (open), those the status rule admits (open plus expired leases), the
// claimable ones, and, for every rule but the status, the open issues it
// excludes: one 0/1 column per rule and issue, summed outside (Dolt refuses
// a subquery inside an aggregate, only_full_group_by).
func (s Spec) Explain() sq.SelectBuilder {
	inner := sq.Select().From(s.From).Where("i.status IN ('open', 'in_progress')").
		Column("CASE WHEN i.status = 'open' THEN 1 ELSE 0 END AS o").
		Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END AS s", s.Rules[0].Pred)).
		Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END AS w", s.Where()))
	outer := sq.Select("COALESCE(sum(x.o), 0)", "COALESCE(sum(x.s), 0)", "COALESCE(sum(x.w), 0)")
	for i, r := range s.Rules[1:] {
		inner = inner.Column(sq.Expr(fmt.Sprintf("CASE WHEN i.status = 'open' AND NOT COALESCE(?, 0) THEN 1 ELSE 0 END AS r%d", i), r.Pred))
		outer = outer.Column(fmt.Sprintf("COALESCE(sum(x.r%d), 0)", i))
	}
	return outer.FromSelect(inner, "x")
}

// The reads of a Spec and of the failure policy that every engine runs
// alike, on its own handle: the engines' Tx methods of the same names.

// ReadVerdicts evaluates every rule of spec for issue id (Tx.Verdicts).
func ReadVerdicts(ctx context.Context, q Querier, spec Spec, id string) ([]bool, error) {
	verdicts := make([]any, len(spec.Rules))
	for i := range verdicts {
		verdicts[i] = new(bool)
	}
	if err := QueryRow(ctx, q, spec.Verdicts(id)).Scan(verdicts...); err != nil {
		return nil, err
	}
	out := make([]bool, len(verdicts))
	for i, v := range verdicts {
		out[i] = *v.(*bool)
	}
	return out, nil
}

// ReadFailures reads issue id's failure history under policy p, its events
// read as h spells them and dated in eventTime's layout (Tx.Failures); an
// id outside the issues table has none.
func ReadFailures(ctx context.Context, q Querier, p Policy, h History, eventTime, id string, now time.Time) (FailureHistory, error) {
	var a AttemptsRow
	_, err := Found(QueryRow(ctx, q, p.Attempts(h, sq.Eq{"i.id": id}, now)).Scan(a.Dest()...))
	return a.Done(eventTime), err
}

// ReadFigures reads the counts of stats over spec, the readiness of a new
// agent without filters (Tx.Figures), but for the events, which are the
// engine's to count: the open and blocked issues (notBlocked is the
// flavor's rule), the ready ones, and the failure histories of the open
// issues that have one.
func ReadFigures(ctx context.Context, q Querier, spec Spec, notBlocked Rule, p Policy, h History, eventTime string, now time.Time) (Figures, error) {
	var f Figures
	b := sq.Select("count(*)").Column(sq.Expr("COALESCE(sum(NOT ?), 0)", notBlocked.Pred)).From(spec.From).Where("i.status = 'open'")
	if err := QueryRow(ctx, q, b).Scan(&f.Open, &f.Blocked); err != nil {
		return f, err
	}
	dest := []any{&f.Takeovers}
	for p := range f.ReadyByPriority {
		dest = append(dest, &f.ReadyByPriority[p])
	}
	if err := QueryRow(ctx, q, spec.Ready()).Scan(append(dest, &f.BdReady)...); err != nil {
		return f, err
	}
	var r AttemptsRow
	err := Each(ctx, q, p.Attempts(h, sq.Expr("i.status = 'open'"), now).Where("n > 0 OR labelled").OrderBy("id"), r.Dest(), func() {
		f.Failing = append(f.Failing, Failing{ID: r.ID, FailureHistory: r.Done(eventTime)})
	})
	return f, err
}

// ReadExplained counts what each rule of spec excludes (Tx.Explain).
func ReadExplained(ctx context.Context, q Querier, spec Spec) (Explained, error) {
	e := Explained{Excluded: make([]int, len(spec.Rules)-1)}
	dest := []any{&e.Open, &e.Admitted, &e.Claimable}
	for i := range e.Excluded {
		dest = append(dest, &e.Excluded[i])
	}
	return e, QueryRow(ctx, q, spec.Explain()).Scan(dest...)
}

// Found is the one place where "no row" is told from a failure: it maps
// sql.ErrNoRows to ok = false and a nil error.
func Found(err error) (ok bool, _ error) {
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Querier runs queries: a pool, a connection, a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// QueryRow runs a squirrel query built by this package or an engine's
// (always valid SQL).
func QueryRow(ctx context.Context, q Querier, b sq.SelectBuilder) *sql.Row {
	query, args := b.MustSql()
	return q.QueryRowContext(ctx, query, args...)
}

// Each runs a squirrel query and, for each of its rows, scans it into dest
// and calls row.
func Each(ctx context.Context, q Querier, b sq.SelectBuilder, dest []any, row func()) error {
	query, args := b.MustSql()
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for err == nil && rows.Next() {
		if err = rows.Scan(dest...); err == nil {
			row()
		}
	}
	return cmp.Or(err, rows.Err())
}
