package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// The query shapes of a SQLite claim over a readiness spec (engine.Spec),
// and how a claim and its lease are read from the events.

// walk is a spec as a claim-next sorts its candidates: whether it may walk
// bd's index on created_at (the index is there, and the crowd is large:
// tx.crowded).
type walk struct {
	engine.Spec
	byAge bool
}

// walkSize is how many of the oldest issues a claim walks in age order
// (nextK) before it sorts the candidates instead.
const walkSize = 4096

// crowdSize is how many open candidates (of the priority, for the
// priority order) make nextK walk rather than sort.
const crowdSize = 2048

// fewLabelled is how few issues with every --label make nextK sort them
// alone rather than the open issues of the priority.
const fewLabelled = 1024

// nextK selects the first k claimable issues of s. For the priority order it
// first narrows to the most urgent priority that has a claimable issue:
// min() walks idx_issues_status_priority and stops at the first match, so
// only that priority's issues are ordered by age, not every open issue.
// The failure policy's rules, which look up events, are checked last: on
// the ordered candidates, one at a time, until one passes (the LIMIT keeps
// SQLite from merging the two levels).
// The orders that follow age once narrowed (priority, oldest) walk
// idx_issues_created_at among the walkSize oldest issues (every issue
// created up to the walkSize-th oldest's created_at: a prefix of the order,
// ties included) and stop at the k-th that passes, where sorting every
// candidate by age costs the whole priority's issues (all open issues at
// 100k of one priority: 160ms, the walk 1ms). The claimable issues the
// walk finds are the first of the claim order; only when it finds none
// (every old issue is closed, held or of another priority) are the
// candidates sorted, as the hybrid order always is. The walk is taken
// only for a crowd of at least crowdSize open candidates: fewer are
// sorted faster than the walk skips the other issues. A workspace
// without the index (flavor.byAge) always sorts. With --label, when fewer
// than fewLabelled issues carry every label, those alone are sorted.
func nextK(s walk, k uint64) sq.SelectBuilder {
	cheap, costly := s.Split()
	// first selects the first k of b's candidates that pass the costly
	// rules, in order; and none unless when, a constant condition, holds
	// (nil: always). A LIMIT is computed once, before SQLite walks or
	// sorts: a subquery in a WHERE clause would be checked on every row.
	first := func(b sq.SelectBuilder, when sq.Sqlizer, k uint64) sq.SelectBuilder {
		n := k
		if len(costly) > 0 {
			n = 1 << 62
		}
		if when == nil {
			b = b.Limit(n)
		} else {
			b = b.SuffixExpr(sq.Expr("LIMIT CASE WHEN ? THEN ? ELSE 0 END", when, n))
		}
		if len(costly) == 0 { // a specification Without(Rule.Costly)
			return b
		}
		return sq.Select("i.id").FromSelect(b, "i").Where(costly).Limit(k)
	}
	var ctes []any               // the statement's WITH clause (sq.Sqlizer), each computed once
	var parts []sq.SelectBuilder // its parts, UNION ALL: at most one yields rows
	var gate sq.Sqlizer          // when the parts after the label-driven one run (nil: always)
	and := func(c sq.Sqlizer) sq.Sqlizer {
		if gate == nil {
			return c
		}
		return sq.Expr("? AND ?", gate, c) // gate first: it spares the rest
	}
	if len(s.Labels) > 0 {
		// When few issues have every --label, they are the candidates:
		// read from idx_labels_label_issue (the first label's, the others
		// looked up in the labels' primary key) and sorted in full claim
		// order, instead of checking the labels of every issue of the
		// priority (and of the open issues before it, for the min()).
		has := sq.Select("d.issue_id").From("labels d").Where(sq.Eq{"d.label": s.Labels[0]})
		for _, l := range s.Labels[1:] {
			has = has.Where(sq.Expr("EXISTS (SELECT 1 FROM labels e WHERE e.issue_id = d.issue_id AND e.label = ?)", l))
		}
		ctes = append(ctes, sq.Expr("labelled(issue_id) AS (?)", has.Suffix(fmt.Sprintf("LIMIT %d", fewLabelled))))
		few := sq.Expr(fmt.Sprintf("(SELECT count(*) FROM labelled) < %d", fewLabelled))
		parts = append(parts, first(sq.Select("i.id").From("labelled CROSS JOIN "+s.From+" ON i.id = labelled.issue_id").
			Where(cheap).OrderByClause(s.Order, s.Args...), few, k))
		gate = sq.Expr("NOT ?", few)
	}
	crowd := "w.status = 'open'" // the claim order's crowd: the open issues it walks or sorts
	if s.Sort == engine.SortPriority {
		// One min() per status (open, and in_progress for an expired
		// lease): with an equality on status, each stops at its first
		// match in the index. An in_progress issue matters only when it is
		// more urgent than every claimable open one, and hardly any lease
		// has expired: so the second walk stops at that priority, instead
		// of checking the lease of every issue held at any priority. The
		// inner alias i shadows the outer one: the same rules apply.
		where := s.Where()
		ctes = append(ctes, sq.Expr(`open(p) AS (SELECT COALESCE((SELECT min(i.priority) FROM issues i WHERE i.status = 'open' AND ?), 5)),
	pin(p) AS (SELECT COALESCE((SELECT min(i.priority) FROM issues i WHERE i.status = 'in_progress' AND i.priority < (SELECT p FROM open) AND ?), (SELECT p FROM open)))`, where, where))
		cheap = append(cheap, sq.Expr("i.priority = (SELECT p FROM pin)"))
		crowd += " AND w.priority = (SELECT p FROM pin)"
	}
	sorted := sq.Select("i.id").From(s.From).Where(cheap).OrderByClause(s.Order, s.Args...)
	if s.Sort == engine.SortHybrid || !s.byAge {
		parts = append(parts, first(sorted, gate, k))
	} else {
		walk := sq.Select("i.id").From(s.From+" INDEXED BY idx_issues_created_at").Where(cheap).
			Where(sq.Expr(`i.created_at <= COALESCE(
	(SELECT w.created_at FROM issues w INDEXED BY idx_issues_created_at ORDER BY w.created_at LIMIT 1 OFFSET ?),
	(SELECT max(w.created_at) FROM issues w))`, walkSize-1)).
			OrderBy("i.created_at ASC", "i.id ASC")
		// The walk pays when the crowd is large: a few hundred issues
		// are sorted faster than the walk skips the other priorities'.
		// crowdSize is written in the statement: as bound parameters, the
		// count made SQLite (modernc) take 1ms more at 1k issues.
		crowded := sq.Expr(fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM issues w WHERE %s LIMIT %d)) = %d", crowd, crowdSize, crowdSize))
		// The walk's issues (a CTE, read twice, walked once), or else the
		// sorted candidates.
		ctes = append(ctes, sq.Expr("walked(id) AS (?)", first(walk, and(crowded), k)))
		parts = append(parts, sq.Select("id").From("walked"), first(sorted, and(sq.Expr("NOT EXISTS (SELECT 1 FROM walked)")), k))
	}
	out := parts[len(parts)-1]
	if len(parts) > 1 {
		// A part with its own ORDER BY or LIMIT is a subquery of the compound.
		out = sq.Select("p.id").FromSelect(out, "p")
		for i := len(parts) - 2; i >= 0; i-- {
			out = sq.Select("p.id").FromSelect(parts[i], "p").SuffixExpr(sq.Expr("UNION ALL ?", out))
		}
		out = sq.Select("id").FromSelect(out, "u").Limit(k)
	}
	if len(ctes) > 0 {
		out = out.PrefixExpr(sq.Expr("WITH "+strings.TrimSuffix(strings.Repeat("?, ", len(ctes)), ", "), ctes...))
	}
	return out
}

