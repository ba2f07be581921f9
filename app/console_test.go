package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/events"
	"github.com/ragd/ragd/internal/history"
	"github.com/ragd/ragd/spi"
)

func newKeptApp(t *testing.T, cfg *config.Config) *app.App {
	t.Helper()
	a, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), KeepState: true, Version: "t"})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	return a
}

// TestConsoleStateSurvivesRestart is issue 20 items 2 and 5: the timeline
// and a maintenance hold survive a restart of ragd over the same data
// directory; the timeline marks the stop and the start, and sequence
// numbers go on.
func TestConsoleStateSurvivesRestart(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newKeptApp(t, cfg)
	first := a.Events.Since(0, 0)
	if len(first.Events) != 1 || first.Events[0].Kind != events.KindServer || first.Events[0].Server.Phase != events.ServerStarted {
		t.Fatalf("a fresh timeline: %+v", first.Events)
	}
	if _, err := a.Breakers.Hold("graph", breaker.Manual{By: "ops", Note: "neo4j upgrade"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Breakers.ForceOpenBy("keyword", breaker.Manual{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	since := a.Breakers.Snapshot()[slices.IndexFunc(a.Breakers.Snapshot(), func(s breaker.Snapshot) bool { return s.Name == "graph" })].Hold.Since
	before := a.Events.Since(0, 0).Last
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	a = newKeptApp(t, cfg)
	defer a.Close()
	p := a.Events.Since(0, 0)
	var kinds []string
	for _, e := range p.Events {
		k := string(e.Kind)
		switch {
		case e.Server != nil:
			k += ":" + e.Server.Phase
		case e.Breaker != nil:
			k += ":" + e.Source + ":" + e.Breaker.Reason + ":" + e.Breaker.By
		}
		kinds = append(kinds, k)
	}
	want := []string{"server:started", "breaker:graph:held:ops", "breaker:keyword:forced:ops", "server:stopped", "server:started", "breaker:graph:held:ops"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("timeline after a restart:\n got %v\nwant %v", kinds, want)
	}
	if p.Events[4].Seq != before+2 || p.Events[4].Server.Instance == p.Events[0].Server.Instance {
		t.Fatalf("the restart's events: %+v", p.Events[3:])
	}
	// The hold is back with its operator, reason and start, as no new
	// trip (issue 30 item 6); the forced trip, which has a cooldown, is not.
	if r := p.Events[5].Breaker; !r.Restored || r.HeldSince == nil || !r.HeldSince.Equal(since) || r.OpenedTotal != 0 {
		t.Fatalf("the restore on the timeline: %+v", r)
	}
	for _, s := range a.Breakers.Snapshot() {
		switch s.Name {
		case "graph":
			if s.State != breaker.Open || s.Hold == nil || s.Hold.By != "ops" || s.Hold.Reason != "neo4j upgrade" || !s.Hold.Since.Equal(since) ||
				!s.Since.Equal(since) || s.OpenedTotal != 0 {
				t.Fatalf("graph after the restart: %+v %+v", s, s.Hold)
			}
		case "keyword":
			if s.State != breaker.Closed {
				t.Fatalf("keyword after the restart: %+v", s)
			}
		}
	}
	// Released, it stays released across the next restart.
	if _, err := a.Breakers.ForceCloseBy("graph", breaker.Manual{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	a = newKeptApp(t, cfg)
	defer a.Close()
	if s := a.Breakers.Snapshot(); slices.ContainsFunc(s, func(s breaker.Snapshot) bool { return s.Hold != nil }) {
		t.Fatalf("a released hold came back: %+v", s)
	}
}

// TestRestoredHoldOutlastsTheKeywordJoin is a defect found by issue 30
// item 6's browser test: a keyword index that starts empty joins from the
// record and, when the load ends, closes the keyword breaker its refusals
// opened. It also released a maintenance hold restored at the same start,
// so a restart sent queries to the index under maintenance. The hook holds
// the load until the hold is restored, the order in which it was lost.
func TestRestoredHoldOutlastsTheKeywordJoin(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newKeptApp(t, cfg)
	if _, err := a.Breakers.Hold(spi.SourceKeyword, breaker.Manual{By: "ops", Note: "reindex"}); err != nil {
		t.Fatal(err)
	}
	a.Close()

	started, release := make(chan struct{}), make(chan struct{})
	restore := app.SetJoinHook(func() {
		close(started)
		<-release
	})
	defer restore()
	a = newKeptApp(t, cfg)
	defer a.Close()
	<-started
	if s := a.Breakers.Get(spi.SourceKeyword).Snapshot(); s.Hold == nil {
		t.Fatalf("the hold was not restored: %+v", s)
	}
	close(release)
	ctx := context.Background()
	eventually(t, "the keyword index to join", func() bool { return a.Ready(ctx) == nil })
	if s := a.Breakers.Get(spi.SourceKeyword).Snapshot(); s.State != breaker.Open || s.Hold == nil || s.Hold.By != "ops" {
		t.Fatalf("after the keyword index joined: %+v, want still held by ops", s)
	}
}

// TestConcurrentHoldSavesKeepTheLatestState is issue 29 item 2: the hold
// of one breaker and the release of another are saved at once, in the
// order that lost the release when each save wrote a snapshot taken
// before it (the hold's save reads the state, the release's save runs to
// its end, then the hold's save writes). After a restart the new hold is
// back and the released one is not.
func TestConcurrentHoldSavesKeepTheLatestState(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newKeptApp(t, cfg)
	if _, err := a.Breakers.Hold("keyword", breaker.Manual{By: "ops", Note: "reindex"}); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		reads   int
		armed   bool
		parked  = make(chan struct{})
		resume  = make(chan struct{})
		waiting = make(chan struct{}, 1)
	)
	restore := app.SetHoldsSaveHook(func(step string) {
		mu.Lock()
		switch {
		case step == app.HoldsRead && reads == 0: // the hold's save: stop it here
			reads++
			mu.Unlock()
			close(parked)
			<-resume
			return
		case step == app.HoldsRead:
			reads++
		case step == app.HoldsWaiting && armed: // the release's save went as far as it can
			armed = false
			waiting <- struct{}{}
		}
		mu.Unlock()
	})
	defer restore()

	held, released := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := a.Breakers.Hold("vector", breaker.Manual{By: "ops", Note: "rebuild"})
		held <- err
	}()
	<-parked
	mu.Lock()
	armed = true
	mu.Unlock()
	go func() {
		_, err := a.Breakers.ForceCloseBy("keyword", breaker.Manual{By: "ops"})
		released <- err
	}()
	<-waiting
	close(resume)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	restore()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	a = newKeptApp(t, cfg)
	defer a.Close()
	for _, s := range a.Breakers.Snapshot() {
		switch s.Name {
		case "vector":
			if s.Hold == nil || s.Hold.Reason != "rebuild" {
				t.Errorf("vector after the restart: %+v, want held for the rebuild", s)
			}
		case "keyword":
			if s.Hold != nil || s.State != breaker.Closed {
				t.Errorf("keyword after the restart: %+v %+v, want closed (its hold was released)", s, s.Hold)
			}
		}
	}
}

// TestReleaseReturnsOnceSaved is issue 29 item 2's other interleaving:
// two actions on one breaker. A breaker's transitions are delivered by
// whichever goroutine finds its queue idle, so a release made while a
// hold of the same breaker was still being saved returned at once, its
// own transition (and save) left to the other goroutine: a kill -9 then
// found holds.json naming the released hold, which came back at the
// restart. The API's hold and release return only once the file says
// what they did.
func TestReleaseReturnsOnceSaved(t *testing.T) {
	cfg := embeddedConfig(t)
	a := newKeptApp(t, cfg)
	defer a.Close()
	b := a.APIBreakers()
	if _, err := b.Hold("vector", breaker.Manual{By: "ops", Note: "rebuild"}); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		parkOne = true
		parked  = make(chan struct{})
		resume  = make(chan struct{})
		waiting = make(chan struct{}, 1)
		armed   bool
	)
	restore := app.SetHoldsSaveHook(func(step string) {
		mu.Lock()
		switch {
		case step == app.HoldsRead && parkOne: // the second hold's save: stop it with the file unchanged
			parkOne = false
			mu.Unlock()
			close(parked)
			<-resume
			return
		case step == app.HoldsWaiting && armed: // the release saves too: let the hold's save finish
			armed = false
			waiting <- struct{}{}
		}
		mu.Unlock()
	})
	defer restore()
	held := make(chan error, 1)
	go func() {
		_, err := b.Hold("vector", breaker.Manual{By: "ops", Note: "rebuild, again"})
		held <- err
	}()
	<-parked
	mu.Lock()
	armed = true
	mu.Unlock()
	released := make(chan error, 1)
	go func() {
		_, err := b.ForceCloseBy("vector", breaker.Manual{By: "ops"})
		released <- err
	}()
	select {
	case err := <-released: // returned while the hold's save was parked
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(filepath.Join(cfg.DataDir, app.HoldsFile))
		close(resume)
		<-held
		t.Fatalf("the release returned while holds.json still said %s", raw)
	case <-waiting:
		close(resume)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.DataDir, app.HoldsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "vector") {
		t.Fatalf("holds.json after the release returned: %s", raw)
	}
}

// TestConsoleEndpointsOnTheEmbeddedStack: the server endpoint reports
// this instance, the sources' defaults as the retriever applies them
// (graph disabled at weight 0) with their guards, the embedder and the
// stores' document counts (the graph dormant, without one); health lists
// graph as disabled; the history
// has every breaker's band.
func TestConsoleEndpointsOnTheEmbeddedStack(t *testing.T) {
	cfg := config.Default()
	off := false
	cfg.Auth.Enabled = &off
	cfg.DataDir = t.TempDir()
	cfg.Embedder.Kind = config.KindHashing // exact and needs no model
	a := newApp(t, &cfg)
	defer a.Close()
	if _, err := a.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := a.API()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, v any) {
		t.Helper()
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
		if err := jsonUnmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatal(err)
		}
	}
	var s api.ServerResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		get("/v1/status/server", &s)
		if len(s.Stores) == 3 && s.Stores[0].Documents != nil && s.Stores[1].Documents != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no document counts within 30 s: %+v", s.Stores)
		}
		time.Sleep(50 * time.Millisecond)
	}
	enabled := map[string]bool{}
	for _, src := range s.Sources {
		enabled[src.Name] = src.Enabled
		if src.TimeoutMS <= 0 || src.Guard == nil || src.Guard.Limit <= 0 {
			t.Errorf("source %+v lacks its timeout or guard", src)
		}
	}
	if !enabled["vector"] || !enabled["keyword"] || enabled["graph"] || enabled["graph_expand"] || !enabled["embedder"] {
		t.Errorf("defaults %v, want graph and graph_expand disabled (rag.yaml defaults)", enabled)
	}
	if s.Stores[0].Role != "record" || s.Stores[0].Kind != "embedded" || s.Embedder == nil || !strings.HasPrefix(s.Embedder.Identity, "kind=hashing") {
		t.Errorf("stores %+v embedder %+v", s.Stores, s.Embedder)
	}
	// Nothing reads the graph with the defaults: it is not built.
	if g := s.Stores[2]; !g.Dormant || g.Documents != nil || s.Stores[1].Dormant {
		t.Errorf("graph store %+v, want dormant without a count (keyword %+v)", g, s.Stores[1])
	}
	// The counts refresh every 15 s; a fresh data directory had only the
	// demo written before the first count, or nothing at all.
	if n := *s.Stores[0].Documents; n != 24 && n != 0 {
		t.Errorf("vector documents %d", n)
	}
	var h api.HealthResponse
	get("/v1/status/health", &h)
	if slices.Contains(h.Usable, "graph") || !slices.Contains(h.Disabled, "graph") {
		t.Errorf("health usable %v disabled %v", h.Usable, h.Disabled)
	}
	var hist api.HistoryResponse
	get("/v1/status/history", &hist)
	if len(hist.Breakers) != len(spi.Backends()) || hist.Breakers[0].States[hist.Steps-1] != history.StateClosed {
		t.Errorf("history breakers %+v", hist.Breakers)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestDebugFaultsWarnAtStart is issue 29 item 8: server.debug_faults
// (fault injection, never in production) started as quietly as any
// other setting; the start now logs a warning saying so.
func TestDebugFaultsWarnAtStart(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := defaultConfig(t)
		cfg.Server.DebugFaults = on
		var log strings.Builder
		a, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		warned := regexp.MustCompile(`level=WARN msg="ragd: FAULT INJECTION IS ON[^"]*never in production`).MatchString(log.String())
		if warned != on {
			t.Errorf("debug_faults %v: warned %v\n%s", on, warned, log.String())
		}
	}
}
