package embedded_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/spi"
)

// isolationStore holds a (nearest to the query) and b, for k = 1.
//
// A bbolt commit that must grow the file's memory map waits for every
// open read transaction, and a search holds one from its candidate scan
// to its rescoring; so that the tests' commits can complete while a
// search is stopped in between, the file is first given free pages (a
// batch written and deleted), which those commits reuse.
func isolationStore(t *testing.T) (*embedded.Store, spi.VectorRequest) {
	t.Helper()
	ctx := context.Background()
	s := mustOpen(t, embedded.Config{Dir: t.TempDir(), Dimension: 4, NoSync: true})
	filler := make([]spi.Document, 256)
	ids := make([]string, len(filler))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range filler {
		ids[i] = fmt.Sprintf("filler-%03d", i)
		filler[i] = spi.Document{ID: ids[i], Title: embedded.Incompressible(r, 200), Vector: []float32{0, 0, 0, 1}}
	}
	if err := s.Upsert(ctx, filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ids); err != nil {
		t.Fatal(err)
	}
	a := spi.Document{ID: "a", Vector: []float32{1, 0.05, 0, 0}}
	b := spi.Document{ID: "b", Vector: []float32{0.6, 0.8, 0, 0}}
	if err := s.Upsert(ctx, []spi.Document{a, b}); err != nil {
		t.Fatal(err)
	}
	return s, spi.VectorRequest{Vector: []float32{1, 0, 0, 0}, K: 1}
}

// A search stopped between choosing its candidates and rescoring them,
// while a write commits, answers from one state: the one before the write
// or the one after it, never an empty or mixed answer. The hooks stop the
// search right after the candidate scan and let it go on only once the
// write is durable in the file (memory has not followed yet).
func TestSearchDuringCommitSeesOneState(t *testing.T) {
	cases := map[string]func(context.Context, *embedded.Store) error{
		"delete": func(ctx context.Context, s *embedded.Store) error { return s.Delete(ctx, []string{"a"}) },
		"rewrite": func(ctx context.Context, s *embedded.Store) error {
			return s.Upsert(ctx, []spi.Document{{ID: "a", Vector: []float32{0, 0, 1, 0}}})
		},
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, req := isolationStore(t)
			before, err := embedded.FullScan(s, req)
			if err != nil {
				t.Fatal(err)
			}
			stopped, resume, durable := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var first, commit sync.Once
			embedded.SetHooks(s, embedded.Hooks{
				AfterCandidates: func() { first.Do(func() { close(stopped); <-resume }) },
				AfterDiskCommit: func() { commit.Do(func() { close(durable) }) },
			})
			type answer struct {
				refs []spi.Ref
				err  error
			}
			got := make(chan answer, 1)
			go func() {
				refs, err := s.Retrieve(ctx, req)
				got <- answer{refs, err}
			}()
			<-stopped
			wrote := make(chan error, 1)
			go func() { wrote <- write(ctx, s) }()
			<-durable
			close(resume)
			ans := <-got
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if ans.err != nil {
				t.Fatal(ans.err)
			}
			after, err := embedded.FullScan(s, req)
			if err != nil {
				t.Fatal(err)
			}
			if !sameRefs(ans.refs, before) && !sameRefs(ans.refs, after) {
				t.Fatalf("search during the %s answered %v: neither the state before (%v) nor after (%v)", name, ans.refs, before, after)
			}
		})
	}
}

// A search that starts while a commit is durable in the file but not yet
// in memory (the hook parks the commit there) waits for the commit and
// answers from the state after it.
func TestSearchWaitsForACommitBetweenFileAndMemory(t *testing.T) {
	ctx := context.Background()
	s, req := isolationStore(t)
	durable, release, moved := make(chan struct{}), make(chan struct{}), make(chan struct{})
	embedded.SetHooks(s, embedded.Hooks{
		Moved:           func() { close(moved) },
		AfterDiskCommit: func() { close(durable); <-release },
	})
	wrote := make(chan error, 1)
	go func() { wrote <- s.Delete(ctx, []string{"a"}) }()
	<-durable
	type answer struct {
		refs []spi.Ref
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		refs, err := s.Retrieve(ctx, req)
		got <- answer{refs, err}
	}()
	<-moved
	close(release)
	ans := <-got
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if ans.err != nil || len(ans.refs) != 1 || ans.refs[0].ID != "b" {
		t.Fatalf("search answered %v, %v; want b (the state after the delete)", ans.refs, ans.err)
	}
	if n := embedded.Waits(s); n != 1 {
		t.Errorf("%d searches waited for a commit, want 1", n)
	}
}

// A commit between the file and memory that touches none of a search's
// candidates does not hold the search up: it answers from the state
// memory is at while the commit is still parked.
func TestSearchDoesNotWaitForAnUnrelatedCommit(t *testing.T) {
	ctx := context.Background()
	s, req := isolationStore(t)
	before, err := embedded.FullScan(s, req)
	if err != nil {
		t.Fatal(err)
	}
	durable, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	embedded.SetHooks(s, embedded.Hooks{
		Moved: func() {
			t.Error("the search waited for a commit that touched none of its candidates")
			once.Do(func() { close(release) })
		},
		AfterDiskCommit: func() { close(durable); <-release },
	})
	wrote := make(chan error, 1)
	go func() { wrote <- s.Upsert(ctx, []spi.Document{{ID: "c", Vector: []float32{0, 0, 0, 1}}}) }()
	<-durable
	refs, err := s.Retrieve(ctx, req)
	once.Do(func() { close(release) })
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err != nil || !sameRefs(refs, before) {
		t.Fatalf("search answered %v, %v; want %v", refs, err, before)
	}
}

func sameRefs(a, b []spi.Ref) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || math.Abs(a[i].Score-b[i].Score) > 1e-6 {
			return false
		}
	}
	return true
}
