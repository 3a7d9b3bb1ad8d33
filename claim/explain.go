package claim

import (
	"context"

	"github.com/bdclaim/bd-claim/claim/engine"
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
	if err := s.admit(ctx, &req); err != nil {
		return Explanation{}, err
	}
	e := Explanation{Excluded: map[string]int{}, MaxHeld: req.MaxHeld}
	err := s.look(ctx, "explain the claim", func(tx engine.Tx) error {
		spec := s.spec(req.Agent, req.Filters, tx.Now())
		counts, err := tx.Explain(spec)
		if err != nil {
			return err
		}
		e.Open, e.Expired, e.Claimable = counts.Open, counts.Admitted-counts.Open, counts.Claimable
		for i, r := range spec.Rules[1:] { // every rule but status: the count is of open issues
			e.Excluded[r.Name] += counts.Excluded[i]
		}
		held, err := tx.HeldCount(req.Agent)
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
