package db

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
)

func queueDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "beads.db")
	assert.NilError(t, Create(context.Background(), path))
	return path
}

// free reports whether nobody holds the queue, by trying it on a file
// description of its own.
func free(t *testing.T, path string) bool {
	t.Helper()
	probe := OpenQueue(path)
	defer probe.Close()
	if probe.lock(unix.F_OFD_SETLK) != nil {
		return false
	}
	probe.unlock()
	return true
}

// eventually waits up to 5s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
	}
}

// A waiter's turn comes when the holder leaves, not before; then the queue
// is free again. Two Stores of one process queue like two processes.
func TestQueueHandsOff(t *testing.T) {
	path := queueDB(t)
	first, second := OpenQueue(path), OpenQueue(path)
	defer first.Close()
	defer second.Close()
	leaveFirst := first.Enter(time.Second)
	assert.Assert(t, !free(t, path))
	entered := make(chan func())
	go func() { entered <- second.Enter(5 * time.Second) }()
	select {
	case <-entered:
		t.Fatal("the second writer entered while the first was in the queue")
	case <-time.After(100 * time.Millisecond):
	}
	leaveFirst()
	leaveSecond := <-entered
	assert.Assert(t, !free(t, path), "the second writer holds its turn")
	leaveSecond()
	assert.Assert(t, free(t, path))
}

// A writer that cannot wait (timeout 0) or waits past its timeout goes on
// without the queue; one that gave up does not keep its turn when it comes.
func TestQueueTimeout(t *testing.T) {
	path := queueDB(t)
	holder, late := OpenQueue(path), OpenQueue(path)
	defer holder.Close()
	defer late.Close()
	leave := holder.Enter(time.Second)
	late.Enter(0)() // does not wait
	start := time.Now()
	late.Enter(50 * time.Millisecond)()
	assert.Assert(t, time.Since(start) >= 50*time.Millisecond)
	assert.Assert(t, !free(t, path), "the holder still holds it")
	leave()
	eventually(t, "the waiter that gave up leaves the queue when its turn comes", func() bool { return free(t, path) })
}

// Without a file (it cannot be opened) the queue never waits: writers go on
// as without it.
func TestQueueWithoutFile(t *testing.T) {
	q := OpenQueue(filepath.Join(t.TempDir(), "missing.db"))
	start := time.Now()
	q.Enter(time.Second)()
	assert.Assert(t, time.Since(start) < time.Second)
	assert.Assert(t, q.Close() != nil)
}

// A holder killed with SIGKILL blocks nobody: the kernel drops its lock.
func TestQueueKilledHolder(t *testing.T) {
	if path := os.Getenv("BD_CLAIM_QUEUE_HOLDER"); path != "" {
		OpenQueue(path).Enter(time.Second) // and never leaves
		os.Stdout.WriteString("holding\n")
		time.Sleep(time.Minute)
		return
	}
	path := queueDB(t)
	holder := exec.Command(os.Args[0], "-test.run=^TestQueueKilledHolder$")
	holder.Env = append(os.Environ(), "BD_CLAIM_QUEUE_HOLDER="+path)
	out, err := holder.StdoutPipe()
	assert.NilError(t, err)
	assert.NilError(t, holder.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	assert.NilError(t, err)
	assert.Equal(t, line, "holding\n")
	assert.Assert(t, !free(t, path))
	assert.NilError(t, holder.Process.Kill())
	_ = holder.Wait()
	q := OpenQueue(path)
	defer q.Close()
	start := time.Now()
	leave := q.Enter(5 * time.Second)
	assert.Assert(t, time.Since(start) < time.Second, "waited %s", time.Since(start))
	assert.Assert(t, !free(t, path))
	leave()
}
