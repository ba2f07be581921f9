package client_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/apptest"
)

// TestReadmeGoExample runs the README's Go example ("Use it from your
// code") against a live ragd, so it cannot rot.
func TestReadmeGoExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- example: go -->\n```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go example")
	}
	// A directory inside the module, so the example's imports resolve to
	// this checkout.
	dir, err := os.MkdirTemp("..", ".readme-example-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	srv := apptest.Start(t, apptest.WithAuth)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./"+filepath.Base(dir))
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "RAGD_URL="+srv.URL, "RAGD_API_KEY="+apptest.AdminKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of the README example: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "1 w1 ") {
		t.Fatalf("the README example did not print w1 as the first hit:\n%s", out)
	}
}
