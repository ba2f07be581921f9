package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/internal/sourcestats"
	"github.com/ragd/ragd/spi"
)

// Files the console's state is kept in, in data_dir (Options.KeepState).
const (
	EventsFile = "events.jsonl"
	HoldsFile  = "holds.json"
)

// How often the history's gauges are sampled.
const (
	sampleGuardsEvery = time.Second
	sampleLagEvery    = 5 * time.Second
	countDocsEvery    = 15 * time.Second
	countDocsTimeout  = 5 * time.Second
)

// console is what the operator console reads besides the API's own
// status: the identity of this process, the document counts, and where
// maintenance holds are kept.
type console struct {
	instance string
	started  time.Time
	holds    *holdFile // nil unless Options.KeepState
	running  bool      // startConsole ran: Close marks the stop

	mu     sync.Mutex
	counts map[string]*int // store name -> documents, nil when unknown
}

// wireConsole creates the event timeline (breaker transitions, bursts,
// starts and stops; kept in data_dir with Options.KeepState), the
// per-source window of recent queries and the history the console charts.
func (a *App) wireConsole(keep bool) error {
	a.console.instance, a.console.started = newInstanceID(), a.now()
	a.Events = events.NewRing(events.DefaultCapacity, a.now)
	if keep && a.Config.DataDir != "" {
		if err := a.keepConsoleState(); err != nil {
			// The console still works, from memory: a read-only data
			// directory must not stop ragd from serving.
			a.Logger.Warn("app: the timeline and maintenance holds are kept in memory only", slog.String("error", err.Error()))
		}
	}
	a.History = history.New(history.Config{Now: a.now})
	w, err := sourcestats.New(sourcestats.Config{Publish: a.publish, Now: a.now})
	if err != nil {
		return fmt.Errorf("app: source stats: %w", err)
	}
	a.SourceStats = w
	return nil
}

// keepConsoleState opens the timeline's file and the holds' file in
// data_dir.
func (a *App) keepConsoleState() error {
	dir := a.Config.DataDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("app: data_dir: %w", err)
	}
	ring, err := events.Open(filepath.Join(dir, EventsFile), events.DefaultCapacity, a.now)
	if err != nil {
		return err
	}
	a.Events = ring
	a.console.holds = &holdFile{path: filepath.Join(dir, HoldsFile)}
	return nil
}

func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// publish adds e to the timeline (the breakers' and the window's hook).
func (a *App) publish(e events.Event) {
	if a.Events != nil {
		a.Events.Publish(e)
	}
}

// publishServer marks this process's start or stop on the timeline.
func (a *App) publishServer(phase string) {
	a.publish(events.Event{Kind: events.KindServer, Source: events.SourceServer,
		Server: &events.Server{Phase: phase, Instance: a.console.instance, Version: a.version}})
}

// startConsole runs once the app is wired: it marks the start on the
// timeline, gives the history every breaker's state, restores the
// maintenance holds kept from before a restart and starts sampling.
func (a *App) startConsole() {
	a.console.running = true
	a.publishServer(events.ServerStarted)
	if a.Breakers != nil {
		for _, s := range a.Breakers.Snapshot() {
			a.History.Breaker(s.Name, history.StateClosed, a.now())
		}
		a.restoreHolds()
	}
	a.background(a.sample)
}

// bandState is the history's name for the state a transition entered.
func bandState(t breaker.Transition) string {
	if t.Reason == breaker.ReasonHeld {
		return history.StateHeld
	}
	return t.To.String()
}

// observeConsole records a breaker transition in the history and keeps
// the maintenance holds' file current.
func (a *App) observeConsole(t breaker.Transition) {
	if a.History != nil {
		a.History.Breaker(t.Name, bandState(t), t.At)
	}
	h := a.console.holds
	if h == nil || a.Breakers == nil {
		return
	}
	if t.Reason == breaker.ReasonHeld || t.Released != nil {
		if err := h.save(a.Breakers.Snapshot); err != nil {
			a.Logger.Warn("app: maintenance holds not saved: a restart would release them", slog.String("error", err.Error()))
		}
	}
}

// apiBreakers is the breakers the API acts on (nil when breakers are
// disabled): the registry, whose holds and releases are saved before they
// return when the holds are kept (savedBreakers).
func (a *App) apiBreakers() api.Breakers {
	switch {
	case a.Breakers == nil:
		return nil
	case a.console.holds == nil:
		return a.Breakers
	}
	return savedBreakers{Registry: a.Breakers, holds: a.console.holds}
}

// restoreHolds holds again the breakers held when the last process
// stopped, with their operator, reason and start: the hold's duration
// counts from when it was placed, and the restore is no new trip
// (breaker.Manual.Since).
func (a *App) restoreHolds() {
	h := a.console.holds
	if h == nil {
		return
	}
	held, err := h.load()
	if err != nil {
		a.Logger.Warn("app: maintenance holds from before the restart not read", slog.String("error", err.Error()))
		return
	}
	for name, hold := range held {
		if _, err := a.Breakers.Hold(name, breaker.Manual{By: hold.By, Note: hold.Reason, Since: hold.Since}); err != nil {
			a.Logger.Warn("app: maintenance hold not restored", slog.String("breaker", name), slog.String("error", err.Error()))
			continue
		}
		a.Logger.Info("app: maintenance hold restored", slog.String("breaker", name), slog.String("by", hold.By))
	}
}