// firstOf selects the first of ids, in their order, that is claimable, on
// SQLite (whose source is the issues table): json_each yields the ids in
// order and, joined first, drives the loop, so the claim stops at the first
// one that passes; an IN list would have SQLite sort every candidate.
func firstOf(s engine.Spec, ids []string) sq.SelectBuilder {
	list, _ := json.Marshal(ids) // a []string always marshals
	return sq.Select("i.id").From("json_each h CROSS JOIN "+s.From).Where("h.json = ?", string(list)).
		Where("i.id = h.value").Where(s.Where()).OrderBy("h.rowid").Limit(1)
}

// claimOrder selects every claimable issue's id in claim order, as one JSON array.
func claimOrder(s engine.Spec) sq.SelectBuilder {
	return sq.Select().Column(sq.Expr("json_group_array(i.id ORDER BY "+s.Order+")", s.Args...)).From(s.From).Where(s.Where())
}

// ownOpen selects a claimable open issue assigned to s's agent: what its
// order holds beyond the shared one's (engine.Spec.Shared). The unary + keeps
// SQLite off idx_issues_status_priority (every open issue) and on
// idx_issues_assignee (the agent's issues).
func ownOpen(s engine.Spec) sq.SelectBuilder {
	return sq.Select("i.id").From(s.From).Where("i.assignee = ? AND +i.status = 'open'", s.Agent).Where(s.Where()).Limit(1)
}

