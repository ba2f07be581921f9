//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killGroup kills pid, every process in its group and every child of pid
// with SIGKILL, as a machine crash would, and waits (at most 10 s) until
// the children are gone. PostgreSQL's workers lead groups of their own
// (so the postmaster can signal their children), so the group alone does
// not reach them; and a worker that outlives its postmaster could still
// write while a new postmaster recovers.
func killGroup(pid int) {
	// Stopped, the leader forks no child between the listing and the kill.
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	kids := children(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for alive(k) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// children lists the processes whose parent is pid, from /proc (empty
// where there is no /proc).
func children(pid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil && pp == pid {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !os.IsNotExist(err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// detachedAttr starts a process in a session of its own, so a signal to the
// test's process group (Ctrl-C) does not reach it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// freezeGroup stops (SIGSTOP) pid, every process in its group and every
// child of pid, as a hung machine would: connections are still accepted
// by the kernel but nothing answers. PostgreSQL's workers lead groups of
// their own, so the children are signalled one by one, after the leader
// (stopped, it forks no new child).
func freezeGroup(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	for _, k := range children(pid) {
		_ = syscall.Kill(k, syscall.SIGSTOP)
	}
	return nil
}

// thawGroup continues (SIGCONT) what freezeGroup stopped.
func thawGroup(pid int) {
	for _, k := range children(pid) {
		_ = syscall.Kill(k, syscall.SIGCONT)
	}
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGCONT)
}
