package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestHungModelTripsUnderLoad: the built-in model hung (or failing, by
// fault injection in front of it) under more concurrent queries than it
// has cores. The query guard's wait limit keeps admitting by the model's
// last measured speed; the admitted queries time out (or fail) with no
// success beside them, their timeouts count once a stall, and the
// embedder's breaker opens. Every answer still comes, from the keyword
// source; then the vector source says the embedder's circuit is open.
func TestHungModelTripsUnderLoad(t *testing.T) {
	for _, fault := range []faults.Fault{{Hang: true}, {Fail: true}} {
		t.Run(fmt.Sprintf("%+v", fault), func(t *testing.T) {
			cfg := realModelConfig(t)
			cfg.Server.DebugFaults = true
			cfg.Embedder.Cache.QueryEntries = 0
			cfg.Retriever.EmbedTimeoutMS = 100
			cfg.Breakers.FailureThreshold = 3
			cfg.Breakers.ResetTimeoutS = 600 // stays open for the assertions
			a := newApp(t, cfg)
			defer a.Close()
			upsertAll(t, a, corpus(20))
			if err := a.Faults.Set(spi.SourceEmbedder, fault); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := a.Breakers.Get(spi.SourceEmbedder)
			var wg sync.WaitGroup
			errs := make(chan string, 16)
			for c := range 16 {
				wg.Go(func() {
					for i := 0; ctx.Err() == nil && b.State() == breaker.Closed; i++ {
						res, err := a.Retriever.Retrieve(ctx, retriever.Query{Text: fmt.Sprintf("words of document %d %d", c, i), Limit: 3})
						if ctx.Err() != nil {
							return
						}
						if err != nil || res.Sources[spi.SourceKeyword].Status != retriever.StatusOK || res.Sources[spi.SourceVector].Status == retriever.StatusOK {
							errs <- fmt.Sprintf("query while the model is down: %v, sources %+v", err, res.Sources)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			if st := b.State(); st != breaker.Open {
				t.Fatalf("embedder breaker %v after a minute of 16 clients on a down model, want open", st)
			}
			res := top(t, a, retriever.Query{Text: "words of document 1", Limit: 3})
			if v := res.Sources[spi.SourceVector]; v.Status != retriever.StatusCircuitOpen || !strings.Contains(v.Error, "embedder") {
				t.Fatalf("vector source %+v with the embedder's breaker open, want circuit_open naming the embedder", v)
			}
			if kw := res.Sources[spi.SourceKeyword]; kw.Status != retriever.StatusOK {
				t.Fatalf("keyword while the embedder is open: %+v", kw)
			}
		})
	}
}
