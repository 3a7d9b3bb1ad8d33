//go:build unix

package cli

import "syscall"

// noFollow makes opening the lock files fail on a symbolic link, which
// another user may have left in a shared temporary directory.
const noFollow = syscall.O_NOFOLLOW
