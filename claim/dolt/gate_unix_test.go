//go:build unix

package dolt_test

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// bdTryLock locks f as bd v1.3.0 does on Unix (internal/lockfile
// FlockSharedNonBlock, FlockExclusiveNonBlock): flock(2), without waiting;
// busy when another holder's lock conflicts. unlock is bd's FlockUnlock.
func bdTryLock(f *os.File, exclusive bool) (unlock func() error, busy bool, err error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return nil, true, nil
	}
	return func() error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }, false, err
}
