package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
)

func TestHoldAndRelease(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	code, stdout, stderr := runRagd(t, "hold", "graph", "--reason", "neo4j upgrade", "--server", srv.URL)
	if code != 0 || !regexp.MustCompile(`^graph breaker: open, held by anonymous since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(neo4j upgrade\)\n$`).MatchString(stdout) {
		t.Fatalf("hold: exit %d\n%s\n%s", code, stdout, stderr)
	}
	snaps := srv.App.Breakers.Snapshot()
	i := slices.IndexFunc(snaps, func(s breaker.Snapshot) bool { return s.Name == "graph" })
	if i < 0 || snaps[i].Hold == nil || snaps[i].Hold.Reason != "neo4j upgrade" {
		t.Fatalf("server side: %+v", snaps)
	}
	_, stdout, _ = runRagd(t, "status", "--server", srv.URL)
	if !regexp.MustCompile(`(?m)^graph\s+open\s+0/5\s+1\s+never: held by anonymous since .* \(neo4j upgrade\)$`).MatchString(stdout) {
		t.Fatalf("status while held:\n%s", stdout)
	}
	code, stdout, stderr = runRagd(t, "release", "graph", "--server", srv.URL)
	if code != 0 || stdout != "graph breaker: closed\n" {
		t.Fatalf("release: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if b, _ := srv.App.Breakers.Lookup("graph"); b.State() != breaker.Closed {
		t.Fatalf("graph %v after release", b.State())
	}
}

func TestHoldErrors(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, func(c *config.Config) {
		on := true
		c.Auth.Enabled = &on
		c.Auth.Keys = []config.KeyConfig{{Name: "q", Key: strings.Repeat("q", 32), Role: config.RoleQuery}}
	})
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"hold"}, 2, "takes one breaker name"},
		{[]string{"hold", "a", "b"}, 2, "takes one breaker name"},
		{[]string{"release"}, 2, "takes one breaker name"},
		{[]string{"hold", "graph", "--api-key", strings.Repeat("q", 32)}, 1, "forbidden"},
		{[]string{"hold", "nope", "--api-key", strings.Repeat("q", 32)}, 1, "forbidden"},
		{[]string{"hold", "graph", "--reason", strings.Repeat("x", 201), "--api-key", strings.Repeat("q", 32)}, 1, "forbidden"},
	} {
		code, stdout, stderr := runRagd(t, append(c.args, "--server", srv.URL)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("ragd %v: exit %d, stderr %q, stdout %q; want exit %d and %q", c.args, code, stderr, stdout, c.code, c.want)
		}
	}
}

func TestHoldUnknownBreakerAndLongReason(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"hold", "nope"}, "unknown_breaker"},
		{[]string{"release", "nope"}, "unknown_breaker"},
		{[]string{"hold", "graph", "--reason", strings.Repeat("x", 201)}, "at most 200"},
	} {
		code, _, stderr := runRagd(t, append(c.args, "--server", srv.URL)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("ragd %v: exit %d, stderr %q; want 1 and %q", c.args, code, stderr, c.want)
		}
	}
}
