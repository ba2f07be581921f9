//go:build unix && !linux

package testenv

import "syscall"

// sysProcAttr runs the child as u (when not nil).
func sysProcAttr(u *osUser) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		a.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}
	}
	return a
}
