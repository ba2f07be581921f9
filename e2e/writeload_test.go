package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/testenv"
)

// TestWriteLoad measures the write path under 8 concurrent writers
// (batches of 16 documents, upserts and some deletes): write latency and
// throughput, and how far the derived stores fall behind, in embedded mode
// and with PostgreSQL + bleve + Neo4j, where Neo4j hangs (blackholed) for
// the middle phase. It reports figures (docs/ingest.md) and fails only on
// errors or a store that does not converge: no timing is asserted. Runs
// only with RAG_LOAD=1.
func TestWriteLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skip("set RAG_LOAD=1 to run the write load")
	}
	startBuild()
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "rag.yaml")
		if err := os.WriteFile(cfgPath, []byte(crashConfig(filepath.Join(dir, "data"), "", nil)), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startRagd(t, cfgPath)
		c := newClient(p.addr, "")
		defer c.close()
		writeLoad(t, c, []loadPhase{{name: "steady", d: 15 * time.Second}})
	})
	t.Run("servers", func(t *testing.T) {
		viaProxy, proxy := neo4jViaProxy(t, testenv.Neo4j(t))
		_, c := serverRagd(t, testenv.Postgres(t), viaProxy)
		writeLoad(t, c, []loadPhase{
			{name: "steady", d: 15 * time.Second},
			{name: "neo4j-hung", d: 10 * time.Second, enter: proxy.Blackhole},
			{name: "neo4j-back", d: 10 * time.Second, enter: proxy.Pass},
		})
	})
}

type loadPhase struct {
	name  string
	d     time.Duration
	enter func()
}

type loadSample struct {
	phase int
	took  time.Duration
	docs  int
	err   bool
}

func writeLoad(t *testing.T, c *client, phases []loadPhase) {
	const writers, batch = 8, 16
	tag := randomTag(t)
	var (
		mu      sync.Mutex
		samples []loadSample
		phase   int
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				mu.Lock()
				ph := phase
				mu.Unlock()
				docs := make([]document, batch)
				for i := range docs {
					id := fmt.Sprintf("%s-w%d-%d", tag, w, (n*batch+i)%400)
					docs[i] = document{ID: id, Tenant: tag, Title: "load " + id,
						Text: fmt.Sprintf("write %d of writer %d: supersonic boundary layer transition on a swept wing", n, w)}
				}
				begin := time.Now()
				var resp batchResponse
				path, body := "/v1/documents", any(upsertRequest{Documents: docs})
				if n%5 == 4 {
					ids := make([]string, 4)
					for i := range ids {
						ids[i] = docs[i].ID
					}
					path, body = "/v1/documents/delete", deleteRequest{IDs: ids}
				}
				st, _, err := c.call(ctx, http.MethodPost, path, body, &resp)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				samples = append(samples, loadSample{phase: ph, took: time.Since(begin), docs: resp.OK + resp.NotFound, err: err != nil || st != http.StatusOK})
				mu.Unlock()
			}
		})
	}
	type lagSample struct {
		phase   int
		seconds map[string]float64
		behind  map[string]uint64
	}
	var lags []lagSample
	lagDone := make(chan struct{})
	go func() {
		defer close(lagDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var h healthResponse
			if st, _, err := c.call(ctx, http.MethodGet, "/v1/status/health", nil, &h); err != nil || st/100 != 2 || h.Log == nil {
				continue
			}
			s := lagSample{seconds: map[string]float64{}, behind: map[string]uint64{}}
			mu.Lock()
			s.phase = phase
			mu.Unlock()
			for _, l := range h.Log.Stores {
				s.seconds[l.Store], s.behind[l.Store] = l.LagSeconds, l.Behind
			}
			lags = append(lags, s)
		}
	}()
	for i, ph := range phases {
		if ph.enter != nil {
			ph.enter()
		}
		mu.Lock()
		phase = i
		mu.Unlock()
		time.Sleep(ph.d)
	}
	cancel()
	wg.Wait()
	<-lagDone
	drainStart := time.Now()
	drained := waitConverged(t, c, drainStart, 3*time.Minute)

	t.Logf("%-11s %8s %7s %9s %9s %9s %6s  %s", "phase", "requests", "docs/s", "p50", "p99", "max", "errors", "max lag keyword / graph (entries, s)")
	for i, ph := range phases {
		var took []time.Duration
		docs, errs := 0, 0
		for _, s := range samples {
			if s.phase != i {
				continue
			}
			took = append(took, s.took)
			docs += s.docs
			if s.err {
				errs++
			}
		}
		if len(took) == 0 {
			continue
		}
		slices.Sort(took)
		var kwN, grN uint64
		var kwS, grS float64
		for _, l := range lags {
			if l.phase == i {
				kwN, grN = max(kwN, l.behind["keyword"]), max(grN, l.behind["graph"])
				kwS, grS = max(kwS, l.seconds["keyword"]), max(grS, l.seconds["graph"])
			}
		}
		t.Logf("%-11s %8d %7.0f %9v %9v %9v %6d  %d, %.1fs / %d, %.1fs", ph.name, len(took), float64(docs)/ph.d.Seconds(),
			percentile(took, 0.50).Round(100*time.Microsecond), percentile(took, 0.99).Round(100*time.Microsecond),
			took[len(took)-1].Round(100*time.Microsecond), errs, kwN, kwS, grN, grS)
		if errs > 0 {
			t.Errorf("phase %s: %d write requests failed", ph.name, errs)
		}
	}
	t.Logf("every derived store applied the log's head %v after the load stopped", drained.Round(time.Millisecond))
	checkStores(t, c, "ragd")
}
