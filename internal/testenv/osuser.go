package testenv

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// osUser is an operating-system account a server process runs as.
type osUser struct {
	name     string
	uid, gid int
}

// postgresUser returns the account PostgreSQL runs as: nil when the test does
// not run as root (the server then runs as the test's own user), else the
// "postgres" account, since initdb and postgres refuse to run as root.
func postgresUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("testenv: running as root, and PostgreSQL refuses root: "+
			"need an OS user \"postgres\": %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("testenv: postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("testenv: postgres gid %q: %w", u.Gid, err)
	}
	return &osUser{name: u.Username, uid: uid, gid: gid}, nil
}

// handOver makes dir (created if needed) owned by u, and lets u traverse the
// directories above it up to and including stop (tb.TempDir's 0700 dirs).
func handOver(u *osUser, dir, stop string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("testenv: mkdir %s: %w", dir, err)
	}
	if u == nil {
		return nil
	}
	if rel, err := filepath.Rel(stop, dir); err != nil || rel == ".." || len(rel) > 2 && rel[:3] == "../" {
		return fmt.Errorf("testenv: %s is not inside %s", dir, stop)
	}
	if err := os.Chown(dir, u.uid, u.gid); err != nil {
		return fmt.Errorf("testenv: chown %s to %s: %w", dir, u.name, err)
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("testenv: stat %s: %w", d, err)
		}
		if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
			return fmt.Errorf("testenv: chmod %s: %w", d, err)
		}
		if d == stop || d == filepath.Dir(d) {
			return nil
		}
	}
}
