package writers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Queue hands the right to write from one bd-claim writer to the next,
// across processes and across Stores of one process: an exclusive OFD lock
// on a lock file of its own, taken before BEGIN IMMEDIATE and released
// after COMMIT. A waiter sleeps in the kernel and is woken the moment the
// lock is free, instead of polling the SQLite lock from its busy handler
// (which sleeps up to 100ms between looks and lets an unlucky waiter miss
// the lock until it times out). It is only an optimisation: correctness
// still comes from BEGIN IMMEDIATE and the compare-and-swap.
//
// Its deck (Deck) is where the next writers prepare their writes (a claim
// reads its candidates) while the writer in holds the turn: two of them at
// once, so that the turn need not wait for one writer's read when the
// write before it was shorter. They come on the deck, and then take the
// turn, strictly in the order of their tickets (drawn under a short lock
// of a byte of its own, the counter kept in the file): ticket t holds the
// lock of its seat byte from its ticket until its turn, comes on the deck
// once ticket t-2 has left its seat, and waits for the turn once ticket
// t-1 has. A writer woken late (the machine busy) keeps its place: no
// writer that came on the deck after it can take its seat or its turn
// meanwhile, as one could take a seat that was merely free (writers that
// go straight to the turn, Enter, still can). The writers behind the deck wait without
// having read anything, so what a writer read is at most two writes old
// when its turn comes.
//
// The lock file is never the database, its -wal or -shm: closing any
// descriptor of a file drops every POSIX lock the process holds on it,
// SQLite's own included. It lives outside the workspace (see Dir),
// named after the database file's device and inode, so that every path to
// one database shares one queue and git never sees it. The lock belongs to
// an open file description, so it dies with the process: a killed holder
// blocks nobody.
type Queue struct {
	f    *os.File // nil: no queue, writers go without it
	name string
}

// Dir is where this user's writers' queues live: bd-claim under
// $XDG_RUNTIME_DIR when it is set (a per-user tmpfs emptied at logout),
// otherwise bd-claim-UID in the temporary directory.
func Dir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "bd-claim")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("bd-claim-%d", os.Getuid()))
}

// Open opens the writers' queue of the database file at dbPath, in
// dir (created 0700 when missing). Any failure leaves a Queue that never
// waits, silently: a dir that is not a directory owned by this user and
// writable by no one else (another user could otherwise hold every queue),
// a database that cannot be stat'ed, a lock file that cannot be opened.
func Open(dir, dbPath string) *Queue {
	var st unix.Stat_t
	if unix.Stat(dbPath, &st) != nil || !ownDir(dir) {
		return &Queue{}
	}
	name := filepath.Join(dir, fmt.Sprintf("%d-%d.lock", st.Dev, st.Ino))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return &Queue{}
	}
	return &Queue{f: f, name: name}
}

// ownDir makes dir when missing and says whether it is a directory (not a
// link to one) of this user that only this user can write to.
func ownDir(dir string) bool {
	_ = os.Mkdir(dir, 0o700)
	var st unix.Stat_t
	return unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		int(st.Uid) == os.Getuid() && st.Mode&0o022 == 0
}

// Close closes the queue's file (a wait given up keeps a file of its own
// until its turn comes).
func (q *Queue) Close() { _ = q.f.Close() } // a nil *os.File says ErrInvalid

// Enter waits up to timeout for its turn (0 or less: does not wait) and
// returns the function that leaves the queue, and missed: the queue was
// busy and the writer goes on without its turn because its wait ran out.
// Without a queue (no lock file, or a lock that fails otherwise than by
// being held) it goes on at once, missed false.
func (q *Queue) Enter(timeout time.Duration) (leave func(), missed bool) {
	return q.enter(turnByte, timeout)
}

