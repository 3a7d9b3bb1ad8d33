package writers

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// queueDB makes a database and a queue directory for it.
func queueDB(t *testing.T) (dir, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "beads.db")
	assert.NilError(t, os.WriteFile(path, nil, 0o644))
	return filepath.Join(t.TempDir(), "queues"), path
}

// free reports whether nobody holds the queue's turn, by trying it on an
// open file description of its own.
func free(t *testing.T, dir, path string) bool {
	t.Helper()
	return freeAt(t, dir, path, turnByte)
}

// freeAt reports whether nobody holds the lock of byte at (the turn's or
// the deck's).
func freeAt(t *testing.T, dir, path string, at int64) bool {
	t.Helper()
	probe := Open(dir, path)
	defer probe.Close()
	assert.Assert(t, probe.f != nil)
	if setlk(probe.f, unix.F_OFD_SETLK, unix.F_WRLCK, at) != nil {
		return false
	}
	assert.NilError(t, setlk(probe.f, unix.F_OFD_SETLK, unix.F_UNLCK, at))
	return true
}

// waiting runs enter(time.Minute) in a goroutine, which must not miss its
// turn, and returns where its leave comes; the test fails with why when
// it comes within 100ms (the writer should be waiting).
func waiting(t *testing.T, enter func(time.Duration) (func(), bool), why string) <-chan func() {
	t.Helper()
	entered := make(chan func(), 1)
	go func() {
		leave, missed := enter(time.Minute)
		assert.Check(t, !missed)
		entered <- leave
	}()
	select {
	case <-entered:
		t.Fatal(why)
	case <-time.After(100 * time.Millisecond):
	}
	return entered
}

// eventually waits up to 10s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}

// within runs enter in a goroutine and returns what it returned, failing
// the test when it has not returned after 30s (it would wait for a turn
// that the test never gives).
func within(t *testing.T, enter func() (func(), bool)) (func(), bool) {
	t.Helper()
	type entered struct {
		leave  func()
		missed bool
	}
	done := make(chan entered, 1)
	go func() {
		leave, missed := enter()
		done <- entered{leave, missed}
	}()
	select {
	case e := <-done:
		return e.leave, e.missed
	case <-time.After(30 * time.Second):
		t.Fatal("Enter still waiting after 30s")
		return nil, false
	}
}

func TestQueueDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	assert.Equal(t, Dir(), "/run/user/1000/bd-claim")
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	assert.Equal(t, Dir(), filepath.Join(tmp, fmt.Sprintf("bd-claim-%d", os.Getuid())))
}

// The queue makes its directory 0700 and one lock file there, named after
// the database's device and inode: a second path to the same database
// (here through a link to its directory) shares it, and the workspace gets
// no file.
func TestQueueLockFile(t *testing.T) {
	dir, path := queueDB(t)
	before, err := os.ReadDir(filepath.Dir(path))
	assert.NilError(t, err)
	q := Open(dir, path)
	defer q.Close()
	var st unix.Stat_t
	assert.NilError(t, unix.Stat(path, &st))
	assert.Equal(t, q.name, filepath.Join(dir, fmt.Sprintf("%d-%d.lock", st.Dev, st.Ino)))
	fi, err := os.Stat(dir)
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o700))
	after, err := os.ReadDir(filepath.Dir(path))
	assert.NilError(t, err)
	assert.DeepEqual(t, names(after), names(before))

	link := filepath.Join(t.TempDir(), "ws")
	assert.NilError(t, os.Symlink(filepath.Dir(path), link))
	other := Open(dir, filepath.Join(link, "beads.db"))
	defer other.Close()
	assert.Equal(t, other.name, q.name)
	leave, missed := q.Enter(time.Second)
	assert.Assert(t, !missed)
	_, missed = other.Enter(0)
	assert.Assert(t, missed, "the other path waits behind the first")
	leave()
	leave, missed = other.Enter(0)
	assert.Assert(t, !missed)
	leave()
}

func names(es []os.DirEntry) []string {
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return ns
}

// A waiter's turn comes when the holder leaves, not before; then the queue
// is free again. Two queues of one process queue like two processes.
func TestQueueHandsOff(t *testing.T) {
	dir, path := queueDB(t)
	first, second := Open(dir, path), Open(dir, path)
	defer first.Close()
	defer second.Close()
	leaveFirst, missed := first.Enter(time.Second)
	assert.Assert(t, !missed)
	assert.Assert(t, !free(t, dir, path))
	entered := waiting(t, second.Enter, "the second writer entered while the first was in the queue")
	leaveFirst()
	leaveSecond := <-entered
	assert.Assert(t, !free(t, dir, path), "the second writer holds its turn")
	leaveSecond()
	assert.Assert(t, free(t, dir, path))
}

