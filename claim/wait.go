package claim

import (
	"context"
	"fmt"
	"time"
)

// How a waiting claim watches the database: its change signal (changes)
// every pause, the pause doubling from waitPauseMin to waitPauseMax while
// nothing changes; a full look when it changes, and at least every
// waitLookEvery, since backoffs, leases and defer_until end with the clock
// alone.
const (
	waitPauseMin  = 10 * time.Millisecond
	waitPauseMax  = 500 * time.Millisecond
	waitLookEvery = 2 * time.Second
)

// wait tries req until an issue is claimed, req.Wait passes (a nil Issue,
// with the reason; for an --id claim, its last refusal) or ctx is
// cancelled (INTERRUPTED). Each look is a read;
// only a look that finds an issue takes the write lock to claim it.
func (s *Store) wait(ctx context.Context, req Request) (Result, error) {
	changes, stop, err := s.eng.watch(ctx)
	if err != nil {
		return Result{}, s.classify(err, "wait for an issue")
	}
	defer stop()
	deadline := time.NewTimer(req.Wait)
	defer deadline.Stop()
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	look := req
	look.DryRun = true
	for {
		seen, looked := changes(), time.Now()
		res, err := s.claimOnce(ctx, look)
		if err == nil && res.Issue != nil && !req.DryRun {
			res, err = s.claimOnce(ctx, req) // another agent may win it: then wait on
		}
		// An --id claim waits out a holder or a rule too, and reports the
		// last refusal if the wait ends first.
		refused := req.ID != "" && (ErrorCode(err) == EAlready || ErrorCode(err) == ENotClaimable)
		if !refused && (err != nil || res.Issue != nil) {
			return res, err
		}
		for pause := waitPauseMin; ; pause = min(2*pause, waitPauseMax) {
			tick.Reset(pause)
			select {
			case <-ctx.Done():
				return Result{}, s.classify(ctx.Err(), "claim an issue while waiting")
			case <-deadline.C:
				if refused {
					return res, err
				}
				res.Reason = fmt.Sprintf("nothing became claimable within %s", req.Wait) + suffix(res.Reason)
				return res, nil
			case <-tick.C:
			}
			if changes() != seen || time.Since(looked) >= waitLookEvery {
				break
			}
		}
	}
}

// suffix is reason in parentheses after a space, or "" for none or for
// NoReadyIssue, which the wait's own reason says already.
func suffix(reason string) string {
	if reason == NoReadyIssue {
		return ""
	}
	return " (" + reason + ")"
}
