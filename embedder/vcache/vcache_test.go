package vcache_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ragd/ragd/embedder/vcache"
	"github.com/ragd/ragd/spi"
)

// countingEmbedder makes a deterministic vector per text and counts the
// texts it is asked for. EmbedFn, when set, replaces it (fault injection).
type countingEmbedder struct {
	dim     int
	mu      sync.Mutex
	texts   []string
	EmbedFn func(texts []string) ([][]float32, error)
}

func (f *countingEmbedder) Dimension() int { return f.dim }

func (f *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.texts = append(f.texts, texts...)
	fn := f.EmbedFn
	f.mu.Unlock()
	if fn != nil {
		return fn(texts)
	}
	return vecs(f.dim, texts), nil
}

func (f *countingEmbedder) embedded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.texts)
}

func vecs(dim int, texts []string) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, dim)
		for j := range v {
			// Values whose bits a float64 round trip would change.
			v[j] = float32(len(t)+j) / 3
		}
		out[i] = v
	}
	return out
}

func open(t *testing.T, dir string, max int64) *vcache.Store {
	t.Helper()
	s, err := vcache.Open(vcache.Config{Dir: dir, MaxBytes: max, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const id = "kind=test model=x"

func TestStoreEmbedsEachTextOnce(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 0)
	inner := &countingEmbedder{dim: 8}
	e := s.Wrap(inner, id, vcache.RoleDocument)
	ctx := context.Background()

	first, err := e.Embed(ctx, []string{"a", "bb", "a", "ccc"})
	if err != nil {
		t.Fatal(err)
	}
	if got := inner.embedded(); !slices.Equal(got, []string{"a", "bb", "ccc"}) {
		t.Fatalf("first call embedded %q, want each distinct text once", got)
	}
	if !slices.Equal(first[0], first[2]) || &first[0][0] == &first[2][0] {
		t.Fatalf("a repeated text must get equal vectors in separate slices")
	}
	again, err := e.Embed(ctx, []string{"ccc", "a", "dddd"})
	if err != nil {
		t.Fatal(err)
	}
	if got := inner.embedded(); !slices.Equal(got, []string{"a", "bb", "ccc", "dddd"}) {
		t.Fatalf("second call embedded %q, want only dddd more", got)
	}
	if !slices.Equal(again[0], first[3]) || !slices.Equal(again[1], first[0]) {
		t.Fatalf("cached vectors differ from the computed ones")
	}
	st := s.Stats()
	if st.Entries != 4 || st.Hits[vcache.RoleDocument] != 3 || st.Misses[vcache.RoleDocument] != 4 {
		t.Fatalf("stats = %+v, want 4 entries, 3 hits (a twice in the first call counts as a hit), 4 misses", st)
	}

	// Persistent: a new process finds the vectors, bit for bit.
	s.Close()
	s2 := open(t, dir, 0)
	inner2 := &countingEmbedder{dim: 8}
	got, err := s2.Wrap(inner2, id, vcache.RoleDocument).Embed(ctx, []string{"a", "bb", "ccc", "dddd"})
	if err != nil {
		t.Fatal(err)
	}
	if len(inner2.embedded()) != 0 {
		t.Fatalf("after reopening, embedded %q, want nothing", inner2.embedded())
	}
	want := vecs(8, []string{"a", "bb", "ccc", "dddd"})
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("vector %d component %d = %v, want %v bit for bit", i, j, got[i][j], want[i][j])
			}
		}
	}
}

