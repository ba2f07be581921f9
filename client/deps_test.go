package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// clientDeps is every package outside the standard library that a program
// importing only package client links (go list -deps, client itself
// included). The client shares the API's JSON types through package wire,
// which imports no server code; before the move it linked 151 packages
// (echo, the MCP SDK, Prometheus, OpenTelemetry, ...). Grow this list only
// on purpose: every entry ends up in every user's binary.
var clientDeps = []string{
	// spi.ParseFilter reads a filter token by token with its bounds
	// (issue 30 item 1): jsontext and its internals, one module already
	// in go.mod, pure Go.
	"github.com/go-json-experiment/json/internal",
	"github.com/go-json-experiment/json/internal/jsonflags",
	"github.com/go-json-experiment/json/internal/jsonopts",
	"github.com/go-json-experiment/json/internal/jsonwire",
	"github.com/go-json-experiment/json/jsontext",
	"github.com/ragd/ragd/breaker",             // breaker.Snapshot in the status bodies
	"github.com/ragd/ragd/client",              //
	"github.com/ragd/ragd/internal/atomicfile", // imported by events
	"github.com/ragd/ragd/internal/events",     // events.Page is GET /v1/status/events
	"github.com/ragd/ragd/internal/retryafter",
	"github.com/ragd/ragd/spi", // spi.Document, spi.Filter
	"github.com/ragd/ragd/wire",
	"golang.org/x/text/transform",    // imported by norm
	"golang.org/x/text/unicode/norm", // spi's name checks
}

// TestClientDependencies fails when package client links a package
// outside the standard library that clientDeps does not list, or no longer
// links one it lists (drop it from the list then).
func TestClientDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/ragd/ragd/client").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	for _, p := range got {
		if !slices.Contains(clientDeps, p) {
			t.Errorf("package client now links %s: import it elsewhere than from client, wire or what they import, or add it to clientDeps on purpose (go list -deps ./client shows the chain with -json)", p)
		}
	}
	for _, p := range clientDeps {
		if !slices.Contains(got, p) {
			t.Errorf("package client no longer links %s: drop it from clientDeps", p)
		}
	}
	if t.Failed() {
		t.Logf("go list -deps ./client (non-standard):\n%s", strings.Join(got, "\n"))
	}
}
