package testenv_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/testenv"
)

// get returns the body of GET url, or the error.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

func TestOpenSearchSharedServerAnswers(t *testing.T) {
	u := testenv.OpenSearch(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The analyzers ragd's keyword backend needs: analysis-common's.
	body := `{"tokenizer":"standard","filter":[{"type":"stemmer","language":"possessive_english"},"lowercase","porter_stem"],"text":"John's Flows"}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u+"/_analyze", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"token":"john"`) || !strings.Contains(string(b), `"token":"flow"`) {
		t.Fatalf("_analyze with analysis-common's filters: HTTP %d %s", res.StatusCode, b)
	}
}

func TestDedicatedOpenSearchPauseStopStart(t *testing.T) {
	s := testenv.DedicatedOpenSearch(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := get(ctx, s.URL+"/_cluster/health"); err != nil {
		t.Fatalf("a started node does not answer: %v", err)
	}
	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := get(pctx, s.URL+"/_cluster/health")
	pcancel()
	if err == nil {
		t.Fatal("a paused node answered")
	}
	if err := s.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctx, s.URL+"/_cluster/health"); err != nil {
		t.Fatalf("a resumed node does not answer: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctx, s.URL+"/_cluster/health"); err == nil {
		t.Fatal("a stopped node answered")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctx, s.URL+"/_cluster/health"); err == nil {
		t.Fatal("a killed node answered")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start after kill: %v", err)
	}
}
