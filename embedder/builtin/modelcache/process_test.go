package modelcache_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
)

// Environment of the pull helper process (see TestMain).
const (
	envHelper    = "MODELCACHE_TEST_PULL_HELPER"
	envHelperDir = "MODELCACHE_TEST_PULL_DIR"
	envHelperURL = "MODELCACHE_TEST_PULL_URL"
)

// TestMain doubles as a helper process that pulls the fake model, so that
// tests can run pulls in two processes at once.
func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "1" {
		os.Exit(pullHelper())
	}
	os.Exit(m.Run())
}

// pullHelper pulls the fake model into $MODELCACHE_TEST_PULL_DIR from
// $MODELCACHE_TEST_PULL_URL, printing "waiting" when it finds the lock
// taken and then "dir=DIR" or "err=ERROR".
func pullHelper() int {
	files, err := fakeModelFiles(bigFloats)
	if err != nil {
		fmt.Println("err=" + err.Error())
		return 1
	}
	c := &modelcache.Cache{Dir: os.Getenv(envHelperDir), BaseURL: os.Getenv(envHelperURL), Models: []modelcache.Model{pin(files)}}
	modelcache.SetLockWait(c, func(string) { fmt.Println("waiting") })
	dir, err := c.Pull(context.Background(), fakeRepo)
	if err != nil {
		fmt.Println("err=" + err.Error())
		return 1
	}
	fmt.Println("dir=" + dir)
	return 0
}

// TestConcurrentPullsFromTwoProcesses: the lock holds across processes;
// the second process waits, then finds the model the first installed.
func TestConcurrentPullsFromTwoProcesses(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("the lock excludes other processes only where flock exists")
	}
	files := fakeModel(t, bigFloats)
	h, srv := newHub(t, fakeRepo, fakeRev, files)
	gate := make(chan struct{})
	h.mu.Lock() // the requests come from other processes: no happens-before but the lock
	h.gate["model.safetensors"] = gate
	h.arrived = make(chan string, 32)
	h.mu.Unlock()
	dir := filepath.Join(t.TempDir(), "models")

	start := func() (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envHelper+"=1", envHelperDir+"="+dir, envHelperURL+"="+srv.URL)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, bufio.NewScanner(out)
	}
	a, aOut := start()
	for f := range h.arrived { // a holds the lock and is downloading
		if f == "model.safetensors" {
			break
		}
	}
	b, bOut := start()
	first := make(chan string, 1)
	go func() {
		bOut.Scan()
		first <- bOut.Text()
	}()
	select {
	case line := <-first:
		if line != "waiting" {
			close(gate)
			t.Fatalf("second process said %q, want waiting", line)
		}
	case f := <-h.arrived: // the first is held at the gate: this is the second, unlocked
		close(gate)
		t.Fatalf("the second process requested %s while the first held the lock", f)
	}
	close(gate)
	var results []string
	for _, p := range []struct {
		cmd *exec.Cmd
		out *bufio.Scanner
	}{{a, aOut}, {b, bOut}} {
		var lines []string
		for p.out.Scan() {
			lines = append(lines, p.out.Text())
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("helper: %v, said %q", err, lines)
		}
		results = append(results, strings.Join(lines, "|"))
	}
	want := "dir=" + filepath.Join(dir, "test-org--tiny-model")
	if results[0] != want || results[1] != want {
		t.Fatalf("helpers said %q, want %q from both", results, want)
	}
	for f := range files {
		if n := h.servedCount(f); n != 1 {
			t.Fatalf("%s downloaded %d times", f, n)
		}
	}
}
