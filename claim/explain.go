package claim

import (
	"context"

	sq "github.com/Masterminds/squirrel"
)

// Explanation says why a claim finds what it finds: of the open issues,
// how many each rule of the ReadySpecification excludes (an issue failing
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
	if err := req.validate(); err != nil {
		return Explanation{}, err
	}
	spec := NewReadySpecification(s.Features, req.Agent, req.Filters, s.policy, s.now())
	b := sq.Select().From("issues i").Where("i.status IN ('open', 'in_progress')").
		Column("COALESCE(sum(i.status = 'open'), 0)").
		Column(sq.Expr("COALESCE(sum(CASE WHEN ? THEN 1 ELSE 0 END), 0)", spec.Rules[0].Pred)).
		Column(sq.Expr("COALESCE(sum(CASE WHEN ? THEN 1 ELSE 0 END), 0)", spec.Where()))
	var rules []Rule
	for _, r := range spec.Rules[1:] { // every rule but status: the count is of open issues
		rules = append(rules, r)
		b = b.Column(sq.Expr("COALESCE(sum(CASE WHEN i.status = 'open' AND NOT COALESCE(?, 0) THEN 1 ELSE 0 END), 0)", r.Pred))
	}
	var open, withExpired int
	e := Explanation{Excluded: map[string]int{}, MaxHeld: req.MaxHeld}
	counts := make([]int, len(rules))
	dest := []any{&open, &withExpired, &e.Claimable}
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	conn := s.on(nil)
	if err := queryRow(ctx, conn, b).Scan(dest...); err != nil {
		return e, classify(err, "explain the claim")
	}
	e.Open, e.Expired = open, withExpired-open
	for i, r := range rules {
		e.Excluded[r.Name] += counts[i]
	}
	held, err := s.q.IssueHeldCount(ctx, conn, req.Agent)
	if err != nil {
		return e, classify(err, "explain the claim")
	}
	e.Held = int(held)
	if req.MaxHeld > 0 {
		e.Excluded["capacity"] = 0
		if e.Held >= req.MaxHeld {
			e.Excluded["capacity"], e.Claimable = e.Claimable, 0
		}
	}
	return e, nil
}
