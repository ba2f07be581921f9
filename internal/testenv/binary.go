package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Binary is a main package of this module built once per test binary, for
// tests that run it as a process: e2e's ragd (with -race when asked) and
// cmd/ragd's quality floor (without -race). Start begins the build in the
// background, so that it compiles while slow servers start; Path waits for
// it; Remove deletes it (from TestMain, once the tests are done). The
// build shares the compile cache with every other build of the same
// packages and flags: after one, it costs a link.
type Binary struct {
	pkg   string   // relative to the module root, e.g. "./cmd/ragd"
	flags []string // go build flags, e.g. "-race"

	once sync.Once
	dir  string
	path string
	err  error
}

// NewBinary describes pkg (a path relative to the module root) built with
// flags; nothing is built before Start or Path.
func NewBinary(pkg string, flags ...string) *Binary {
	return &Binary{pkg: pkg, flags: flags}
}

// Start builds the binary in the background, unless it is built or being
// built.
func (b *Binary) Start() { go b.once.Do(b.build) }

// Path returns the binary's path, building it first if need be; a failed
// build fails tb.
func (b *Binary) Path(tb testing.TB) string {
	tb.Helper()
	b.once.Do(b.build)
	if b.err != nil {
		tb.Fatalf("build %s: %v", b.pkg, b.err)
	}
	return b.path
}

// Remove deletes the binary, waiting for a build in progress; a Binary
// removed is never built again.
func (b *Binary) Remove() {
	b.once.Do(func() {})
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

func (b *Binary) build() {
	root, err := ModuleRoot()
	if err != nil {
		b.err = err
		return
	}
	// go test puts its own GOROOT/bin first on the test's PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.err = fmt.Errorf("the go command is not on PATH: %w", err)
		return
	}
	if b.dir, err = os.MkdirTemp("", "ragd-testbin-"); err != nil {
		b.err = err
		return
	}
	out := filepath.Join(b.dir, filepath.Base(b.pkg))
	args := append(append([]string{"build", "-o", out}, b.flags...), b.pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	if o, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go %v: %w\n%s", args, err, o)
		return
	}
	b.path = out
}

// ModuleRoot is the directory holding go.mod, at or above the working
// directory (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
