package claim

import (
	"context"
	"fmt"

	sq "github.com/Masterminds/squirrel"
)

// Explanation says why a claim finds what it finds: of the open issues,
// how many each rule of the readySpec excludes (an issue failing
// several rules counts under each), and the agent's capacity.
type Explanation struct {
	Open      int            `json:"open"`           // open issues
	Expired   int            `json:"expired_leases"` // in_progress issues whose lease has expired (claimable by takeover)
	Claimable int            `json:"claimable"`      // issues the claim could take now
	Excluded  map[string]int `json:"excluded"`       // rule → open issues it excludes; capacity → claimable issues it withholds
	Held      int            `json:"held"`           // in_progress issues the agent holds
	MaxHeld   int            `json:"max_held"`       // the request's limit (0 = none)
}

// Explain evaluates req's specification over the whole workspace. It reads
// only. Its cost grows with the open issues: it is for people debugging a
// swarm, not for every claim.
func (s *Store) Explain(ctx context.Context, req Request) (Explanation, error) {
	if err := req.Validate(); err != nil {
		return Explanation{}, err
	}
	if err := s.admit(ctx, req.Filters); err != nil {
		return Explanation{}, err
	}
	e := Explanation{Excluded: map[string]int{}, MaxHeld: req.MaxHeld}
	err := s.look(ctx, "explain the claim", func(t *txn) error {
		spec := newReadySpec(t.flavor, req.Agent, req.Filters, t.policy, t.now)
		// One 0/1 column per rule and issue, summed outside: Dolt refuses
		// a subquery inside an aggregate (only_full_group_by).
		inner := sq.Select().From(spec.from).Where("i.status IN ('open', 'in_progress')").
			Column("CASE WHEN i.status = 'open' THEN 1 ELSE 0 END AS o").
			Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END AS s", spec.rules[0].pred)).
			Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END AS w", spec.where()))
		outer := sq.Select("COALESCE(sum(x.o), 0)", "COALESCE(sum(x.s), 0)", "COALESCE(sum(x.w), 0)")
		rules := spec.rules[1:] // every rule but status: the count is of open issues
		for i, r := range rules {
			inner = inner.Column(sq.Expr(fmt.Sprintf("CASE WHEN i.status = 'open' AND NOT COALESCE(?, 0) THEN 1 ELSE 0 END AS r%d", i), r.pred))
			outer = outer.Column(fmt.Sprintf("COALESCE(sum(x.r%d), 0)", i))
		}
		b := outer.FromSelect(inner, "x")
		var withExpired int
		counts := make([]int, len(rules))
		dest := []any{&e.Open, &withExpired, &e.Claimable}
		for i := range counts {
			dest = append(dest, &counts[i])
		}
		if err := t.queryRow(b).Scan(dest...); err != nil {
			return err
		}
		e.Expired = withExpired - e.Open
		for i, r := range rules {
			e.Excluded[r.name] += counts[i]
		}
		held, err := t.x.heldCount(req.Agent)
		if err != nil {
			return err
		}
		e.Held = int(held)
		if req.MaxHeld > 0 {
			e.Excluded["capacity"] = 0
			if atCapacity(req.Agent, held, req.MaxHeld) != "" {
				e.Excluded["capacity"], e.Claimable = e.Claimable, 0
			}
		}
		return nil
	})
	return e, err
}