// sample feeds the history's gauges until ctx ends: each source's limit
// and calls in flight every second, each derived store's lag every five,
// and counts the stores' documents every fifteen.
func (a *App) sample(ctx context.Context) {
	guards := time.NewTicker(sampleGuardsEvery)
	defer guards.Stop()
	var lastLag, lastCount time.Time
	for {
		now := time.Now()
		for _, g := range a.guardList() {
			s := g.Snapshot()
			if s.Limit > 0 {
				a.History.Sample(history.GaugeLimit, s.Name, float64(s.Limit))
				a.History.Sample(history.GaugeInflight, s.Name, float64(s.Inflight))
			}
		}
		if now.Sub(lastLag) >= sampleLagEvery && a.Pipeline != nil {
			lastLag = now
			a.sampleLag(ctx)
		}
		if now.Sub(lastCount) >= countDocsEvery {
			lastCount = now
			a.countDocuments(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-guards.C:
		}
	}
}

func (a *App) sampleLag(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, countDocsTimeout)
	defer cancel()
	st, err := a.Pipeline.Status(ctx)
	if err != nil {
		return
	}
	for _, l := range st.Stores {
		if l.Dormant {
			continue // not kept: no lag to chart
		}
		a.History.Sample(history.GaugeLagEntries, l.Store, float64(l.Behind))
		a.History.Sample(history.GaugeLagSeconds, l.Store, l.LagSeconds)
	}
}

// countDocuments asks every store that can count for its documents,
// concurrently, each within countDocsTimeout; a store that cannot answer
// in time is unknown until the next round.
func (a *App) countDocuments(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, countDocsTimeout)
	defer cancel()
	counts := map[string]*int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, st := range a.stores() {
		c := counterOf(st.store)
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.DocCount(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			counts[st.name] = &n
			mu.Unlock()
		}()
	}
	wg.Wait()
	a.console.mu.Lock()
	a.console.counts = counts
	a.console.mu.Unlock()
}

// counterOf returns store's document counter, looking inside a server
// store opened on first use once it is connected.
func counterOf(store any) spi.DocCounter {
	switch s := store.(type) {
	case *lazyVector:
		if b, ok := s.current(); ok {
			store = b
		}
	case *lazyGraph:
		if b, ok := s.current(); ok {
			store = b
		}
	case *lazyKeyword:
		if b, ok := s.current(); ok {
			store = b
		}
	}
	c, _ := store.(spi.DocCounter)
	return c
}

// namedStore is one configured store.
type namedStore struct {
	name, kind string
	store      any
}

// stores lists the configured stores, the record first.
func (a *App) stores() []namedStore {
	b := a.Config.Backends
	var out []namedStore
	if a.Vector != nil {
		out = append(out, namedStore{spi.SourceVector, b.Vector.Kind, a.Vector})
	}
	if a.Keyword != nil {
		out = append(out, namedStore{spi.SourceKeyword, b.Keyword.Kind, a.Keyword})
	}
	if a.Graph != nil {
		out = append(out, namedStore{spi.SourceGraph, b.Graph.Kind, a.Graph})
	}
	return out
}

// inventory is the API's Config.Inventory: each query source's defaults
// as the retriever applies them, with its guard; the embedder; the stores
// with their last document counts.
func (a *App) inventory(context.Context) api.Inventory {
	inv := api.Inventory{Sources: []api.SourceInfo{}, Stores: []api.StoreInfo{}}
	for _, d := range a.Retriever.SourceDefaults() {
		if !d.Enabled && d.Reason != "disabled" {
			continue // not configured
		}
		inv.Sources = append(inv.Sources, api.SourceInfo{Name: d.Name, Enabled: d.Enabled, Weight: d.Weight,
			TimeoutMS: int(d.Timeout.Milliseconds()), Guard: a.guardSnapshot(d.Name)})
	}
	if a.Embedder != nil {
		inv.Sources = append(inv.Sources, api.SourceInfo{Name: spi.SourceEmbedder, Enabled: true,
			TimeoutMS: int(a.sourceTimeout(spi.SourceEmbedder).Milliseconds()), Guard: a.guardSnapshot(spi.SourceEmbedder)})
		inv.Embedder = &api.EmbedderInfo{Kind: a.Config.Embedder.Kind, Identity: a.EmbedderIdentity, Dimension: a.Embedder.Dimension()}
	}
	a.console.mu.Lock()
	counts := a.console.counts
	a.console.mu.Unlock()
	for i, st := range a.stores() {
		role := "derived"
		if i == 0 {
			role = "record"
		}
		dormant := a.Pipeline != nil && i > 0 && a.Pipeline.Dormant(st.name)
		inv.Stores = append(inv.Stores, api.StoreInfo{Name: st.name, Kind: st.kind, Role: role, Documents: counts[st.name], Dormant: dormant})
	}
	return inv
}

func (a *App) guardSnapshot(name string) *guard.Snapshot {
	g := a.Guards[name]
	if g == nil {
		return nil
	}
	s := g.Snapshot()
	return &s
}

// disabledSources are the query sources a query leaves out unless it
// enables them.
func (a *App) disabledSources() []string {
	var out []string
	for _, d := range a.Retriever.SourceDefaults() {
		if !d.Enabled && d.Reason == "disabled" {
			out = append(out, d.Name)
		}
	}
	return out
}