// currentClaim is the id of the claim event of the issue aliased i: its
// latest claimed or status_changed event, found through
// idx_events_issue_type. That id is the claim's fencing token (claim_id);
// its comment carries the lease.
const currentClaim = `(SELECT max(c.id) FROM events c WHERE c.issue_id = i.id AND c.event_type IN ('claimed', 'status_changed'))`

// leaseUntil is the end of the lease of claim event e of issue i, as
// leaseTime text, or NULL: a claim has a lease only when its claim event
// was written by the issue's holder with a lease comment. A claim bd made
// for someone else, or one bd reassigned since, has none.
var leaseUntil = fmt.Sprintf("(CASE WHEN e.actor = i.assignee AND e.comment LIKE %s THEN substr(e.comment, %d, %d) END)",
	engine.LeaseLike, len(engine.LeasePrefix)+1, len(engine.LeaseTime))

// leaseExpired is true for an in_progress issue i whose current claim has
// a lease that has ended at now: the issue may be taken over.
func leaseExpired(now time.Time) sq.Sqlizer {
	return sq.Expr("(i.status = 'in_progress' AND EXISTS (SELECT 1 FROM events e WHERE e.id = "+currentClaim+" AND "+leaseUntil+" <= ?))",
		now.UTC().Format(engine.LeaseTime))
}

// claims selects issue i with its current claim event e (NULLs when it has
// none): the id, the holder, the claim's id, actor, comment and time, its
// lease end (” without a lease) and whether that lease has ended at now.
// Callers add the WHERE clause. Scan the row into stateDest.
func claims(now time.Time) sq.SelectBuilder {
	return sq.Select("i.id", "COALESCE(i.assignee, '')", "i.status", "COALESCE(e.id, 0)", "COALESCE(e.actor, '')",
		"COALESCE(e.comment, '')", "COALESCE(CAST(e.created_at AS TEXT), '')").
		Column("COALESCE(" + leaseUntil + ", '')").
		Column(sq.Expr("COALESCE("+leaseUntil+" <= ?, 0)", now.UTC().Format(engine.LeaseTime))).
		From("issues i").LeftJoin("events e ON e.id = " + currentClaim)
}

// stateDest is where a row of claims is scanned into c.
func stateDest(c *engine.State) []any {
	return []any{&c.IssueID, &c.Holder, &c.Status, &c.ID, &c.Actor, &c.Comment, &c.At, &c.Until, &c.Expired}
}

// queueTTL bounds how long a remembered claim order is trusted: readiness
// can also change with the clock alone (a defer_until passing, the 48h
// boundary of the hybrid order), which no write announces.
const queueTTL = time.Second

// order remembers the claim order between claims of one engine. Sorting the
// candidates costs time in proportion to the open issues of the top
// priority; a Store that claims again and again with the same filters,
// for one agent or many, while no other connection has written (PRAGMA data_version is
// unchanged, and the engine's own commits do not change it) and within
// queueTTL, takes the next id of the order it already has, after checking
// that issue against the claiming agent's specification inside the
// transaction. The order is the one every agent with those filters shares
// (engine.Spec.Shared): an agent that also has an open issue assigned to it
// sorts afresh instead.
type order struct {
	version int64
	at      time.Time
	ids     []string            // the remaining order; nil until the second claim asks for it
	gone    map[string]struct{} // ids the engine has claimed since, for any agent (see orders.taken)
	// alone are the agents found, since version and at, to have no
	// claimable open issue of their own, so that the order is theirs too.
	// Only another connection's write (a new version) can assign one: the
	// engine's own writes assign an issue as they claim it.
	alone map[string]struct{}
}