// Deck takes a ticket and waits, up to timeout, to come on the deck: its
// Place, whose Enter waits for the turn. A writer whose wait ran out
// (missed) has a Place that enters as Enter does, and no seat.
func (q *Queue) Deck(timeout time.Duration) (p Place, missed bool) {
	p.q = q
	if q.f == nil {
		return p, false
	}
	start := time.Now()
	leave, missed := q.enter(dispenserByte, timeout)
	if missed {
		return p, true
	}
	var b [8]byte
	if n, _ := q.f.ReadAt(b[:], counterAt); n == len(b) { // a new file has none: ticket 0
		p.ticket = binary.LittleEndian.Uint64(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], p.ticket+1)
	_, err := q.f.WriteAt(b[:], counterAt)
	// Its seat is taken before the next ticket is drawn. It is held
	// already only when more than seats writers wait: this one then goes
	// without a seat, and the writers behind it do not wait for it (or,
	// the ring wrapped, wait for a later writer until their timeouts).
	p.seat = err == nil && setlk(q.f, unix.F_OFD_SETLK, unix.F_WRLCK, seatAt(p.ticket)) == nil
	leave()
	if p.seat && p.ticket >= deckSeats && q.await(seatAt(p.ticket-deckSeats), timeout-time.Since(start)) {
		p.Leave()
		return Place{q: q}, true
	}
	return p, false
}

// Place is a writer's place in the queue, from Deck.
type Place struct {
	q      *Queue
	ticket uint64
	seat   bool // it holds the lock of its seat
}

// Enter waits up to timeout for the writer before it to take its turn,
// then for the turn, as Queue.Enter; it leaves the seat once the turn is
// taken (or missed).
func (p Place) Enter(timeout time.Duration) (leave func(), missed bool) {
	defer p.Leave()
	start := time.Now()
	if p.seat && p.ticket > 0 && p.q.await(seatAt(p.ticket-1), timeout) {
		return func() {}, true
	}
	return p.q.enter(turnByte, timeout-time.Since(start))
}

// Leave leaves the seat: for a writer that took its turn, or one that will
// not take it.
func (p Place) Leave() {
	if p.seat {
		_ = setlk(p.q.f, unix.F_OFD_SETLK, unix.F_UNLCK, seatAt(p.ticket))
	}
}

// await waits up to timeout until nobody holds the lock of byte at, and
// says whether it gave up.
func (q *Queue) await(at int64, timeout time.Duration) (missed bool) {
	leave, missed := q.enter(at, timeout)
	leave()
	return missed
}

// The lock file's layout: the bytes that the turn, the ticket dispenser and
// the seats lock, and where the next ticket is written (locks and data do
// not interfere). Byte 1 was the single deck of earlier bd-claims: they
// still share the turn with this one.
const (
	turnByte      = 0
	dispenserByte = 2
	counterAt     = 8
	seatBase      = 1 << 16
	seats         = 1 << 16 // a ring: ticket t's seat is seatBase + t mod seats
	deckSeats     = 2       // writers on the deck at once
)

// seatAt is the byte whose lock is ticket t's seat.
func seatAt(t uint64) int64 { return seatBase + int64(t%seats) }

// enter waits up to timeout for the lock of byte at.
func (q *Queue) enter(at int64, timeout time.Duration) (leave func(), missed bool) {
	if q.f == nil {
		return func() {}, false
	}
	err := setlk(q.f, unix.F_OFD_SETLK, unix.F_WRLCK, at)
	if err == nil {
		return func() { _ = setlk(q.f, unix.F_OFD_SETLK, unix.F_UNLCK, at) }, false
	}
	if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
		return func() {}, false
	}
	if timeout <= 0 {
		return func() {}, true
	}
	// The blocking lock cannot be cancelled, so it waits on an open file
	// description of its own (OFD locks of one description never conflict
	// with each other): a waiter that gives up hands that file to a
	// goroutine that closes it, releasing the lock, once the turn comes.
	// A blocking lock that fails (never for being held) leaves no lock to
	// release: closing w is all the same.
	w, err := os.OpenFile(q.name, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return func() {}, false
	}
	got := make(chan error, 1)
	go func() { got <- setlk(w, unix.F_OFD_SETLKW, unix.F_WRLCK, at) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-got:
		return func() { _ = w.Close() }, false
	case <-t.C:
		go func() {
			<-got
			_ = w.Close()
		}()
		return func() {}, true
	}
}

// setlk applies an OFD lock command to byte at of f.
func setlk(f *os.File, cmd int, typ int16, at int64) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: at, Len: 1}
	return unix.FcntlFlock(f.Fd(), cmd, &lk)
}
