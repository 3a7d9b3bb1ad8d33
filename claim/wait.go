package claim

import (
	"context"
	"fmt"
	"time"
)

// How a waiting claim watches the database: PRAGMA data_version (a read
// of one counter, no query) every pause, the pause doubling from
// waitPauseMin to waitPauseMax while nothing changes; a full look when it
// changes, and at least every waitLookEvery, since backoffs, leases and
// defer_until end with the clock alone.
const (
	waitPauseMin  = 10 * time.Millisecond
	waitPauseMax  = 500 * time.Millisecond
	waitLookEvery = 2 * time.Second
)

// wait keeps trying req until an issue is claimed, req.Wait passes (a nil
// Issue, with the reason) or ctx is cancelled (INTERRUPTED). It looks with
// a read first and takes the write lock only when the read finds an issue.
func (s *Store) wait(ctx context.Context, req Request, last Result) (Result, error) {
	conn, err := s.conn.Conn(ctx)
	if err != nil {
		return Result{}, classify(err, "wait for an issue")
	}
	defer conn.Close()
	version := func() (v int64) {
		_ = conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v) // on error: 0, and the timed look still runs
		return v
	}
	deadline := time.NewTimer(req.Wait)
	defer deadline.Stop()
	tick := time.NewTimer(waitPauseMin)
	defer tick.Stop()
	seen, looked, pause := version(), time.Now(), waitPauseMin
	for {
		select {
		case <-ctx.Done():
			return Result{}, classify(ctx.Err(), "claim an issue while waiting")
		case <-deadline.C:
			last.Reason = fmt.Sprintf("nothing became claimable within %s", req.Wait) + suffix(last.Reason)
			return last, nil
		case <-tick.C:
		}
		if v := version(); v != seen || time.Since(looked) >= waitLookEvery {
			seen, looked, pause = v, time.Now(), waitPauseMin
			look := req
			look.DryRun = true
			res, err := s.claimOnce(ctx, look)
			if err == nil && res.Issue != nil && !req.DryRun {
				res, err = s.claimOnce(ctx, req)
			}
			if err != nil || res.Issue != nil {
				return res, err
			}
			last = res
		} else {
			pause = min(2*pause, waitPauseMax)
		}
		tick.Reset(pause)
	}
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
