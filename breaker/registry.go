package breaker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry mints one Breaker per name on first use and keeps it. Reads (Get
// of a known name, Lookup, Names, Snapshot) take no lock, so health
// roll-ups never wait behind a minting caller. It is safe for concurrent use.
//
// The registry Config's OnStateChange observes the transitions of every
// breaker it mints, including those with overrides, which makes it the one
// place a service hooks logging and metrics.
type Registry struct {
	cfg Config

	mu        sync.Mutex // serialises minting and overrides
	overrides map[string]Config
	state     atomic.Pointer[registryState]
}

// registryState is an immutable view, replaced wholesale on every mint.
type registryState struct {
	byName map[string]*Breaker
	sorted []*Breaker // by name
}

// NewRegistry returns an empty registry whose breakers use cfg. cfg must be
// valid (check it with Validate first): NewRegistry panics otherwise, as
// regexp.MustCompile does, since every later Get would have to fail.
func NewRegistry(cfg Config) *Registry {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("breaker: NewRegistry: %v", err))
	}
	r := &Registry{cfg: cfg, overrides: map[string]Config{}}
	r.state.Store(&registryState{byName: map[string]*Breaker{}})
	return r
}

// Override sets the Config of breaker name, used when it is minted. Nil
// function fields (Now, ShouldCount, Backoff.Rand) inherit the registry's;
// OnStateChange, when set, runs before the registry's. It fails if cfg is
// invalid or the breaker was already minted.
func (r *Registry) Override(name string, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("breaker: override %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.state.Load().byName[name]; ok {
		return fmt.Errorf("breaker: override %q: breaker already in use", name)
	}
	r.overrides[name] = cfg
	return nil
}

// Get returns the breaker called name, minting it on first use.
func (r *Registry) Get(name string) *Breaker {
	if b, ok := r.state.Load().byName[name]; ok {
		return b
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.state.Load()
	if b, ok := old.byName[name]; ok {
		return b
	}
	b, err := New(name, r.configFor(name))
	if err != nil { // unreachable: both configs were validated
		panic(err)
	}
	next := &registryState{byName: make(map[string]*Breaker, len(old.byName)+1)}
	for k, v := range old.byName {
		next.byName[k] = v
	}
	next.byName[name] = b
	next.sorted = append(slices.Clone(old.sorted), b)
	slices.SortFunc(next.sorted, func(a, b *Breaker) int { return strings.Compare(a.name, b.name) })
	r.state.Store(next)
	return b
}

// configFor merges the override for name, if any, with the registry's
// config. The caller holds mu.
func (r *Registry) configFor(name string) Config {
	cfg, ok := r.overrides[name]
	if !ok {
		return r.cfg
	}
	if cfg.Now == nil {
		cfg.Now = r.cfg.Now
	}
	if cfg.ShouldCount == nil {
		cfg.ShouldCount = r.cfg.ShouldCount
	}
	if cfg.Backoff.Rand == nil {
		cfg.Backoff.Rand = r.cfg.Backoff.Rand
	}
	own, shared := cfg.OnStateChange, r.cfg.OnStateChange
	switch {
	case own == nil:
		cfg.OnStateChange = shared
	case shared != nil:
		cfg.OnStateChange = func(t Transition) {
			own(t)
			shared(t)
		}
	}
	return cfg
}

// Lookup returns the breaker called name if it was minted.
func (r *Registry) Lookup(name string) (*Breaker, bool) {
	b, ok := r.state.Load().byName[name]
	return b, ok
}

// Names returns the minted breakers' names in order.
func (r *Registry) Names() []string {
	sorted := r.state.Load().sorted
	names := make([]string, len(sorted))
	for i, b := range sorted {
		names[i] = b.name
	}
	return names
}

// Snapshot returns a snapshot of every minted breaker, ordered by name.
func (r *Registry) Snapshot() []Snapshot {
	sorted := r.state.Load().sorted
	out := make([]Snapshot, len(sorted))
	for i, b := range sorted {
		out[i] = b.Snapshot()
	}
	return out
}

// ForceClose closes the breaker called name and returns its snapshot
// afterwards. An unknown name yields an error matching ErrUnknownBreaker.
func (r *Registry) ForceClose(name string) (Snapshot, error) {
	return r.ForceCloseBy(name, Manual{})
}

// ForceOpen trips the breaker called name and returns its snapshot
// afterwards. An unknown name yields an error matching ErrUnknownBreaker.
func (r *Registry) ForceOpen(name string) (Snapshot, error) {
	return r.ForceOpenBy(name, Manual{})
}

// ForceCloseBy is ForceClose naming the operator (Breaker.ForceCloseBy).
func (r *Registry) ForceCloseBy(name string, m Manual) (Snapshot, error) {
	return r.apply(name, func(b *Breaker) { b.ForceCloseBy(m) })
}

// ForceOpenBy is ForceOpen naming the operator (Breaker.ForceOpenBy).
func (r *Registry) ForceOpenBy(name string, m Manual) (Snapshot, error) {
	return r.apply(name, func(b *Breaker) { b.ForceOpenBy(m) })
}

// Hold holds the breaker called name open for maintenance (Breaker.Hold)
// and returns its snapshot afterwards. An unknown name yields an error
// matching ErrUnknownBreaker.
func (r *Registry) Hold(name string, m Manual) (Snapshot, error) {
	return r.apply(name, func(b *Breaker) { b.Hold(m) })
}

func (r *Registry) apply(name string, fn func(*Breaker)) (Snapshot, error) {
	b, ok := r.Lookup(name)
	if !ok {
		return Snapshot{}, fmt.Errorf("%w: %q", ErrUnknownBreaker, name)
	}
	fn(b)
	return b.Snapshot(), nil
}
