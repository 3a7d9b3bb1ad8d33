//go:build windows

package dolt_test

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// bdTryLock locks f as bd v1.3.0 does on Windows (internal/lockfile
// FlockSharedNonBlock, FlockExclusiveNonBlock): LockFileEx of the whole
// file, failing at once; busy when another holder's lock conflicts.
// unlock is bd's FlockUnlock.
func bdTryLock(f *os.File, exclusive bool) (unlock func() error, busy bool, err error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	h := windows.Handle(f.Fd())
	err = windows.LockFileEx(h, flags, 0, 0xFFFFFFFF, 0xFFFFFFFF, &windows.Overlapped{})
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return nil, true, nil
	}
	return func() error { return windows.UnlockFileEx(h, 0, 0xFFFFFFFF, 0xFFFFFFFF, &windows.Overlapped{}) }, false, err
}
