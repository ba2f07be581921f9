package opensearch_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/internal/testenv"
)

// uniquePrefix is an index prefix no other test uses.
func uniquePrefix() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "rt" + hex.EncodeToString(b[:])
}

// open opens a backend on url with a fresh prefix (unless cfg has one)
// and, at cleanup, closes it and deletes its indexes and template.
func open(tb testing.TB, url string, cfg opensearch.Config) *opensearch.Backend {
	tb.Helper()
	cfg.Hosts = []string{url}
	if cfg.IndexPrefix == "" {
		cfg.IndexPrefix = uniquePrefix()
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = 200 * time.Millisecond
	}
	if cfg.CallTimeout == 0 {
		// These tests check answers, not speed: on a loaded CI machine
		// (the race detector, fuzzing and other packages' servers beside
		// one node) a bulk waiting for its refresh has taken over the
		// production default of 10 s.
		cfg.CallTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := opensearch.Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		_ = b.Close()
		dropPrefix(tb, url, cfg.IndexPrefix)
	})
	return b
}

// dropPrefix deletes the indexes and the template of prefix.
func dropPrefix(tb testing.TB, url, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range []string{"/" + prefix + "-*?expand_wildcards=all", "/_index_template/" + prefix + "-tenants"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url+p, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Logf("cleanup %s: %v", p, err)
			continue
		}
		res.Body.Close()
	}
}

func shared(tb testing.TB) string {
	tb.Helper()
	return testenv.OpenSearch(tb)
}
