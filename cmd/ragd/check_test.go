package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

func TestCheckFindsAndRepairsADamagedIndex(t *testing.T) {
	t.Parallel()
	srv := startTestRagd(t, nil)
	ctx := context.Background()
	docs := []spi.Document{{ID: "a", Text: "alpha"}, {ID: "b", Text: "beta"}}
	for _, r := range srv.App.Pipeline.Upsert(ctx, docs, ingest.WriteOptions{Wait: 30 * time.Second}) {
		if r.Status != ingest.StatusOK {
			t.Fatalf("upsert: %+v", r)
		}
	}
	code, stdout, stderr := runRagd(t, "check", "--server", srv.URL)
	if code != 0 || !regexp.MustCompile(`(?m)^keyword\s+\d+\s+2\s+2\s+0\s+0\s+0\s+-`).MatchString(stdout) {
		t.Fatalf("check of a healthy server: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Behind the pipeline's back: a ghost in the keyword index (the bleve
	// backend, or the wrapper of one that opened empty and joined).
	kw, ok := srv.App.Keyword.(interface {
		Upsert(context.Context, []spi.Document) error
	})
	if !ok {
		t.Fatalf("keyword source %T has no Upsert", srv.App.Keyword)
	}
	if err := kw.Upsert(ctx, []spi.Document{{ID: "ghost", Text: "boo"}}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runRagd(t, "check", "--server", srv.URL)
	if code != 1 || !strings.Contains(stdout, `extra    "ghost"`) || !strings.Contains(stderr, "keyword differs from the record in 1 documents") {
		t.Fatalf("check of a damaged index: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runRagd(t, "check", "--server", srv.URL, "--repair")
	if code != 0 || !regexp.MustCompile(`(?m)^keyword(\s+\d+){6}\s+1\s+0\s+-`).MatchString(stdout) {
		t.Fatalf("repair: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, _ := runRagd(t, "check", "--server", srv.URL, "--json"); code != 0 || !strings.Contains(stdout, `"extra": 0`) {
		t.Fatalf("check after the repair: exit %d\n%s", code, stdout)
	}
}
