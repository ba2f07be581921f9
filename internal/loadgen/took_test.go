package loadgen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/loadgen"
)

// Query vectors go into the bodies (text only when given), and each
// source's took_ms is summarised over the answers where it was ok.
func TestVectorsAndSourceTimes(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
		n      int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/query" {
			return
		}
		var b map[string]any
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Error(err)
		}
		mu.Lock()
		bodies = append(bodies, b)
		n++
		i := n
		mu.Unlock()
		// vector took i ms; keyword failed in every other answer, taking 100 ms.
		kw, kwTook := "ok", 1
		if i%2 == 0 {
			kw, kwTook = "error", 100
		}
		fmt.Fprintf(w, `{"sources":{"vector":{"status":"ok","took_ms":%d},"keyword":{"status":%q,"took_ms":%d}}}`, i, kw, kwTook)
	}))
	defer srv.Close()
	cfg := loadgen.Config{Server: srv.URL, Queries: []string{"", "two"}, Vectors: [][]float32{{1, 0}, nil},
		Clients: 1, MaxRequests: 10, Duration: time.Minute}
	r, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bodies[0]["text"]; ok || fmt.Sprint(bodies[0]["vector"]) != "[1 0]" {
		t.Errorf("vector-only body %v", bodies[0])
	}
	if _, ok := bodies[1]["vector"]; ok || bodies[1]["text"] != "two" {
		t.Errorf("text body %v", bodies[1])
	}
	st := loadgen.SourceTimes(r.Samples)
	if v := st["vector"]; v.Answers != 10 || v.P50 != 5*time.Millisecond || v.P99 != 10*time.Millisecond {
		t.Errorf("vector times %+v, want 10 answers, p50 5ms, p99 10ms", v)
	}
	if k := st["keyword"]; k.Answers != 5 || k.P99 != time.Millisecond {
		t.Errorf("keyword times %+v, want the 5 ok answers of 1 ms", k)
	}
	if row := strings.Join(loadgen.SourceTimesRow(st), ", "); row != "vector 5.0 / 10.0 ms, keyword 1.0 / 1.0 ms" {
		t.Errorf("row %q", row)
	}
	if _, err := loadgen.Run(context.Background(), loadgen.Config{Server: srv.URL, Queries: []string{"a"},
		Vectors: [][]float32{}, Clients: 1, MaxRequests: 1}); err == nil {
		t.Error("Run accepted fewer vectors than queries")
	}
}
