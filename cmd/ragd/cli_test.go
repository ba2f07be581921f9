package main

import (
	"strings"
	"testing"

	"github.com/ragd/ragd/spi"
)

// TestBreakerPrintsHalfOpenBeforeTheProbe is issue 12 item 12: the
// open -> half_open transition happens when the cooldown has passed, so it
// is printed before the probe's outcome, not after it.
func TestBreakerPrintsHalfOpenBeforeTheProbe(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"breaker", "-f", "2"}, {"breaker", "-f", "2", "--no-recover"}} {
		_, stdout, _ := runRagd(t, args...)
		half := strings.Index(stdout, "transition open -> half_open")
		probe := strings.Index(stdout, "probe:")
		if half < 0 || probe < 0 || half > probe {
			t.Errorf("%v: half-open transition at %d, probe at %d:\n%s", args, half, probe, stdout)
		}
	}
}

// TestUsageErrorsPointAtTheSubcommandsHelp: a bad flag of a subcommand
// points at that subcommand's help.
func TestUsageErrorsPointAtTheSubcommandsHelp(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"breaker -f 0":      "ragd breaker --help",
		"ingest":            "ragd ingest --help",
		"query --limit x a": "ragd query --help",
		"nope":              "ragd --help",
	} {
		code, _, stderr := runRagd(t, strings.Fields(args)...)
		if code != exitUsage || !strings.Contains(stderr, "Run '"+want+"'") {
			t.Errorf("%s: exit %d, stderr %q, want a pointer at %q", args, code, stderr, want)
		}
	}
}

// TestIngestSkipsEmptyDocuments: documents with no title, text or vector
// (Cranfield has two) are counted as skipped in one summary line, not as
// failures, and the run exits 0.
func TestIngestSkipsEmptyDocuments(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	file := writeJSONL(t, t.TempDir(), "corpus.jsonl",
		spi.Document{ID: "a", Text: "fine"},
		spi.Document{ID: "empty-1"},
		spi.Document{ID: "b", Title: "also fine"},
		spi.Document{ID: "empty-2", Metadata: spi.Strings(map[string]string{"lang": "en"})},
	)
	code, stdout, stderr := runRagd(t, "ingest", file, "--server", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if ok, f := ingestCount(t, stdout, "ok"), ingestCount(t, stdout, "failed"); ok != 2 || f != 0 {
		t.Fatalf("ok %d failed %d, want 2 0:\n%s", ok, f, stdout)
	}
	if n := ingestCount(t, stdout, "skipped"); n != 2 || !strings.Contains(stdout, "empty") {
		t.Fatalf("skipped %d, want 2 empty documents:\n%s", n, stdout)
	}
}
