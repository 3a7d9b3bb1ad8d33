//go:build !linux

package claimtest

import "syscall"

// doltProcAttr: only Linux can tie the server's life to the test binary's.
func doltProcAttr() *syscall.SysProcAttr { return nil }
