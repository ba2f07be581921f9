package breaker_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
)

func TestRegistryGetMintsOnceAndCaches(t *testing.T) {
	clock := newClock()
	r := breaker.NewRegistry(testConfig(clock, 2))
	if len(r.Names()) != 0 || len(r.Snapshot()) != 0 {
		t.Fatal("a new registry should be empty")
	}
	if _, ok := r.Lookup("vector"); ok {
		t.Fatal("Lookup minted a breaker")
	}
	v := r.Get("vector")
	if v.Name() != "vector" || r.Get("vector") != v {
		t.Fatal("Get must mint once and return the same breaker")
	}
	if got, ok := r.Lookup("vector"); !ok || got != v {
		t.Fatal("Lookup does not find the minted breaker")
	}
	for _, n := range []string{"keyword", "graph", "embedder"} {
		r.Get(n)
	}
	wantNames := []string{"embedder", "graph", "keyword", "vector"}
	if got := r.Names(); !slices.Equal(got, wantNames) {
		t.Fatalf("Names() = %v, want %v", got, wantNames)
	}
	trip(t, r.Get("graph"))
	snaps := r.Snapshot()
	var names []string
	for _, s := range snaps {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("Snapshot order = %v, want %v", names, wantNames)
	}
	if snaps[1].State != breaker.Open || snaps[0].State != breaker.Closed {
		t.Fatalf("snapshots = %+v", snaps)
	}
}

func TestRegistryConcurrentGetMintsOne(t *testing.T) {
	r := breaker.NewRegistry(breaker.DefaultConfig())
	const n = 32
	got := make([]*breaker.Breaker, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = r.Get("vector")
			_ = r.Snapshot()
		}()
	}
	wg.Wait()
	for _, b := range got {
		if b != got[0] {
			t.Fatal("concurrent Get minted more than one breaker")
		}
	}
	if len(r.Names()) != 1 {
		t.Fatalf("Names() = %v", r.Names())
	}
}

func TestRegistryForceClose(t *testing.T) {
	clock := newClock()
	r := breaker.NewRegistry(testConfig(clock, 1))
	if _, err := r.ForceClose("nope"); !errors.Is(err, breaker.ErrUnknownBreaker) {
		t.Fatalf("ForceClose(unknown) = %v, want ErrUnknownBreaker", err)
	}
	if _, err := r.ForceOpen("nope"); !errors.Is(err, breaker.ErrUnknownBreaker) {
		t.Fatalf("ForceOpen(unknown) = %v, want ErrUnknownBreaker", err)
	}
	if len(r.Names()) != 0 {
		t.Fatal("ForceClose of an unknown name minted a breaker")
	}
	trip(t, r.Get("vector"))
	s, err := r.ForceClose("vector")
	if err != nil || s.State != breaker.Closed || s.Name != "vector" || s.OpenedTotal != 1 {
		t.Fatalf("ForceClose = %+v, %v", s, err)
	}
	s, err = r.ForceOpen("vector")
	if err != nil || s.State != breaker.Open || s.OpenedTotal != 2 {
		t.Fatalf("ForceOpen = %+v, %v", s, err)
	}
}

func TestRegistryOverridesAndSharedHook(t *testing.T) {
	clock := newClock()
	shared := &recorder{}
	own := &recorder{}
	cfg := testConfig(clock, 5)
	cfg.OnStateChange = shared.record
	r := breaker.NewRegistry(cfg)

	o := breaker.DefaultConfig()
	o.FailureThreshold = 1
	o.OnStateChange = own.record // Now left nil: inherits the registry's clock
	if err := r.Override("graph", o); err != nil {
		t.Fatal(err)
	}
	bad := o
	bad.SuccessThreshold = 0
	if err := r.Override("vector", bad); !errors.Is(err, breaker.ErrInvalidConfig) {
		t.Fatalf("invalid override = %v, want ErrInvalidConfig", err)
	}

	g := r.Get("graph")
	if g.Snapshot().FailureThreshold != 1 || r.Get("vector").Snapshot().FailureThreshold != 5 {
		t.Fatal("override not applied, or applied to the wrong breaker")
	}
	if err := r.Override("graph", o); err == nil {
		t.Fatal("Override of a minted breaker succeeded")
	}
	_ = callFail(g)
	trip(t, r.Get("vector"))
	if got := len(own.all()); got != 1 {
		t.Fatalf("override hook saw %d transitions, want 1", got)
	}
	var names []string
	for _, tr := range shared.all() {
		names = append(names, tr.Name)
	}
	if !slices.Equal(names, []string{"graph", "vector"}) {
		t.Fatalf("registry hook saw %v, want graph then vector", names)
	}
	// The override inherited the fake clock: the cooldown follows it.
	clock.Advance(o.ResetTimeout)
	wantState(t, g, breaker.HalfOpen)
}

func TestNewRegistryPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewRegistry accepted an invalid config")
		}
	}()
	cfg := breaker.DefaultConfig()
	cfg.ResetTimeout = -time.Second
	breaker.NewRegistry(cfg)
}
