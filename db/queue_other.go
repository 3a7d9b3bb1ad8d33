//go:build !linux

package db

import "time"

// Queue is the cross-process hand-off of the write lock (see
// queue_linux.go). Elsewhere than Linux there are no OFD locks: writers
// wait in SQLite's busy handler, as before.
type Queue struct{}

// OpenQueue returns a queue that never waits.
func OpenQueue(string) *Queue { return &Queue{} }

// Close does nothing.
func (*Queue) Close() error { return nil }

// Enter does not wait.
func (*Queue) Enter(time.Duration) func() { return func() {} }
