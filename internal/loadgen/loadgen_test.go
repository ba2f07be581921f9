package loadgen_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/loadgen"
)

// A fake ragd: every third answer leaves graph out; /metrics counts one
// graph transition per 10 queries.
func TestRunSummarises(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintf(w, "ragd_breaker_transitions_total{breaker=\"graph\",from=\"closed\",reason=\"x\",to=\"open\"} %d\n", n.Load()/10)
		case "/v1/query":
			i := n.Add(1)
			graph := "ok"
			if i%3 == 0 {
				graph = "circuit_open"
			}
			fmt.Fprintf(w, `{"partial":%v,"sources":{"keyword":{"status":"ok"},"graph":{"status":%q}}}`, graph != "ok", graph)
		}
	}))
	defer srv.Close()
	r, err := loadgen.Run(context.Background(), loadgen.Config{Server: srv.URL, Queries: []string{"a", "b"}, Clients: 3, MaxRequests: 30, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 30 || r.Non200 != 0 || r.Partial != 10 {
		t.Fatalf("requests %d non-200 %d partial %d; want 30, 0, 10", r.Requests, r.Non200, r.Partial)
	}
	if r.SourceOK["keyword"] != 1 || r.SourceOK["graph"] < 0.66 || r.SourceOK["graph"] > 0.67 {
		t.Fatalf("source shares %v", r.SourceOK)
	}
	if r.Transitions["graph closed→open"] != 3 {
		t.Fatalf("transitions %v, want 3 graph closed→open", r.Transitions)
	}
	var b strings.Builder
	loadgen.Header(&b)
	loadgen.Row(&b, r)
	if !strings.Contains(b.String(), "| 66.7 % |") || !strings.Contains(b.String(), "graph closed→open ×3") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// A kill -9 drill: ragd goes away during the run (every query after the
// tenth fails) and its /metrics answers once, before, or comes back with
// its counters from zero. The run still reports its answers and says the
// transitions are unknown instead of failing.
func TestRunAcrossARestart(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		after      func(w http.ResponseWriter)
	}{
		{"metrics gone", "unknown: metrics not read at the end", func(w http.ResponseWriter) { http.Error(w, "down", http.StatusBadGateway) }},
		{"counters from zero", "unknown: ragd restarted", func(w http.ResponseWriter) {
			fmt.Fprintln(w, `ragd_breaker_transitions_total{breaker="graph",from="closed",reason="x",to="open"} 1`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var metrics, queries atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/metrics" && metrics.Add(1) == 1:
					fmt.Fprintln(w, `ragd_breaker_transitions_total{breaker="graph",from="closed",reason="x",to="open"} 5`)
				case r.URL.Path == "/metrics":
					tc.after(w)
				case queries.Add(1) > 10:
					http.Error(w, "down", http.StatusBadGateway)
				default:
					fmt.Fprint(w, `{"sources":{"keyword":{"status":"ok"}}}`)
				}
			}))
			defer srv.Close()
			r, err := loadgen.Run(context.Background(), loadgen.Config{Server: srv.URL, Queries: []string{"a"}, Clients: 1, MaxRequests: 20, Duration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests != 20 || r.Non200 != 10 {
				t.Fatalf("requests %d non-200 %d; want 20, 10", r.Requests, r.Non200)
			}
			if r.Transitions != nil || "unknown: "+r.TransitionsUnknown != tc.want {
				t.Fatalf("transitions %v, unknown %q; want none counted, %q", r.Transitions, r.TransitionsUnknown, tc.want)
			}
			var b strings.Builder
			loadgen.Row(&b, loadgen.Combine("both", r, r))
			if !strings.Contains(b.String(), "| "+tc.want+" |") {
				t.Fatalf("table:\n%s", b.String())
			}
		})
	}
}

// Open loop: every scheduled arrival is either sent or counted as missed;
// while the one client is held by the server, arrivals are not sent.
func TestOpenLoop(t *testing.T) {
	release := make(chan struct{})
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/query" && seen.Add(1) == 1 {
			<-release
		}
		fmt.Fprint(w, `{"sources":{}}`)
	}))
	defer srv.Close()
	done := make(chan *loadgen.Report, 1)
	go func() {
		r, err := loadgen.Run(context.Background(), loadgen.Config{Server: srv.URL, Queries: []string{"a"}, Clients: 1, MaxRequests: 50, Duration: time.Minute, Rate: 1e5})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var r *loadgen.Report
	for r == nil && seen.Load() == 0 {
		select {
		case r = <-done: // no arrival found the client idle
		default:
			runtime.Gosched()
		}
	}
	close(release)
	if r == nil {
		r = <-done
	}
	if r == nil {
		return
	}
	if r.Requests+r.Missed != 50 || int64(r.Requests) != seen.Load() {
		t.Fatalf("open loop: %d sent (server saw %d), %d missed; want 50 in all", r.Requests, seen.Load(), r.Missed)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if p := loadgen.Percentile(ds, 0.5); p != 5 {
		t.Errorf("p50 = %v", p)
	}
	if p := loadgen.Percentile(ds, 0.99); p != 10 {
		t.Errorf("p99 = %v", p)
	}
	if loadgen.Percentile(nil, 0.5) != 0 {
		t.Error("empty")
	}
}
