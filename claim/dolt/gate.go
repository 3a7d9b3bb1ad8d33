package dolt

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gofrs/flock"
)

// Gates are bd v1.3's workspace gates (internal/workspacegate): every bd
// command holds each one with a shared lock while it uses the workspace,
// and a maintenance command (bd init, bd migrate, bd backup restore) holds
// one exclusively, so that it never runs under a live command. The locks
// are those bd takes (its internal/lockfile): flock(2) on Unix, LockFileEx
// on Windows (bd locks the whole file, gofrs/flock its first byte: the
// ranges overlap, so each excludes the other). The gate of
// a directory is a file beside it: <repo>/.beads.gate.lock for the
// workspace's .beads, .beads/embeddeddolt.gate.lock for an embedded
// database, .beads/dolt.gate.lock for a local server's data.
type Gates []string

// GatesFor lists the gates of the workspace whose .beads directory is
// beadsDir and of the database directories roots (those whose parent does
// not exist are left out, as bd leaves them out).
func GatesFor(beadsDir string, roots ...string) Gates {
	var g Gates
	for _, dir := range append([]string{beadsDir}, roots...) {
		parent, base := filepath.Split(filepath.Clean(dir))
		parent, err := filepath.EvalSymlinks(parent)
		if err != nil {
			continue
		}
		g = append(g, filepath.Join(parent, base+".gate.lock"))
	}
	slices.Sort(g) // bd takes them in path order
	return slices.Compact(g)
}

// Maintenance is a gate held exclusively: a maintenance command runs on
// the workspace.
type Maintenance struct {
	Gate   string
	Holder string // who holds it, from bd's holder-info file, "" when unknown
}

func (m *Maintenance) Error() string {
	holder := m.Holder
	if holder == "" {
		holder = "another bd process"
	}
	return fmt.Sprintf("a maintenance operation is running on this workspace (%s holds %s)", holder, m.Gate)
}

// Hold takes every gate shared, without waiting, and returns how to let
// them go. A gate held exclusively is *Maintenance (the gates taken are let
// go). A gate that cannot be opened or locked for another reason is
// passed over, as bd passes over it: the gates are cooperative.
func (g Gates) Hold() (release func(), err error) {
	var held []*flock.Flock
	release = func() {
		for _, l := range slices.Backward(held) {
			l.Close() // lets the lock go and closes the file
		}
	}
	for _, path := range g {
		l := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
		switch ok, err := l.TryRLock(); {
		case err != nil: // not opened, or not locked for another reason than a holder
			continue
		case !ok:
			release()
			return nil, &Maintenance{Gate: path, Holder: holder(path)}
		}
		held = append(held, l)
	}
	return release, nil
}

// holder reads the holder-info file an exclusive holder writes beside its
// gate: "pid N (REASON) since TIME", or "" when there is none.
func holder(gate string) string {
	data, err := os.ReadFile(gate + ".info")
	var info struct {
		PID       int       `json:"pid"`
		Reason    string    `json:"reason"`
		StartedAt time.Time `json:"started_at"`
	}
	if err != nil || json.Unmarshal(data, &info) != nil || info.PID == 0 {
		return ""
	}
	s := fmt.Sprintf("pid %d", info.PID)
	if info.Reason != "" {
		s += " (" + info.Reason + ")"
	}
	if !info.StartedAt.IsZero() {
		s += " since " + info.StartedAt.UTC().Format(time.RFC3339)
	}
	return s
}