// Two writers at once come on the deck while a writer is in, in the order
// of their tickets, and take their turns in that order: the second waits
// for the first even when it asks first and the turn is free. A third
// comes on the deck once the first has taken its turn.
func TestQueueDeck(t *testing.T) {
	dir, path := queueDB(t)
	in, first, second, third := Open(dir, path), Open(dir, path), Open(dir, path), Open(dir, path)
	for _, q := range []*Queue{in, first, second, third} {
		defer q.Close()
	}
	leaveIn, missed := in.Enter(time.Second)
	assert.Assert(t, !missed)
	p1, missed := first.Deck(time.Second)
	assert.Assert(t, !missed, "the deck is free while a writer is in")
	p2, missed := second.Deck(time.Second)
	assert.Assert(t, !missed, "two writers on the deck")
	assert.Assert(t, !freeAt(t, dir, path, seatAt(0)) && !freeAt(t, dir, path, seatAt(1)))
	onDeck := make(chan Place)
	go func() {
		p, missed := third.Deck(time.Minute)
		assert.Check(t, !missed)
		onDeck <- p
	}()
	turns := make(chan string, 2)
	go func() {
		leave, missed := p2.Enter(time.Minute)
		assert.Check(t, !missed)
		turns <- "second"
		leave()
	}()
	leaveIn()
	select {
	case who := <-turns:
		t.Fatalf("the %s writer took the turn before the first", who)
	case <-onDeck:
		t.Fatal("a third writer came on the deck before the first left it")
	case <-time.After(100 * time.Millisecond):
	}
	leaveFirst, missed := p1.Enter(time.Minute)
	assert.Assert(t, !missed)
	p3 := <-onDeck // the first left its seat once its turn came
	select {
	case <-turns:
		t.Fatal("the second writer took the turn while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	leaveFirst()
	assert.Equal(t, <-turns, "second")
	leaveThird, missed := p3.Enter(time.Minute)
	assert.Assert(t, !missed)
	leaveThird()
	for _, at := range []int64{turnByte, dispenserByte, seatAt(0), seatAt(1), seatAt(2)} {
		assert.Check(t, freeAt(t, dir, path, at), "byte %d", at)
	}
}

// Many writers, each with a queue of its own, take turns: never two inside
// at once, and each gets its turn.
func TestQueueOneAtATime(t *testing.T) {
	dir, path := queueDB(t)
	const writers, rounds = 8, 20
	var inside, most atomic.Int32
	var turns atomic.Int32
	var wg sync.WaitGroup
	for range writers {
		q := Open(dir, path)
		defer q.Close()
		wg.Go(func() {
			for range rounds {
				leave, missed := q.Enter(time.Minute)
				assert.Check(t, !missed)
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				turns.Add(1)
				inside.Add(-1)
				leave()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, most.Load(), int32(1))
	assert.Equal(t, turns.Load(), int32(writers*rounds))
	assert.Assert(t, free(t, dir, path))
}

// A writer that cannot wait (timeout 0) or waits past its timeout goes on
// without the queue, saying it missed its turn; one that gave up does not
// keep its turn when it comes.
func TestQueueTimeout(t *testing.T) {
	dir, path := queueDB(t)
	holder, late := Open(dir, path), Open(dir, path)
	defer holder.Close()
	defer late.Close()
	leave, _ := holder.Enter(time.Second)
	goOn, missed := late.Enter(0)
	assert.Assert(t, missed)
	goOn()
	start := time.Now()
	goOn, missed = late.Enter(50 * time.Millisecond)
	assert.Assert(t, missed)
	assert.Assert(t, time.Since(start) >= 50*time.Millisecond)
	goOn()
	assert.Assert(t, !free(t, dir, path), "the holder still holds it")
	leave()
	eventually(t, "the waiter that gave up leaves the queue when its turn comes", func() bool { return free(t, dir, path) })
}

// A writer that waits past its timeout for the deck goes on without a seat
// (its Place enters as Enter does), and one on the deck that waits past
// its timeout for the writer before it misses its turn and leaves its
// seat: neither keeps anyone waiting.
func TestQueueDeckTimeout(t *testing.T) {
	dir, path := queueDB(t)
	first, second, late := Open(dir, path), Open(dir, path), Open(dir, path)
	defer first.Close()
	defer second.Close()
	defer late.Close()
	p1, _ := first.Deck(time.Second)
	p2, _ := second.Deck(time.Second)
	start := time.Now()
	p3, missed := late.Deck(50 * time.Millisecond)
	assert.Assert(t, missed && time.Since(start) >= 50*time.Millisecond)
	assert.Assert(t, freeAt(t, dir, path, seatAt(2)), "no seat for a writer that missed the deck")
	leave, missed := p2.Enter(50 * time.Millisecond)
	assert.Assert(t, missed, "the first writer has not taken its turn")
	leave()
	assert.Assert(t, freeAt(t, dir, path, seatAt(1)), "a writer that missed its turn leaves its seat")
	leave, missed = p3.Enter(time.Second)
	assert.Assert(t, !missed && !free(t, dir, path), "without a seat, a writer waits for the turn only")
	leave()
	// A writer that cannot draw a ticket in time (the dispenser held)
	// draws none: the next writer gets the ticket it would have had.
	assert.NilError(t, setlk(first.f, unix.F_OFD_SETLK, unix.F_WRLCK, dispenserByte))
	_, missed = late.Deck(10 * time.Millisecond)
	assert.Assert(t, missed)
	assert.NilError(t, setlk(first.f, unix.F_OFD_SETLK, unix.F_UNLCK, dispenserByte))
	// The writer that gave up still takes the dispenser once it is free,
	// and drops it at once: the next draw may wait for that.
	p4, missed := late.Deck(time.Second)
	assert.Assert(t, !missed && p4.ticket == 3 && p4.seat, "ticket %d", p4.ticket)
	p4.Leave()
	p1.Leave()
	eventually(t, "every lock is free", func() bool {
		return freeAt(t, dir, path, seatAt(0)) && freeAt(t, dir, path, dispenserByte) && free(t, dir, path)
	})
}

// A waiter whose lock file was removed meanwhile cannot wait on it: it
// goes on at once, as without a queue.
func TestQueueLockFileRemoved(t *testing.T) {
	dir, path := queueDB(t)
	holder, late := Open(dir, path), Open(dir, path)
	defer holder.Close()
	defer late.Close()
	leave, _ := holder.Enter(time.Second)
	defer leave()
	assert.NilError(t, os.Remove(holder.name))
	goOn, missed := within(t, func() (func(), bool) { return late.Enter(time.Hour) })
	assert.Assert(t, !missed)
	goOn()
}

// A lock that fails otherwise than by being held (here: a write lock on a
// descriptor opened read-only, EBADF) means no queue: the writer goes on
// at once without counting a missed turn, even while the queue is held.
func TestQueueLockFails(t *testing.T) {
	dir, path := queueDB(t)
	holder := Open(dir, path)
	defer holder.Close()
	leave, _ := holder.Enter(time.Second)
	defer leave()
	f, err := os.Open(holder.name)
	assert.NilError(t, err)
	readOnly := &Queue{f: f, name: holder.name}
	defer readOnly.Close()
	goOn, missed := within(t, func() (func(), bool) { return readOnly.Enter(time.Hour) })
	assert.Assert(t, !missed)
	goOn()
	p, missed := readOnly.Deck(time.Hour) // it cannot write the next ticket either: no seat
	assert.Assert(t, !missed)
	assert.Assert(t, freeAt(t, dir, path, seatAt(0)))
	p.Leave()
}

// Without a lock file the queue never waits and never misses a turn:
// writers go on as without it. The database is missing, the directory is
// not this user's own (a link, writable by others, someone else's, not a
// directory), or the lock file's name is taken by a directory. Nothing is
// created in a directory that is refused.
func TestQueueWithoutLockFile(t *testing.T) {
	dir, path := queueDB(t)
	base := t.TempDir()
	refused := map[string]string{"missing database": dir}
	link := filepath.Join(base, "link")
	assert.NilError(t, os.Symlink(t.TempDir(), link))
	refused["link"] = link
	shared := filepath.Join(base, "shared")
	assert.NilError(t, os.Mkdir(shared, 0o700))
	assert.NilError(t, os.Chmod(shared, 0o777))
	refused["writable by others"] = shared
	file := filepath.Join(base, "file")
	assert.NilError(t, os.WriteFile(file, nil, 0o600))
	refused["a file"] = file
	if os.Getuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		assert.NilError(t, os.Mkdir(theirs, 0o700))
		assert.NilError(t, os.Chown(theirs, 4242, 4242))
		refused["someone else's"] = theirs
	}
	for why, d := range refused {
		db := path
		if why == "missing database" {
			db = filepath.Join(t.TempDir(), "missing.db")
		}
		q := Open(d, db)
		assert.Check(t, q.f == nil, why)
		leave, missed := q.Enter(time.Hour)
		assert.Check(t, !missed, why)
		leave()
		p, missed := q.Deck(time.Hour)
		assert.Check(t, !missed, why)
		leave, missed = p.Enter(time.Hour)
		assert.Check(t, !missed, why)
		leave()
		q.Close()
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && why != "missing database" {
			es, err := os.ReadDir(d)
			assert.NilError(t, err)
			assert.Check(t, is.Len(es, 0), why)
		}
	}

	var st unix.Stat_t
	assert.NilError(t, unix.Stat(path, &st))
	taken := filepath.Join(base, "taken")
	assert.NilError(t, os.MkdirAll(filepath.Join(taken, fmt.Sprintf("%d-%d.lock", st.Dev, st.Ino)), 0o700))
	q := Open(taken, path)
	assert.Check(t, q.f == nil)
	q.Close()
}

// A holder killed with SIGKILL blocks nobody: the kernel drops its lock,
// and the writer waiting behind it gets its turn. So with a writer killed
// on the deck: the one with the next ticket takes the turn.
func TestQueueKilledHolder(t *testing.T) {
	if env := os.Getenv("BD_CLAIM_QUEUE_HOLDER"); env != "" {
		dir, path, _ := strings.Cut(env, "|")
		path, deck := strings.CutSuffix(path, "|deck")
		if deck {
			Open(dir, path).Deck(time.Second) // and never takes its turn
		} else {
			Open(dir, path).Enter(time.Second) // and never leaves
		}
		os.Stdout.WriteString("holding\n")
		time.Sleep(time.Minute)
		return
	}
	for _, deck := range []bool{false, true} {
		dir, path := queueDB(t)
		env := "BD_CLAIM_QUEUE_HOLDER=" + dir + "|" + path
		if deck {
			env += "|deck"
		}
		holder := exec.Command(os.Args[0], "-test.run=^TestQueueKilledHolder$")
		holder.Env = append(os.Environ(), env)
		out, err := holder.StdoutPipe()
		assert.NilError(t, err)
		assert.NilError(t, holder.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		assert.NilError(t, err)
		assert.Equal(t, line, "holding\n")
		q := Open(dir, path)
		defer q.Close()
		enter := q.Enter
		if deck {
			assert.Assert(t, !freeAt(t, dir, path, seatAt(0)))
			p, missed := q.Deck(time.Second)
			assert.Assert(t, !missed)
			enter = p.Enter
		} else {
			assert.Assert(t, !free(t, dir, path))
		}
		entered := waiting(t, enter, "a writer took the turn before the one ahead of it was killed")
		assert.NilError(t, holder.Process.Kill())
		_ = holder.Wait()
		leave := <-entered
		assert.Assert(t, !free(t, dir, path), "the waiter holds its turn")
		leave()
		assert.Assert(t, free(t, dir, path))
	}
}

// Waiters get their turns in the order they began to wait: Linux queues
// the blocked requests of one lock in a chain and wakes only the first.
// Each waiter starts once the one before it shows in /proc/locks as
// blocked, so the arrival order is known.
func TestQueueInArrivalOrder(t *testing.T) {
	dir, path := queueDB(t)
	holder := Open(dir, path)
	defer holder.Close()
	var st unix.Stat_t
	assert.NilError(t, unix.Stat(holder.name, &st))
	blocked := func() int {
		locks, err := os.ReadFile("/proc/locks")
		assert.NilError(t, err)
		n := 0
		for _, l := range strings.Split(string(locks), "\n") {
			if strings.Contains(l, "->") && strings.Contains(l, fmt.Sprintf(":%d ", st.Ino)) {
				n++
			}
		}
		return n
	}
	leave, _ := holder.Enter(0)
	const waiters = 6
	order := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		q := Open(dir, path)
		defer q.Close()
		wg.Go(func() {
			leave, missed := q.Enter(time.Minute)
			assert.Check(t, !missed)
			order <- i
			leave()
		})
		eventually(t, fmt.Sprintf("waiter %d blocked", i), func() bool { return blocked() == i+1 })
	}
	leave()
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	assert.DeepEqual(t, got, []int{0, 1, 2, 3, 4, 5})
}
