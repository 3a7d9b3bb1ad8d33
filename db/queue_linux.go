package db

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// queueByte is the byte of the database file that the Queue locks. SQLite
// locks only the bytes 0x40000000 to 0x400001ff of it (the pending,
// reserved and shared bytes), and only with POSIX locks, which conflict
// with an OFD lock only where their ranges overlap: this byte is never
// touched by SQLite, bd or any other SQLite client.
const queueByte = 0x40000400

// Queue hands the right to write from one bd-claim writer to the next,
// across processes and across Stores of one process: an exclusive OFD
// lock on queueByte, taken before BEGIN IMMEDIATE and released after
// COMMIT. A waiter sleeps in the kernel and is woken the moment the lock
// is free, in turn, instead of polling the SQLite lock from its busy
// handler (which sleeps up to 100ms between looks and lets an unlucky
// waiter miss the lock until it times out). It is only an optimisation:
// correctness still comes from BEGIN IMMEDIATE and the compare-and-swap.
// The lock belongs to an open file description, so it dies with the
// process (a killed holder blocks nobody), and it creates no file.
type Queue struct {
	f *os.File
}

// OpenQueue opens the queue of the database at path. When the file cannot
// be opened for writing the queue is empty-handed: its locks fail at once
// (EBADF on a nil file) and writers go without it.
func OpenQueue(path string) *Queue {
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	return &Queue{f}
}

// Close closes the queue's file, releasing its lock.
func (q *Queue) Close() error { return q.f.Close() }

// Enter waits up to timeout for its turn (0 or less: does not wait) and
// returns the function that leaves the queue. A wait that times out, or a
// lock that fails, goes on without the queue; the waiting goroutine then
// leaves the queue as soon as its turn comes.
func (q *Queue) Enter(timeout time.Duration) (leave func()) {
	if q.lock(unix.F_OFD_SETLK) == nil {
		return q.unlock
	}
	if timeout <= 0 {
		return func() {}
	}
	// The blocking lock cannot be cancelled: a waiter that gives up leaves
	// it to its goroutine, which leaves the queue once its turn comes.
	var mu sync.Mutex
	gaveUp := false
	got := make(chan error, 1)
	go func() {
		err := q.lock(unix.F_OFD_SETLKW)
		mu.Lock()
		if err == nil && gaveUp {
			q.unlock()
		}
		mu.Unlock()
		got <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-got:
		return q.leaveAfter(err)
	case <-t.C:
		mu.Lock()
		gaveUp = true
		mu.Unlock()
		// Should the turn have come as the time ran out, leaving releases
		// it; unlocking a byte not held does nothing.
		return q.unlock
	}
}

// leaveAfter is how to leave after a lock that returned err.
func (q *Queue) leaveAfter(err error) func() {
	if err != nil {
		return func() {}
	}
	return q.unlock
}

func (q *Queue) lock(cmd int) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: queueByte, Len: 1}
	return unix.FcntlFlock(q.f.Fd(), cmd, &lk)
}

func (q *Queue) unlock() {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: queueByte, Len: 1}
	_ = unix.FcntlFlock(q.f.Fd(), unix.F_OFD_SETLK, &lk)
}