// next returns the id of the next issue to claim (ok false when there is
// none), from the order or else from sorted (a sort of the candidates
// afresh). It runs inside the claim's write transaction t, so nothing else
// can write meanwhile.
func (q *order) next(t *tx, spec engine.Spec, sorted func() (string, bool, error)) (id string, ok bool, err error) {
	var version int64
	verr := t.conn.QueryRowContext(t.ctx, "PRAGMA data_version").Scan(&version)
	if verr != nil || q.version != version || t.now.Sub(q.at) >= queueTTL || t.now.Before(q.at) {
		// A first claim, or the world moved (or its version could not be
		// read): sort afresh, and let the next claim build the whole order
		// if nothing changes until then.
		q.version, q.at, q.ids, q.gone, q.alone = version, t.now, nil, nil, nil
	} else if id, ok, err = q.walk(t, spec); ok || err != nil {
		return id, ok, err
	}
	// Sorted afresh too when the order is spent: an issue that became
	// claimable through the engine's own connection (its release) is not in
	// it.
	id, ok, err = sorted()
	return id, ok, errors.Join(verr, err)
}

// walk returns the first id of the order that is still claimable, building
// the order when the claim before only started it. Once none is left it
// drops the order (nil), so that the next claim builds it again.
func (q *order) walk(t *tx, spec engine.Spec) (id string, ok bool, err error) {
	if _, alone := q.alone[spec.Agent]; !alone && spec.Agent != "" {
		// An agent with a claimable open issue of its own has an order of
		// its own: it sorts afresh.
		if own, err := engine.Found(engine.QueryRow(t.ctx, t.conn, ownOpen(spec)).Scan(&id)); own || err != nil {
			return "", false, err
		}
		if q.alone == nil {
			q.alone = map[string]struct{}{}
		}
		q.alone[spec.Agent] = struct{}{}
	}
	if q.ids == nil {
		var list string
		if err := engine.QueryRow(t.ctx, t.conn, claimOrder(spec.Shared())).Scan(&list); err != nil {
			return "", false, err
		}
		q.ids = []string{}
		_ = json.Unmarshal([]byte(list), &q.ids) // SQLite's json_group_array output
	}
	for len(q.ids) > 0 {
		if _, gone := q.gone[q.ids[0]]; gone {
			delete(q.gone, q.ids[0])
			q.ids = q.ids[1:]
			continue
		}
		if ok, err = engine.Found(engine.QueryRow(t.ctx, t.conn, spec.ByID(q.ids[0])).Scan(&id)); ok || err != nil {
			return id, ok, err
		}
		q.ids = q.ids[1:] // no longer claimable
	}
	q.ids = nil
	return "", false, nil
}

// maxOrders bounds the orders an engine remembers, one per set of filters.
const maxOrders = 64

// orders are an engine's remembered orders, by filters (Spec.Key): agents
// that claim with the same filters share one, so that eight agents sort
// once, not eight times.
type orders map[string]*order

// of returns the order for spec, starting over when too many are kept.
func (qs *orders) of(spec engine.Spec) *order {
	q := (*qs)[spec.Key]
	if q == nil {
		if len(*qs) >= maxOrders {
			*qs = orders{}
		}
		q = &order{}
		(*qs)[spec.Key] = q
	}
	return q
}

// taken tells every order of the engine that it claimed issue id at now:
// the engine's own commits leave PRAGMA data_version unchanged, so the
// orders of its other filters would otherwise look the issue up again,
// inside the lock, to find it taken. The claim's own order has it in
// front. An order past queueTTL is dropped instead (its next claim sorts
// afresh anyway), so that an idle order does not grow with everyone
// else's claims.
func (qs orders) taken(id string, now time.Time) {
	for _, q := range qs {
		switch {
		case now.Sub(q.at) >= queueTTL:
			q.ids, q.gone = nil, nil
		case len(q.ids) > 0 && q.ids[0] == id:
			q.ids = q.ids[1:]
		case q.ids != nil:
			if q.gone == nil {
				q.gone = map[string]struct{}{}
			}
			q.gone[id] = struct{}{}
		}
	}
}

// claimed reads issue id for a claim: the row, and, when it is
// in_progress (a takeover of an expired lease), its claim. The engine's
// remembered orders learn of the claim once it commits.
func (t *tx) claimed(id string) (*engine.Row, error) {
	t.committed = append(t.committed, func() { t.e.orders.taken(id, t.now) })
	r, err := t.Read(id)
	if err != nil || r.Status != "in_progress" {
		return r, err
	}
	c, err := t.State(id)
	r.Claim = &c
	return r, err
}

