//go:build !unix

package testenv

import (
	"errors"
	"syscall"
)

// sysProcAttr: other systems run the child as the test's own user.
func sysProcAttr(*osUser) *syscall.SysProcAttr { return nil }

// killGroup: other systems kill the process alone (process.kill).
func killGroup(int) {}

// detachedAttr: other systems start the process as any other.
func detachedAttr() *syscall.SysProcAttr { return nil }

// freezeGroup: other systems cannot stop a process (no SIGSTOP).
func freezeGroup(int) error { return errors.New("testenv: pausing a server needs a unix system") }

// thawGroup: see freezeGroup.
func thawGroup(int) {}
