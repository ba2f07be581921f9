package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/syncbuf"
)

// The quickstart test runs the exact command README.md gives for starting
// ragd (the fenced block after the <!-- quickstart:serve --> marker), from
// the repository root, with the data directory and listen address moved
// into the test's sandbox through the variables rag.yaml reads. It then
// queries the demo corpus for a known answer, restarts to check that
// everything persisted, and removes the derived keyword index to check that
// a restart rebuilds it from the system of record.

var quickstartBlock = regexp.MustCompile("(?s)<!-- quickstart:serve -->\\s*```[a-z]*\\n(.*?)\\n```")

func readmeCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	m := quickstartBlock.FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no <!-- quickstart:serve --> code block")
	}
	cmd := strings.TrimSpace(string(m[1]))
	if strings.Contains(cmd, "\n") {
		t.Fatalf("quickstart must be one command, got %q", cmd)
	}
	return cmd
}

type quickstart struct {
	t       *testing.T
	command string
	dataDir string
	addr    string
}

// start runs the README command and waits until /readyz answers 200. It
// returns the process's stderr so far and a stop func that sends SIGINT
// and expects a clean exit.
func (q *quickstart) start() (stderr *syncbuf.Buffer, stop func()) {
	t := q.t
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+q.command)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "RAGD_DATA_DIR="+q.dataDir, "RAGD_LISTEN="+q.addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr = &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", q.command, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		t.Helper()
		// Interrupt the program go run built (go run's child), as Ctrl-C
		// would; go run then exits with the program's status.
		interruptChildren(t, cmd.Process.Pid)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("ragd did not exit cleanly on SIGINT: %v\n%s", err, stderr)
			}
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Errorf("ragd did not stop within 30s of SIGINT")
		}
	}
	deadline := time.Now().Add(3 * time.Minute) // go run compiles first
	for {
		select {
		case err := <-exited:
			t.Fatalf("ragd exited before it was ready: %v\n%s", err, stderr)
		default:
		}
		resp, err := http.Get("http://" + q.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stderr, stop
			}
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("ragd not ready after 3 minutes\n%s", stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type queryAnswer struct {
	Hits []struct {
		ID       string `json:"id"`
		Document *struct {
			Title string `json:"title"`
		} `json:"document"`
	} `json:"hits"`
	Sources map[string]struct {
		Status string `json:"status"`
	} `json:"sources"`
}

func (q *quickstart) query(body string) queryAnswer {
	q.t.Helper()
	resp, err := http.Post("http://"+q.addr+"/v1/query", "application/json", strings.NewReader(body))
	if err != nil {
		q.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		q.t.Fatalf("query %s: status %d", body, resp.StatusCode)
	}
	var a queryAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		q.t.Fatal(err)
	}
	return a
}

func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ragd with go run; skipped in -short mode")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not on PATH")
	}
	q := &quickstart{t: t, command: readmeCommand(t), dataDir: t.TempDir(), addr: freeAddr(t)}
	if !strings.HasPrefix(q.command, "go run ./cmd/ragd serve") {
		t.Fatalf("README quickstart %q does not start ragd serve", q.command)
	}

	// First start: the demo corpus is loaded and answers a known question.
	stderr, stop := q.start()
	if !strings.Contains(stderr.String(), "loaded 24 sample documents") {
		t.Errorf("first start did not load the demo corpus:\n%s", stderr)
	}
	a := q.query(`{"text": "circuit breaker half-open trial calls after a cooldown", "limit": 3}`)
	if len(a.Hits) == 0 || a.Hits[0].ID != "circuit-breaker" || a.Hits[0].Document == nil {
		t.Fatalf("known answer: want circuit-breaker first, hydrated; got %+v", a.Hits)
	}
	// The shipped rag.yaml leaves the graph out (docs/eval.md).
	for src, want := range map[string]string{"vector": "ok", "keyword": "ok", "graph": "disabled"} {
		if a.Sources[src].Status != want {
			t.Errorf("source %s: status %q, want %s", src, a.Sources[src].Status, want)
		}
	}
	resp, err := http.Post("http://"+q.addr+"/v1/documents", "application/json", strings.NewReader(
		`{"documents": [{"id": "qs-extra", "title": "Persistence check", "text": "zeppelin mooring masts persist across restarts"}]}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ingest: %v %v", err, resp)
	}
	resp.Body.Close()
	stop()

	// Restart: nothing reloaded, everything still answers.
	stderr, stop = q.start()
	if strings.Contains(stderr.String(), "loaded 24 sample documents") {
		t.Errorf("restart reloaded the demo corpus: the stores did not persist")
	}
	if a := q.query(`{"text": "zeppelin mooring masts", "limit": 1}`); len(a.Hits) == 0 || a.Hits[0].ID != "qs-extra" {
		t.Fatalf("document written before the restart is gone: %+v", a.Hits)
	}
	stop()

	// A lost derived index is rebuilt from the system of record at start.
	if err := os.RemoveAll(filepath.Join(q.dataDir, "keyword")); err != nil {
		t.Fatal(err)
	}
	_, stop = q.start()
	defer stop()
	a = q.query(`{"text": "zeppelin mooring masts", "limit": 1, "sources": {"vector": {"enabled": false}, "graph": {"enabled": false}}}`)
	if len(a.Hits) == 0 || a.Hits[0].ID != "qs-extra" || a.Sources["keyword"].Status != "ok" {
		t.Fatalf("keyword index not rebuilt after removal: %+v", a)
	}
}

// interruptChildren sends SIGINT to the direct children of pid (or to pid
// itself when it has none, as when the command is not go run).
func interruptChildren(t *testing.T, pid int) {
	t.Helper()
	// Each thread lists the children it forked; go run is multi-threaded.
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var children []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		children = append(children, strings.Fields(string(b))...)
	}
	if len(children) == 0 {
		_ = syscall.Kill(pid, syscall.SIGINT)
		return
	}
	for _, c := range children {
		var child int
		if _, err := fmt.Sscan(c, &child); err == nil {
			_ = syscall.Kill(child, syscall.SIGINT)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
