//go:build !unix

package testenv

import "syscall"

// sysProcAttr: other systems run the child as the test's own user.
func sysProcAttr(*osUser) *syscall.SysProcAttr { return nil }

// killGroup: other systems kill the process alone (process.kill).
func killGroup(int) {}
