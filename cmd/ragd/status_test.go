package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/spi"
)

func TestStatusUp(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	code, stdout, stderr := runRagd(t, "status", "--server", srv.URL, "--strict")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, re := range []string{
		`ragd at http://127\.0\.0\.1:\d+: up \(usable sources: vector, keyword, graph\)`,
		`(?m)^COMPONENT\s+STATUS\s+LATENCY\s+DETAIL`,
		`(?m)^keyword\s+up\s+[\d.]+ ms`,
		`(?m)^BREAKER\s+STATE\s+FAILURES\s+OPENED\s+RETRY IN`,
		`(?m)^graph\s+closed\s+0/5\s+0\s+-`,
		`(?m)^change log: head \d+`,
		`(?m)^DERIVED STORE\s+APPLIED\s+BEHIND\s+LAG\s+ERROR`,
		`(?m)^keyword\s+\d+\s+0\s+-\s+-`,
		`(?m)^embedding: 0 texts pending; \d+ embedded, \d+ kept their stored vector since start$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("output does not match %s:\n%s", re, stdout)
		}
	}
	if strings.Contains(stdout, "breaker:graph") || stderr != "" {
		t.Errorf("breaker components belong in the breakers table; stderr %q\n%s", stderr, stdout)
	}
}

func TestStatusDegradedAndDown(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	if _, err := srv.App.Breakers.ForceOpen(spi.SourceGraph); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runRagd(t, "status", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("degraded: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, ": degraded (usable sources: vector, keyword)") ||
		!regexp.MustCompile(`(?m)^graph\s+open\s+\d+/5\s+1\s+\d+(\.\d)?s`).MatchString(stdout) {
		t.Fatalf("degraded output:\n%s", stdout)
	}
	if !strings.Contains(stderr, "warning: ragd is degraded") || !strings.Contains(stderr, "breaker:graph down") {
		t.Fatalf("degraded stderr: %s", stderr)
	}

	code, _, stderr = runRagd(t, "status", "--server", srv.URL, "--strict")
	if code != 1 || !strings.Contains(stderr, "failing because of --strict") {
		t.Fatalf("--strict: exit %d, stderr: %s", code, stderr)
	}

	code, stdout, _ = runRagd(t, "status", "--server", srv.URL, "--json")
	var both struct {
		Health   api.HealthResponse   `json:"health"`
		Breakers api.BreakersResponse `json:"breakers"`
	}
	if err := json.Unmarshal([]byte(stdout), &both); err != nil || code != 0 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, stdout)
	}
	if both.Health.Status != spi.StatusDegraded || both.Breakers.Total != len(spi.Backends()) || both.Health.Components["breaker:graph"].State != "open" {
		t.Fatalf("--json: %+v", both)
	}

	for _, name := range []string{spi.SourceVector, spi.SourceKeyword} {
		if _, err := srv.App.Breakers.ForceOpen(name); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = runRagd(t, "status", "--server", srv.URL)
	if code != 1 {
		t.Fatalf("down: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, ": down (usable sources: none)") || !strings.Contains(stderr, "ragd is down: no retrieval source is usable") {
		t.Fatalf("down:\n%s\n%s", stdout, stderr)
	}
}

func TestStatusAuthAndErrors(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, withAuth)
	code, _, stderr := runRagd(t, "status", "--server", srv.URL)
	if code != 1 || !strings.Contains(stderr, "401 Unauthorized") || !strings.Contains(stderr, "--api-key") {
		t.Fatalf("no key: exit %d, stderr: %s", code, stderr)
	}
	code, stdout, stderr := runRagd(t, "status", "--server", srv.URL, "--api-key", testQueryKey)
	if code != 0 || !strings.Contains(stdout, ": up") {
		t.Fatalf("query key: exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, _, stderr = runRagd(t, "status", "--server", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "cannot reach ragd") {
		t.Fatalf("unreachable: exit %d, stderr: %s", code, stderr)
	}
	if code, _, _ := runRagd(t, "status", "extra"); code != exitUsage {
		t.Fatalf("status with an argument: exit %d, want %d", code, exitUsage)
	}
}
