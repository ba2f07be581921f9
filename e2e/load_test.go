package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Load phases.
const (
	phaseBefore   = "before"   // answered before the stop began
	phaseStopping = "stopping" // in flight at some time while the server was being stopped
	phaseAfter    = "after"    // sent after the server was down
)

type sample struct {
	phase      string
	start, end time.Time
	latency    time.Duration
	status     int
	err        error
	partial    bool
	// killed is the status of the stopped server's source in the answer.
	killed string
	// took is each source's own time, from the answer.
	took map[string]time.Duration
}

// TestLoadWithBackendKilled drives `ragd serve` on dedicated PostgreSQL and
// Neo4j servers with concurrent clients over loopback, stops one server
// halfway, and reports throughput and latency per phase. Every answer must
// be 200: one source down leaves two healthy. It runs only with RAG_LOAD=1
// (it takes about a minute beyond the shared setup).
//
//	RAG_LOAD_DURATION  the before and after phases together (default 30s:
//	                   15 s before the stop, 15 s after it; the stop itself
//	                   comes on top)
//	RAG_LOAD_CLIENTS   concurrent clients (default 8)
//	RAG_LOAD_KILL      neo4j (default) or postgres
func TestLoadWithBackendKilled(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skipf("the load test runs only with %s=1", envLoad)
	}
	duration := 30 * time.Second
	if v := os.Getenv("RAG_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("RAG_LOAD_DURATION=%q: want a positive duration", v)
		}
		duration = d
	}
	clients := 8
	if v := os.Getenv("RAG_LOAD_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RAG_LOAD_CLIENTS=%q: want a positive integer", v)
		}
		clients = n
	}
	kill := os.Getenv("RAG_LOAD_KILL")
	if kill == "" {
		kill = "neo4j"
	}

	s := startStack(t)
	var (
		stop   func(context.Context) error
		source string
	)
	switch kill {
	case "neo4j":
		stop, source = s.Neo4j.Stop, "graph"
	case "postgres":
		stop, source = s.PG.Stop, "vector"
	default:
		t.Fatalf("RAG_LOAD_KILL=%q: want neo4j or postgres", kill)
	}

	// Warm up every path (connection pools, Neo4j's query plans).
	for i := range 50 {
		if st, _, body, err := s.query(context.Background(), s.queryText(i)); err != nil || st != http.StatusOK {
			t.Fatalf("warm-up query: status %d, %v: %.300s", st, err, body)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newClient(s.Ragd.addr, queryKey)
	c.hc.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
	defer c.close()

	results := make([][]sample, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i * 17; ctx.Err() == nil; n++ {
				var res queryResult
				begin := time.Now()
				st, _, err := c.call(ctx, http.MethodPost, "/v1/query", queryRequest{Text: s.queryText(n), Limit: 10}, &res)
				if ctx.Err() != nil {
					return // cut off at the end of the run
				}
				x := sample{start: begin, end: time.Now(), latency: time.Since(begin), status: st, err: err,
					partial: res.Partial, killed: res.Sources[source].Status, took: map[string]time.Duration{}}
				for name, ss := range res.Sources {
					if ss.Status == "ok" {
						x.took[name] = time.Duration(ss.TookMS * float64(time.Millisecond))
					}
				}
				results[i] = append(results[i], x)
			}
		}()
	}

	half := duration / 2
	began := time.Now()
	time.Sleep(half)
	stopBegan := time.Now()
	if err := stop(context.Background()); err != nil {
		cancel()
		wg.Wait()
		t.Fatalf("stop %s: %v", kill, err)
	}
	stopTook := time.Since(stopBegan)
	afterBegan := time.Now()
	time.Sleep(half)
	cancel()
	wg.Wait()
	end := time.Now()

	spans := map[string]time.Duration{
		phaseBefore:   stopBegan.Sub(began),
		phaseStopping: stopTook,
		phaseAfter:    end.Sub(afterBegan),
	}
	var all []sample
	for _, r := range results {
		for _, x := range r {
			switch {
			case x.end.Before(stopBegan):
				x.phase = phaseBefore
			case !x.start.Before(afterBegan):
				x.phase = phaseAfter
			default:
				x.phase = phaseStopping
			}
			all = append(all, x)
		}
	}
	t.Logf("load: %d clients, %s stopped after %v (stop took %v), GOMAXPROCS %d, ragd built with race=%v",
		clients, kill, half, stopTook.Round(time.Millisecond), runtime.GOMAXPROCS(0), os.Getenv(envRace) == "1")
	t.Logf("%-9s %8s %8s %9s %9s %9s %8s  %s", "phase", "requests", "req/s", "p50", "p99", "max", "partial", source+" statuses; p50 of each source answering ok")
	for _, ph := range []string{phaseBefore, phaseStopping, phaseAfter, "overall"} {
		var part []sample
		span := end.Sub(began)
		if ph == "overall" {
			part = all
		} else {
			span = spans[ph]
			for _, x := range all {
				if x.phase == ph {
					part = append(part, x)
				}
			}
		}
		t.Log(summary(ph, part, span))
	}

	// Zero 5xx (and no other failure) while a source is healthy: the
	// keyword index is local and never went away.
	bad := map[string]int{}
	for _, x := range all {
		switch {
		case x.err != nil:
			bad["transport: "+firstLine(x.err.Error())]++
		case x.status != http.StatusOK:
			bad[fmt.Sprintf("status %d", x.status)]++
		case x.phase == phaseAfter && !slices.Contains(droppedStatuses, x.killed):
			bad[fmt.Sprintf("%s answered %q after its server stopped", source, x.killed)]++
		case x.phase == phaseAfter && !x.partial:
			bad["not partial after the stop"]++
		}
	}
	if len(bad) > 0 {
		t.Errorf("of %d requests, failures: %v", len(all), bad)
	}
	for _, ph := range []string{phaseBefore, phaseAfter} {
		if !slices.ContainsFunc(all, func(x sample) bool { return x.phase == ph }) {
			t.Errorf("no request completed in phase %s", ph)
		}
	}
}

// summary formats one phase: count, throughput, latency percentiles, the
// share of partial answers and the killed source's statuses.
func summary(phase string, xs []sample, span time.Duration) string {
	lat := make([]time.Duration, len(xs))
	partial := 0
	statuses := map[string]int{}
	took := map[string][]time.Duration{}
	for i, x := range xs {
		for name, d := range x.took {
			took[name] = append(took[name], d)
		}
		lat[i] = x.latency
		if x.partial {
			partial++
		}
		statuses[x.killed]++
	}
	rate, share := 0.0, 0.0
	if span > 0 {
		rate = float64(len(xs)) / span.Seconds()
	}
	if len(xs) > 0 {
		share = 100 * float64(partial) / float64(len(xs))
	}
	var st strings.Builder
	for _, k := range slices.Sorted(maps.Keys(statuses)) {
		fmt.Fprintf(&st, "%s=%d ", k, statuses[k])
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
	st.WriteString(";")
	for _, name := range []string{"vector", "keyword", "graph", "graph_expand"} {
		if ds := took[name]; len(ds) > 0 {
			fmt.Fprintf(&st, " %s %s", name, ms(percentile(ds, 50)))
		}
	}
	return fmt.Sprintf("%-9s %8d %8.1f %9s %9s %9s %7.1f%%  %s", phase, len(xs), rate,
		ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(percentile(lat, 100)), share, strings.TrimSpace(st.String()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
