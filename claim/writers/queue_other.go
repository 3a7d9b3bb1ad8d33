//go:build !linux

package writers

import "time"

// Queue is the writers' cross-process hand-off of the write lock (see
// queue_linux.go). Elsewhere than Linux (macOS, Windows, FreeBSD) there
// are no OFD locks: writers wait in SQLite's busy handler. Claims stay
// exclusive, but the order is luck's: in a crowd, some writers wait much
// longer and may run out of their timeout (docs/architecture.md, "The
// writers' queue", has the figures).
type Queue struct{}

// Dir is empty: there is no queue.
func Dir() string { return "" }

// Open returns a queue that never waits.
func Open(string, string) *Queue { return &Queue{} }

// Close does nothing.
func (*Queue) Close() {}

// Enter goes on at once, never missing a turn.
func (*Queue) Enter(time.Duration) (func(), bool) { return func() {}, false }

// Deck goes on at once, as Enter.
func (*Queue) Deck(time.Duration) (Place, bool) { return Place{}, false }

// Place is a writer's place in the queue, from Deck.
type Place struct{}

// Enter goes on at once, as Queue.Enter.
func (Place) Enter(time.Duration) (func(), bool) { return func() {}, false }

// Leave does nothing.
func (Place) Leave() {}