// crowded lets a sort of the candidates (nextK) walk the age index only
// where a crowd may be: crowdSize open issues or more, of the most urgent
// open priority for the priority order. Elsewhere the plain sort's
// statement is the cheaper to prepare (about half a millisecond of every
// claim process) and to run. The statement's own crowd check, on the
// claimable issues, still decides whether it walks. Only a sort asks: a
// claim that takes a candidate read ahead or a remembered one does not.
func (t *tx) crowded(spec engine.Spec) (walk, error) {
	w := walk{Spec: spec}
	if !t.e.flavor.byAge || spec.Sort == engine.SortHybrid {
		return w, nil
	}
	count := t.e.q.IssueOpenCrowd
	if spec.Sort == engine.SortPriority {
		count = t.e.q.IssueTopPriorityCrowd
	}
	n, err := count(t.ctx, t.conn, crowdSize)
	w.byAge = n >= crowdSize
	return w, err
}

// first sorts the candidates afresh and selects the first claimable one.
func (t *tx) first(spec engine.Spec) (id string, ok bool, err error) {
	w, err := t.crowded(spec)
	if err == nil {
		ok, err = engine.Found(engine.QueryRow(t.ctx, t.conn, nextK(w, 1)).Scan(&id))
	}
	return id, ok, err
}

// Next takes the first claimable of head; else a look (a dry run) sorts
// the candidates, and a claim takes the next of the engine's remembered
// order for spec (orders).
func (t *tx) Next(spec engine.Spec, head []string) (*engine.Row, error) {
	var id string
	var ok bool
	var err error
	if len(head) > 0 {
		ok, err = engine.Found(engine.QueryRow(t.ctx, t.conn, firstOf(spec, head)).Scan(&id))
	}
	switch {
	case err != nil || ok:
	case t.try == 0:
		id, ok, err = t.first(spec)
	default:
		id, ok, err = t.e.orders.of(spec).next(t, spec, func() (string, bool, error) { return t.first(spec) })
	}
	if err != nil || !ok {
		return nil, err
	}
	return t.claimed(id)
}

// Find reads issue id when spec admits it.
func (t *tx) Find(spec engine.Spec, id string) (*engine.Row, error) {
	ok, err := engine.Found(engine.QueryRow(t.ctx, t.conn, spec.ByID(id)).Scan(&id))
	if err != nil || !ok {
		return nil, err
	}
	return t.claimed(id)
}

// Ahead reads, before the write lock is taken, the first candidates of an
// engine's first claim-next (a claim process's only one): inside the lock,
// the claim then only checks them in order, in one statement (firstOf),
// and sorts the candidates afresh only when none is claimable any more.
// The lock is held for a few lookups instead of the sort, which is most of
// a claim's work. Later claims of an engine use its remembered order
// instead (orders). A candidate that became claimable after the read,
// however urgent, waits for the next claim, as if the claim had run at the
// read. It reads them on the writers' queue's deck (writers.Queue.Deck),
// which it returns: only the writes of the two writers ahead (and any
// write that does not queue on the deck: bd's, a release, an --id claim)
// come between the read and the claim's turn, where a claim that read on
// arrival would find the candidates taken by every writer queued before
// it, and sort afresh.
func (e *Engine) Ahead(ctx context.Context, spec engine.Spec) (engine.Ahead, error) {
	if !e.readAhead.CompareAndSwap(false, true) {
		return engine.Ahead{}, nil
	}
	d := deck{at: time.Now()}
	d.place, _ = e.queue().Deck(e.queueWait()) // a missed deck leaves no time for the turn
	a := engine.Ahead{Place: d, Leave: d.place.Leave}
	t := e.tx(ctx, nil)
	// Without the failure policy's rules: the lookups they make per
	// candidate were half of this read, and inside the lock firstOf
	// checks the candidates against every rule anyway.
	walk, err := t.crowded(spec.Without(engine.Rule.Costly))
	if err == nil {
		var id string
		err = engine.Each(ctx, t.conn, nextK(walk, headSize), []any{&id}, func() { a.IDs = append(a.IDs, id) })
	}
	if err != nil {
		d.place.Leave()
		return engine.Ahead{}, err
	}
	return a, nil
}
