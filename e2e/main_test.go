package e2e_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Environment variables read by the end-to-end tests (besides testenv's).
const (
	// envCranfield names the BEIR Cranfield directory; default
	// <repo>/../shared/data/cranfield.
	envCranfield = "RAG_CRANFIELD_DIR"
	// envRace, when 1, builds the ragd binary with -race.
	envRace = "RAG_E2E_RACE"
	// envLoad, when 1, runs the 30-second load test.
	envLoad = "RAG_LOAD"
)

// binDir holds the ragd binary built for this test binary; TestMain
// removes it.
var binDir string

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ragd-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: temp dir: %v\n", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startBuild starts building the ragd binary, once per test binary, so
// that it compiles while slow servers start. ragdBinary waits for it.
func startBuild() {
	go buildOnce.Do(build)
}

// ragdBinary returns the path of the ragd binary built from this
// repository, building it on first use.
func ragdBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(build)
	if buildErr != nil {
		tb.Fatalf("build ragd: %v", buildErr)
	}
	return buildPath
}

func build() {
	root, err := repoRoot()
	if err != nil {
		buildErr = err
		return
	}
	// go test puts its own GOROOT/bin first on the test's PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		buildErr = fmt.Errorf("e2e: the go command is not on PATH: %w", err)
		return
	}
	out := filepath.Join(binDir, "ragd")
	args := []string{"build", "-o", out}
	if os.Getenv(envRace) == "1" {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/ragd")
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("go %v: %w\n%s", args, err, b)
		return
	}
	buildPath = out
}

// repoRoot is the directory holding go.mod, above the test's directory.
func repoRoot() (string, error) {
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
			return "", errors.New("e2e: no go.mod above the working directory")
		}
		dir = parent
	}
}
