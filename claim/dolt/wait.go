package dolt

import (
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// DefaultWait is how long a Dolt writer waits for its turn with nothing
// moving, when the Store sets no busy timeout (--timeout-ms not given):
// as long as the writers ahead take their turns, or commits land, it
// waits on. It is twice bd's own budget: `bd ready --claim` and `bd update
// --claim` try their transaction again for 15 s in server and
// proxied-server mode (bd v1.3.0's withRetryTx and uow.RunTxResult),
// counted from their first try, after the seconds a loaded machine takes
// to start bd and open its store (its processes gave up 16-27 s after
// they started, measured on 2 loaded cores), and in those 15 s other
// writers commit all along; a bd-claim writer gives up only when nothing
// moved at all (a writer stuck in its turn, a server that commits
// nothing). An embedded database, which has no such signal, is waited for
// this long in all.
const DefaultWait = 30 * time.Second

// lockRound is a round of a wait for the writers' lock
// (GET_LOCK's wait, in its whole seconds): well under the driver's read
// timeout (config), which drops a connection whose answer is late.
const lockRound = 1

// turnWait is how long a writer waits for its turn: until nothing has
// moved for stall, and, when limit is set, until limit has passed since
// the write began.
type turnWait struct {
	limit time.Duration // the Store's busy timeout (--timeout-ms), counted from the write's start; 0: none
	stall time.Duration // how long nothing may move
}

// waitFor is the wait of a Store's busy timeout: its own (a limit, and as
// long a stall), none when negative, DefaultWait's stall when 0.
func waitFor(busy time.Duration) turnWait {
	switch {
	case busy < 0:
		return turnWait{}
	case busy == 0:
		return turnWait{stall: DefaultWait}
	}
	return turnWait{limit: busy, stall: busy}
}

// until is when a wait that began at began, whose last move was at moved,
// gives up.
func (w turnWait) until(began, moved time.Time) time.Time {
	end := moved.Add(w.stall)
	if limit := began.Add(w.limit); w.limit > 0 && limit.Before(end) {
		end = limit
	}
	return end
}

// busy is the error of a writer that gave up waiting for the writers' lock.
func (w turnWait) busy(began time.Time) error {
	const held = "other bd-claim writers held the workspace's writers' lock"
	switch {
	case w.stall == 0:
		return engine.Errorf(engine.EWorkspaceBusy, "%s, and --timeout-ms 0 waits for none; nothing was written: retry", held)
	case w.limit > 0 && !time.Now().Before(began.Add(w.limit)):
		return engine.Errorf(engine.EWorkspaceBusy, "%s, taking their turns, for all of --timeout-ms (%s); nothing was written: retry, or raise --timeout-ms", held, w.limit)
	}
	return engine.Errorf(engine.EWorkspaceBusy, "%s, and nothing moved for %s (no writer's turn ended, no commit landed); nothing was written: retry later", held, w.stall)
}
