package testenv

import "syscall"

// sysProcAttr runs the child as u (when not nil) and kills it when the test
// process dies, so an aborted test run leaves no server behind.
func sysProcAttr(u *osUser) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if u != nil {
		a.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}
	}
	return a
}
