package vector_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
)

// fakeClock is a settable Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// exactTop is the reference top k under cosine: score desc, id asc.
func exactTop(docs map[string][]float32, q []float32, k int) []string {
	type sc struct {
		id string
		s  float64
	}
	var all []sc
	for id, v := range docs {
		var dot, nq, nv float64
		for i := range q {
			dot += float64(q[i]) * float64(v[i])
			nq += float64(q[i]) * float64(q[i])
			nv += float64(v[i]) * float64(v[i])
		}
		all = append(all, sc{id, dot / math.Sqrt(nq*nv)})
	}
	slices.SortFunc(all, func(a, b sc) int {
		if a.s != b.s {
			return cmp.Compare(b.s, a.s)
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]string, 0, k)
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.id)
	}
	return out
}

func ids(refs []spi.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

func retrieve(t *testing.T, b *vector.Backend, q []float32, k int) []spi.Ref {
	t.Helper()
	refs, err := b.Retrieve(context.Background(), spi.VectorRequest{Vector: q, K: k})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

func indexStep(t *testing.T, b *vector.Backend) vector.IndexReport {
	t.Helper()
	r, err := b.IndexStep(context.Background())
	if err != nil {
		t.Fatalf("IndexStep: %v", err)
	}
	return r
}

// indexNames lists the table's HNSW indexes.
func hnswIndexes(t *testing.T, dsn string) []string {
	t.Helper()
	rows, err := connect(t, dsn).Query(context.Background(),
		`SELECT indexname FROM pg_indexes WHERE tablename = 'ragd_documents' AND indexdef LIKE '%USING hnsw%' ORDER BY indexname`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// A document is searchable, exactly, as soon as its commit returns: in the
// tail before any index step, and after a bulk rebuild, after linking in,
// after a rewrite (its new vector, never its old one) and after a delete.
// The replaced index is kept for the grace period and dropped after it.
func TestIndexTail(t *testing.T) {
	const dim = 8
	dsn := testenv.Postgres(t)
	clock := &fakeClock{t: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	b := mustOpen(t, vector.Config{DSN: dsn, Dimension: dim, Now: clock.Now,
		Index: vector.IndexConfig{RebuildMin: 50, RebuildRatio: 0.5, AbsorbBatch: 10, Grace: time.Minute}})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	ref := map[string][]float32{}
	put := func(id string) {
		v := randVec(r, dim)
		if err := b.Upsert(ctx, []spi.Document{{ID: id, Vector: v}}); err != nil {
			t.Fatal(err)
		}
		ref[id] = v
	}
	var batch []spi.Document
	for i := range 100 {
		d := spi.Document{ID: fmt.Sprintf("d%04d", i), Vector: randVec(r, dim)}
		ref[d.ID] = d.Vector
		batch = append(batch, d)
	}
	if err := b.Upsert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if _, ran := b.Pending(); ran {
		t.Fatal("Pending reports a step before any ran")
	}
	// All in the tail: the answer is the exact one.
	for range 10 {
		q := randVec(r, dim)
		if got, want := ids(retrieve(t, b, q, 10)), exactTop(ref, q, 10); !slices.Equal(got, want) {
			t.Fatalf("tail only: got %v, want %v", got, want)
		}
	}
	before := hnswIndexes(t, dsn)
	// The process has just seen the log's head move: the build waits.
	if rep := indexStep(t, b); !rep.Deferred || rep.Rebuilt || rep.Absorbed != 0 || rep.Tail != 100 {
		t.Fatalf("first step = %+v, want the build of the 100-row tail deferred", rep)
	}
	clock.Add(vector.DefaultIndexQuiet)
	rep := indexStep(t, b)
	if !rep.Rebuilt || rep.V != 100 || rep.Absorbed != 0 {
		t.Fatalf("step after the log stood still = %+v, want a rebuild at V=100", rep)
	}
	if n, _ := b.Pending(); n < 50 {
		t.Errorf("Pending = %d after a step that found a tail of 100", n)
	}
	if after := hnswIndexes(t, dsn); len(after) != len(before)+1 {
		t.Fatalf("indexes after the rebuild %v, before %v: the old one must stay for the grace period", after, before)
	}

	// Writes after the rebuild: new documents, a rewrite, a delete.
	old3 := ref["d0003"]
	for i := range 5 {
		put(fmt.Sprintf("n%d", i))
	}
	put("d0003")
	if err := b.Delete(ctx, []string{"d0004"}); err != nil {
		t.Fatal(err)
	}
	delete(ref, "d0004")
	check := func(stage string) {
		t.Helper()
		for _, id := range []string{"n0", "n4", "d0003"} {
			got := retrieve(t, b, ref[id], 1)
			if len(got) != 1 || got[0].ID != id || got[0].Score < 0.9999 {
				t.Errorf("%s: its own vector finds %v, want %s first", stage, got, id)
			}
		}
		for _, x := range retrieve(t, b, old3, 10) {
			if x.ID == "d0003" && x.Score > 0.9999 {
				t.Errorf("%s: d0003 found by the vector it was rewritten from", stage)
			}
		}
		hits, total := 0, 0
		for range 20 {
			q := randVec(r, dim)
			got := retrieve(t, b, q, 5)
			for _, x := range got {
				if x.ID == "d0004" {
					t.Errorf("%s: the deleted d0004 returned", stage)
				}
			}
			want := exactTop(ref, q, 5)
			total += len(want)
			for _, id := range ids(got) {
				if slices.Contains(want, id) {
					hits++
				}
			}
		}
		if recall := float64(hits) / float64(total); recall < 0.9 {
			t.Errorf("%s: recall@5 %.2f against the exact answer", stage, recall)
		}
	}
	check("after the rebuild, with a tail")
	rep = indexStep(t, b)
	if rep.Rebuilt || rep.Absorbed != 6 || rep.Tail != 6 {
		t.Fatalf("second step = %+v, want the 6 tail rows linked in", rep)
	}
	var tail int
	if err := connect(t, dsn).QueryRow(ctx, `SELECT count(*) FROM ragd_documents WHERE NOT indexed AND version > 100`).Scan(&tail); err != nil {
		t.Fatal(err)
	}
	if tail != 0 {
		t.Errorf("%d rows left in the tail after linking in", tail)
	}
	check("after linking in")
	if rep := indexStep(t, b); rep.Tail != 0 || rep.Absorbed != 0 || rep.Rebuilt || rep.Dropped != 0 {
		t.Errorf("idle step inside the grace period = %+v, want nothing done", rep)
	}
	clock.Add(time.Minute)
	if rep := indexStep(t, b); rep.Dropped != 1 {
		t.Errorf("step after the grace period = %+v, want the replaced index dropped", rep)
	}
	if got := hnswIndexes(t, dsn); !slices.Equal(got, []string{"ragd_documents_cosine_hnsw_v100"}) {
		t.Errorf("HNSW indexes %v, want the current one alone", got)
	}
	check("after the drop")
}

// A table made before the partial index (a full HNSW index, no recorded
// state) is searched through that index until the first step builds the
// partial one; the full index goes after the grace period.
func TestIndexLegacyTable(t *testing.T) {
	const dim = 8
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	cfg := vector.Config{DSN: dsn, Dimension: dim, Now: clock.Now, Index: vector.IndexConfig{Grace: time.Minute}}
	b := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(5, 6))
	ref := map[string][]float32{}
	var docs []spi.Document
	for i := range 50 {
		d := spi.Document{ID: fmt.Sprintf("d%04d", i), Vector: randVec(r, dim)}
		ref[d.ID] = d.Vector
		docs = append(docs, d)
	}
	if err := b.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	b.Close()
	conn := connect(t, dsn)
	for _, s := range []string{
		`DROP INDEX ragd_documents_cosine_hnsw_v0`,
		`DELETE FROM ragd_meta WHERE key LIKE 'hnsw:%'`,
		`UPDATE ragd_documents SET indexed = true`,
		`CREATE INDEX ragd_documents_embedding_cosine_idx ON ragd_documents USING hnsw (embedding vector_cosine_ops)`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	b = mustOpen(t, cfg)
	if got := hnswIndexes(t, dsn); !slices.Equal(got, []string{"ragd_documents_embedding_cosine_idx"}) {
		t.Fatalf("Open of a legacy table left HNSW indexes %v, want the legacy one alone", got)
	}
	q := ref["d0007"]
	if got := retrieve(t, b, q, 1); len(got) != 1 || got[0].ID != "d0007" {
		t.Fatalf("legacy: %v", got)
	}
	if rep := indexStep(t, b); !rep.Rebuilt || rep.V != 50 {
		t.Fatalf("first step on a legacy table = %+v, want a rebuild at V=50", rep)
	}
	clock.Add(2 * time.Second) // past the state's re-read
	retrieve(t, b, q, 1)       // reads the new state
	if got := retrieve(t, b, q, 1); len(got) != 1 || got[0].ID != "d0007" {
		t.Fatalf("after the rebuild: %v", got)
	}
	clock.Add(time.Minute)
	if rep := indexStep(t, b); rep.Dropped != 1 {
		t.Errorf("step after the grace period = %+v, want the legacy index dropped", rep)
	}
	if got := hnswIndexes(t, dsn); !slices.Equal(got, []string{"ragd_documents_cosine_hnsw_v50"}) {
		t.Errorf("HNSW indexes %v, want the partial one alone", got)
	}
}

// One process indexes at a time; a build that finished after its process
// died is adopted; a failed (invalid) build is dropped at once.
func TestIndexStepLockAndRecovery(t *testing.T) {
	const dim = 4
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	b := mustOpen(t, vector.Config{DSN: dsn, Dimension: dim})
	if err := b.Upsert(ctx, []spi.Document{{ID: "a", Vector: []float32{1, 2, 3, 4}}, {ID: "b", Vector: []float32{4, 3, 2, 1}}}); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('ragd.index:ragd_documents'))`); err != nil {
		t.Fatal(err)
	}
	if rep := indexStep(t, b); !rep.Skipped {
		t.Fatalf("step while another session holds the lock = %+v, want skipped", rep)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('ragd.index:ragd_documents'))`); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE INDEX ragd_documents_cosine_hnsw_v2 ON ragd_documents USING hnsw (embedding vector_cosine_ops) WHERE (indexed OR version <= 2)`,
		`CREATE INDEX ragd_documents_cosine_hnsw_v9 ON ragd_documents USING hnsw (embedding vector_cosine_ops) WHERE (indexed OR version <= 9)`,
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ragd_documents_cosine_hnsw_v9'::regclass`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	rep := indexStep(t, b)
	if rep.Skipped || rep.Dropped != 1 || rep.Tail != 0 {
		t.Fatalf("step = %+v, want the invalid build dropped and v2 adopted (no tail)", rep)
	}
	var raw string
	if err := conn.QueryRow(ctx, `SELECT value FROM ragd_meta WHERE key = 'hnsw:ragd_documents:cosine'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if !containsJSONV(raw, 2) {
		t.Errorf("recorded state %s, want v 2 adopted", raw)
	}
	if got := hnswIndexes(t, dsn); slices.Contains(got, "ragd_documents_cosine_hnsw_v9") {
		t.Errorf("the invalid build is still there: %v", got)
	}
}

func containsJSONV(raw string, v int) bool {
	var m struct {
		V int `json:"v"`
	}
	return jsonUnmarshal(raw, &m) == nil && m.V == v
}

func jsonUnmarshal(raw string, v any) error { return json.Unmarshal([]byte(raw), v) }