func TestStoreKeysByIdentityAndRole(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	inner := &countingEmbedder{dim: 4}
	ctx := context.Background()
	for _, w := range []spi.Embedder{
		s.Wrap(inner, id, vcache.RoleDocument),
		s.Wrap(inner, id, vcache.RoleQuery),
		s.Wrap(inner, id+" prefix", vcache.RoleDocument),
	} {
		if _, err := w.Embed(ctx, []string{"same text"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(inner.embedded()); n != 3 {
		t.Fatalf("embedded %d times, want 3: identity and role are part of the key", n)
	}
}

func TestStorePassesErrorsAndDoesNotKeepBadVectors(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	inner := &countingEmbedder{dim: 4}
	e := s.Wrap(inner, id, vcache.RoleDocument)
	ctx := context.Background()
	boom := fmt.Errorf("fake: %w: 503", spi.ErrUnavailable)
	inner.EmbedFn = func([]string) ([][]float32, error) { return nil, boom }
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the embedder's own", err)
	}
	inner.EmbedFn = func(texts []string) ([][]float32, error) {
		v := vecs(4, texts)
		v[0][1] = float32(math.NaN())
		return v, nil
	}
	out, err := e.Embed(ctx, []string{"x", "y"})
	if err != nil || !math.IsNaN(float64(out[0][1])) {
		t.Fatalf("bad vector not returned as is: %v, %v", out, err)
	}
	inner.EmbedFn = nil
	if _, err := e.Embed(ctx, []string{"x", "y"}); err != nil {
		t.Fatal(err)
	}
	if got := inner.embedded(); !slices.Equal(got, []string{"x", "x", "y", "x"}) {
		t.Fatalf("embedded %q: the NaN vector must not be cached, the good one must", got)
	}
	inner.EmbedFn = func(texts []string) ([][]float32, error) { return vecs(4, texts)[:1], nil }
	if _, err := e.Embed(ctx, []string{"p", "q"}); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("short answer: err = %v, want ErrUnavailable", err)
	}
}

// TestStoreEvictsLeastRecentlyUsed: the cache stays under its bound, the
// oldest entries go first, and an old entry that is hit survives.
func TestStoreEvictsLeastRecentlyUsed(t *testing.T) {
	const dim = 16
	perEntry := int64(8+4*dim) + 72
	s := open(t, t.TempDir(), 20*perEntry)
	inner := &countingEmbedder{dim: dim}
	e := s.Wrap(inner, id, vcache.RoleDocument)
	ctx := context.Background()
	text := func(i int) string { return fmt.Sprintf("text %03d", i) }
	for i := range 20 {
		if _, err := e.Embed(ctx, []string{text(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Entries != 20 || st.Evictions != 0 {
		t.Fatalf("stats = %+v, want 20 entries, none evicted", st)
	}
	// text 0 is in the older half: a hit moves it to the young end.
	if _, err := e.Embed(ctx, []string{text(0)}); err != nil {
		t.Fatal(err)
	}
	// One more entry goes over the bound: evict down to 90 % (18).
	if _, err := e.Embed(ctx, []string{text(20)}); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Entries != 18 || st.Evictions != 3 || st.Bytes > st.MaxBytes*9/10 {
		t.Fatalf("stats = %+v, want 18 entries after evicting 3, bytes <= 90%% of max", st)
	}
	before := len(inner.embedded())
	if _, err := e.Embed(ctx, []string{text(0), text(4), text(20)}); err != nil {
		t.Fatal(err)
	}
	if got := inner.embedded()[before:]; len(got) != 0 {
		t.Fatalf("embedded %q again: text 000 was used recently and 004 is not among the 3 oldest", got)
	}
	for _, i := range []int{1, 2, 3} {
		if _, err := e.Embed(ctx, []string{text(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.embedded()[before:]; !slices.Equal(got, []string{text(1), text(2), text(3)}) {
		t.Fatalf("re-embedded %q, want the three evicted texts 001-003", got)
	}
}

func TestStoreFileLockedByAnotherOpener(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, 0)
	_, err := vcache.Open(vcache.Config{Dir: dir, LockTimeout: 50e6})
	if !errors.Is(err, vcache.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}

func TestStoreReplacesACorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, vcache.FileName), []byte("not a bbolt file, long enough to be read as one page of garbage............................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, 0)
	inner := &countingEmbedder{dim: 4}
	if _, err := s.Wrap(inner, id, vcache.RoleDocument).Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, vcache.FileName+".corrupt")); err != nil {
		t.Fatalf("the corrupt file was not moved aside: %v", err)
	}
}

func TestStoreConcurrentCallers(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	inner := &countingEmbedder{dim: 4}
	e := s.Wrap(inner, id, vcache.RoleDocument)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				texts := []string{fmt.Sprint(i), fmt.Sprint(i + g)}
				out, err := e.Embed(context.Background(), texts)
				if err != nil || !slices.Equal(out[0], vecs(4, texts[:1])[0]) {
					t.Errorf("goroutine %d: %v, %v", g, out, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Entries != 27 {
		t.Fatalf("entries = %d, want 27 distinct texts", st.Entries)
	}
}

func TestLRU(t *testing.T) {
	inner := &countingEmbedder{dim: 4}
	l, err := vcache.NewLRU(inner, id, vcache.RoleQuery, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := l.Embed(ctx, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	a[0][0] = 42 // the caller's copy
	again, _ := l.Embed(ctx, []string{"a"})
	if again[0][0] == 42 {
		t.Fatal("the cache handed out a vector the caller then changed")
	}
	l.Embed(ctx, []string{"b"})
	l.Embed(ctx, []string{"a"}) // a is now the most recent
	l.Embed(ctx, []string{"c"}) // evicts b
	l.Embed(ctx, []string{"a", "b"})
	if got := inner.embedded(); !slices.Equal(got, []string{"a", "b", "c", "b"}) {
		t.Fatalf("embedded %q, want a, b, c, then b again after its eviction", got)
	}
	if st := l.Stats(); st.Entries != 2 || st.Hits != 3 || st.Misses != 4 {
		t.Fatalf("stats = %+v", st)
	}
	if v, ok := l.Cached(context.Background(), "a"); !ok || !slices.Equal(v, vecs(4, []string{"a"})[0]) {
		t.Fatalf("Cached(a) = %v, %v", v, ok)
	}
	if _, ok := l.Cached(context.Background(), "never"); ok {
		t.Fatal("Cached of a text never embedded")
	}
	if st := l.Stats(); st.Hits != 4 || st.Misses != 4 {
		t.Fatalf("after Cached: stats = %+v, want the hit counted, the miss not", st)
	}
	boom := errors.New("fake: down")
	inner.EmbedFn = func([]string) ([][]float32, error) { return nil, boom }
	if _, err := l.Embed(ctx, []string{"zzz"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the embedder's", err)
	}
	if _, err := l.Embed(ctx, []string{"a"}); err != nil {
		t.Fatalf("a cached vector needs no embedder: %v", err)
	}
}

// Issue 29 item 4: both caches keep each tenant's texts apart (the tenant
// the call is marked with, spi.WithTenant). A text one tenant sent is a
// miss for another, in Embed and in Cached, and untenanted entries keep
// the keys they had before tenants had keys of their own.
func TestCachesKeepTenantsApart(t *testing.T) {
	acme := spi.WithTenant(context.Background(), "acme")
	globex := spi.WithTenant(context.Background(), "globex")
	none := context.Background()
	storeInner, lruInner := &countingEmbedder{dim: 4}, &countingEmbedder{dim: 4}
	store := open(t, t.TempDir(), 0).Wrap(storeInner, id, vcache.RoleDocument)
	l, err := vcache.NewLRU(lruInner, id, vcache.RoleQuery, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		e     spi.Embedder
		inner *countingEmbedder
	}{{"store", store, storeInner}, {"lru", l, lruInner}} {
		for _, ctx := range []context.Context{acme, globex, none, acme, globex, none} {
			if _, err := c.e.Embed(ctx, []string{"the merger closes on friday"}); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(c.inner.embedded()); n != 3 {
			t.Errorf("%s: embedded %d times for three tenants asking twice, want 3", c.name, n)
		}
	}
	if _, ok := l.Cached(globex, "only acme asks this"); ok {
		t.Fatal("Cached of a text nobody asked")
	}
	l.Embed(acme, []string{"only acme asks this"})
	if _, ok := l.Cached(globex, "only acme asks this"); ok {
		t.Fatal("globex got acme's query vector from Cached")
	}
	if _, ok := l.Cached(acme, "only acme asks this"); !ok {
		t.Fatal("acme's own query vector is not cached")
	}
	if vcache.TenantKey(id, vcache.RoleQuery, "", "x") != vcache.KeyOf(id, vcache.RoleQuery, "x") ||
		vcache.TenantKey(id, vcache.RoleQuery, "a", "x") == vcache.KeyOf(id, vcache.RoleQuery, "x") ||
		vcache.TenantKey(id, vcache.RoleQuery, "a", "bx") == vcache.TenantKey(id, vcache.RoleQuery, "ab", "x") {
		t.Fatal("TenantKey: untenanted keys changed, or two (tenant, text) pairs share a key")
	}
}
