package claimtest

import "syscall"

// doltProcAttr has Linux stop the server when the test binary dies without
// running DoltMain's Stop (a panic, a -timeout): no orphaned servers in CI.
func doltProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
