package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/graph"
	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/backends/vector"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
)

// envCrashTrials overrides the number of kill -9 trials per mode (20).
const envCrashTrials = "RAG_CRASH_TRIALS"

// convergeBound is how long after a restart every store must equal the
// record (the bound; measured figures are far below, see
// docs/ingest.md).
const convergeBound = 30 * time.Second

// graphOn is the retriever section that reads the graph source and its
// expansion, so the embedded graph is kept (rag.yaml's defaults leave it
// dormant until a query asks for it).
const graphOn = "retriever: {sources: {graph: {weight: 1}}, expand: {enabled: true}}\n"

// crashConfig is a rag.yaml for the crash trials: auth off, no start-up
// check (the change log alone must bring the stores back), embedded or
// server stores, the graph read (graphOn).
func crashConfig(dataDir, pgDSN string, neo *testenv.Neo4jConn) string {
	return crashConfigBase(dataDir, pgDSN, neo) + graphOn
}

// crashConfigBase is crashConfig with the retriever's defaults. The
// embedded graph applies 500 entries a transaction, not its 8,192, so
// that a catch-up takes many applies for a kill to fall among.
func crashConfigBase(dataDir, pgDSN string, neo *testenv.Neo4jConn) string {
	q := strconv.Quote
	backends := `backends:
  vector: {kind: embedded, dir: vector}
  keyword: {kind: bleve, dir: keyword}
  graph: {kind: embedded, dir: graph, apply_batch: 500}
`
	if neo != nil {
		backends = `backends:
  vector: {kind: pgvector, dsn: ` + q(pgDSN) + `, connect_timeout_ms: 2000}
  keyword: {kind: bleve, dir: keyword}
  graph: {kind: neo4j, uri: ` + q(neo.URI) + `, user: ` + q(neo.User) + `, password: ` + q(neo.Password) + `, connect_timeout_ms: 2000}
`
	}
	return `data_dir: ` + q(dataDir) + `
server: {listen: 127.0.0.1:0, request_timeout_s: 60, shutdown_grace_s: 10, max_in_flight: 256}
` + backends + `embedder: {kind: hashing, dimension: 384}
ingest: {check_at_start: false, batch_size: 16}
auth: {enabled: false}
log: {level: warn}
`
}

// op is one write a workload sent: an upsert of text, or a delete.
type op struct {
	del  bool
	text string
}

// idState is what the workload knows of one id: the last write the server
// acknowledged (with the version it reported) and a write sent without an
// answer (the kill came first), whose outcome is unknown.
type idState struct {
	acked    *op
	version  uint64
	inflight *op
}

// workload runs writers over disjoint id sets, so each id's writes are
// ordered, and remembers what was acknowledged.
type workload struct {
	mu     sync.Mutex
	ids    map[string]*idState
	tenant string
	acks   int
}

func newWorkload(tenant string, writers, perWriter int) *workload {
	w := &workload{ids: map[string]*idState{}, tenant: tenant}
	for i := range writers {
		for k := range perWriter {
			w.ids[fmt.Sprintf("%s-w%d-%02d", tenant, i, k)] = &idState{}
		}
	}
	return w
}

func (w *workload) idsOf(writer int) []string {
	var out []string
	prefix := fmt.Sprintf("%s-w%d-", w.tenant, writer)
	for id := range w.ids {
		if len(id) > len(prefix) && id[:len(prefix)] == prefix {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// run sends batches of mixed upserts and deletes from writer until ctx
// ends or a request fails (the server was killed).
func (w *workload) run(ctx context.Context, c *client, writer int, rnd *mrand.Rand, round int) {
	mine := w.idsOf(writer)
	for n := 0; ctx.Err() == nil; n++ {
		batch := map[string]op{}
		for range 1 + rnd.IntN(4) {
			id := mine[rnd.IntN(len(mine))]
			if rnd.IntN(4) == 0 {
				batch[id] = op{del: true}
			} else {
				batch[id] = op{text: fmt.Sprintf("round %d writer %d write %d about wing flutter %d", round, writer, n, rnd.IntN(1000))}
			}
		}
		var ups []document
		var dels []string
		w.mu.Lock()
		for _, id := range slices.Sorted(maps.Keys(batch)) {
			o := batch[id]
			w.ids[id].inflight = &o
			if o.del {
				dels = append(dels, id)
			} else {
				ups = append(ups, document{ID: id, Tenant: w.tenant, Title: "t " + id, Text: o.text})
			}
		}
		w.mu.Unlock()
		if len(ups) > 0 && !w.send(ctx, c, "/v1/documents", upsertRequest{Documents: ups}, batch) {
			return
		}
		if len(dels) > 0 && !w.send(ctx, c, "/v1/documents/delete", deleteRequest{IDs: dels}, batch) {
			return
		}
	}
}

// send posts one request and records the acknowledged results; false when
// there was no answer.
func (w *workload) send(ctx context.Context, c *client, path string, body any, batch map[string]op) bool {
	var resp batchResponse
	st, _, err := c.call(ctx, http.MethodPost, path, body, &resp)
	if err != nil || st/100 != 2 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ok := true
	for _, r := range resp.Results {
		s := w.ids[r.ID]
		o := batch[r.ID]
		switch r.Status {
		case "ok", "not_found":
			s.acked, s.version, s.inflight = &o, r.Version, nil
			w.acks++
		default:
			// Left in flight, and the writer stops, so that no later
			// write of the id hides it: verify settles it.
			ok = false
		}
	}
	return ok
}

// storeVersions is id -> version as one store holds it.
type storeVersions map[string]uint64

// snapshot reads the record (versions and texts) and every derived store
// (versions) directly, with ragd stopped (bleve and bbolt are locked by a
// running ragd).
type snapshot struct {
	record  storeVersions
	texts   map[string]string
	derived map[string]storeVersions
}

func collect(fn func(func(string, uint64) error) error) (storeVersions, error) {
	out := storeVersions{}
	return out, fn(func(id string, v uint64) error { out[id] = v; return nil })
}

// readStores opens the stores of a stopped ragd.
func readStores(t *testing.T, dataDir, pgDSN string, neo *testenv.Neo4jConn, ids []string) snapshot {
	t.Helper()
	ctx := context.Background()
	var (
		rec interface {
			spi.ChangeLog
			spi.Hydrator
		}
		gr spi.ChangeApplier
	)
	if neo == nil {
		vs, err := vectorembedded.Open(ctx, vectorembedded.Config{Dir: filepath.Join(dataDir, "vector"), Dimension: 384})
		if err != nil {
			t.Fatal(err)
		}
		defer vs.Close()
		gs, err := graphembedded.Open(ctx, graphembedded.Config{Dir: filepath.Join(dataDir, "graph")})
		if err != nil {
			t.Fatal(err)
		}
		defer gs.Close()
		rec, gr = vs, gs
	} else {
		vb, err := vector.Open(ctx, vector.Config{DSN: pgDSN, Dimension: 384})
		if err != nil {
			t.Fatal(err)
		}
		defer vb.Close()
		gb, err := graph.Open(ctx, graph.Config{URI: neo.URI, User: neo.User, Password: neo.Password})
		if err != nil {
			t.Fatal(err)
		}
		defer gb.Close()
		rec, gr = vb, gb
	}
	// Beside the embedded record ragd keeps the keyword index lean
	// (app's keywordLean); beside PostgreSQL, full.
	kw, err := keyword.Open(keyword.Config{Dir: filepath.Join(dataDir, "keyword"), Lean: pgDSN == ""})
	if err != nil {
		t.Fatal(err)
	}
	defer kw.Close()
	ls, err := rec.LogState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot{texts: map[string]string{}, derived: map[string]storeVersions{}}
	if snap.record, err = collect(func(fn func(string, uint64) error) error { return rec.Versions(ctx, fn) }); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]spi.ChangeApplier{"keyword": kw, "graph": gr} {
		if snap.derived[name], err = collect(func(fn func(string, uint64) error) error { return spi.AllVersions(ctx, s, ls.ID, 256, fn) }); err != nil {
			t.Fatal(err)
		}
	}
	docs, _, err := rec.Hydrate(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		snap.texts[d.ID] = d.Text
	}
	return snap
}

// verify checks the snapshot against what the workload was told: every
// acknowledged write is in the record (or superseded by the write in
// flight at the kill), and every derived store holds exactly the record's
// ids at the record's versions.
func (w *workload) verify(t *testing.T, snap snapshot) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	holds := func(id string, o *op) bool {
		text, present := snap.texts[id]
		if o == nil || o.del {
			return !present
		}
		return present && text == o.text
	}
	for id, s := range w.ids {
		switch {
		case s.inflight != nil && (holds(id, s.acked) || holds(id, s.inflight)):
		case s.inflight == nil && holds(id, s.acked):
			if s.acked != nil && !s.acked.del && s.version != 0 && snap.record[id] != s.version {
				t.Errorf("%s: the record holds version %d, the server acknowledged %d", id, snap.record[id], s.version)
			}
		default:
			t.Errorf("%s: the record holds %q (present %v); acknowledged %+v, in flight %+v", id, snap.texts[id], snap.texts[id] != "", s.acked, s.inflight)
		}
		// The write in flight at the kill took effect or did not; from
		// now on what the record holds is the known state.
		if s.inflight != nil && holds(id, s.inflight) {
			s.acked, s.version = s.inflight, snap.record[id]
		}
		s.inflight = nil
	}
	for name, got := range snap.derived {
		for id, v := range snap.record {
			if gv, ok := got[id]; !ok || gv != v {
				t.Errorf("%s: %s holds version %d (present %v), the record %d", name, id, gv, ok, v)
			}
		}
		for id := range got {
			if _, ok := snap.record[id]; !ok {
				t.Errorf("%s holds %s, which the record does not", name, id)
			}
		}
	}
}

// waitConverged polls the health endpoint until every derived store has
// applied the log's head, in a status read after start, and reports the
// time since start. The endpoint reuses a status for up to a second (the
// one /readyz read when ragd started, say): an older status can show every
// store at an older head, before the writes start had to wait for.
func waitConverged(t *testing.T, c *client, start time.Time, bound time.Duration) time.Duration {
	t.Helper()
	for {
		var h healthResponse
		st, _, err := c.call(context.Background(), http.MethodGet, "/v1/status/health", nil, &h)
		if err == nil && st == http.StatusOK && h.Log != nil && len(h.Log.Stores) == 2 && !h.Log.AsOf.Before(start) {
			done := true
			for _, s := range h.Log.Stores {
				done = done && s.Behind == 0 && s.Applied == h.Log.Head
			}
			if done {
				return time.Since(start)
			}
		}
		if time.Since(start) > bound {
			t.Fatalf("the derived stores did not apply the log within %v of the restart: %+v", bound, h.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func trials(t *testing.T) int {
	n := 20
	if v := os.Getenv(envCrashTrials); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive number", envCrashTrials, v)
		}
	}
	if testing.Short() {
		n = min(n, 3)
	}
	return n
}

func randomTag(t *testing.T) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "crash" + hex.EncodeToString(b[:])
}

// TestCrashConvergence kills ragd with SIGKILL at a random point of a
// mixed upsert/update/delete load, restarts it, and requires every store to
// equal the record (ids and versions) within 30 s, with every acknowledged
// write in the record. Embedded stores, then PostgreSQL + bleve + Neo4j,
// then the same with PostgreSQL itself killed (SIGKILL to the server and
// its workers, then crash recovery) in every trial and ragd with it in
// every other one.
func TestCrashConvergence(t *testing.T) {
	startBuild()
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		crashTrials(t, "", nil, nil)
	})
	t.Run("servers", func(t *testing.T) {
		t.Parallel()
		dsn := testenv.Postgres(t)
		neo := testenv.Neo4j(t)
		crashTrials(t, dsn, &neo, nil)
	})
	t.Run("servers-postgres-killed", func(t *testing.T) {
		t.Parallel()
		srv := testenv.DedicatedPostgres(t)
		neo := testenv.Neo4j(t)
		crashTrials(t, srv.DSN, &neo, srv)
	})
}

// crashTrials runs the trials; with pg set, each trial kills PostgreSQL
// and, every other trial, ragd too (otherwise ragd alone).
func crashTrials(t *testing.T, pgDSN string, neo *testenv.Neo4jConn, pg *testenv.Server) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	cfgPath := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(cfgPath, []byte(crashConfig(dataDir, pgDSN, neo)), 0o600); err != nil {
		t.Fatal(err)
	}
	tag := randomTag(t)
	const writers = 4
	w := newWorkload(tag, writers, 15)
	allIDs := slices.Sorted(maps.Keys(w.ids))
	rnd := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 1))
	n := trials(t)
	var converge []time.Duration
	for trial := range n {
		p := startRagd(t, cfgPath)
		c := newClient(p.addr, "")
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range writers {
			seed := rnd.Uint64()
			wg.Go(func() { w.run(ctx, c, i, mrand.New(mrand.NewPCG(seed, uint64(i))), trial) })
		}
		killAfter := time.Duration(100+rnd.IntN(1400)) * time.Millisecond
		time.Sleep(killAfter)
		killRagd := pg == nil || trial%2 == 1
		if pg != nil {
			if err := pg.Kill(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if killRagd {
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-p.done
		}
		cancel()
		wg.Wait()
		c.close()

		restart := time.Now()
		if pg != nil {
			if err := pg.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if killRagd {
			p = startRagd(t, cfgPath)
		}
		c = newClient(p.addr, "")
		took := waitConverged(t, c, restart, convergeBound)
		converge = append(converge, took)
		c.close()
		p.stop(t)
		snap := readStores(t, dataDir, pgDSN, neo, allIDs)
		w.verify(t, snap)
		if t.Failed() {
			t.Fatalf("trial %d (killed after %v) did not converge", trial+1, killAfter)
		}
		t.Logf("trial %d: killed (ragd %v, postgres %v) after %v; %d acknowledged writes so far; record %d documents; converged %v after the restart began",
			trial+1, killRagd, pg != nil, killAfter, w.acks, len(snap.record), took.Round(time.Millisecond))
	}
	slices.Sort(converge)
	t.Logf("%d trials: every store equal to the record; time from restart to converged: min %v, median %v, max %v",
		n, converge[0].Round(time.Millisecond), converge[len(converge)/2].Round(time.Millisecond), converge[len(converge)-1].Round(time.Millisecond))
	if neo != nil {
		cleanupGraphIDs(t, *neo, allIDs...)
	}
}

// cleanupGraphIDs removes the test's documents from the shared Neo4j.
func cleanupGraphIDs(t *testing.T, neo testenv.Neo4jConn, ids ...string) {
	ctx := context.Background()
	gb, err := graph.Open(ctx, graph.Config{URI: neo.URI, User: neo.User, Password: neo.Password})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer gb.Close()
	if err := gb.Delete(ctx, ids); err != nil {
		t.Logf("cleanup: %v", err)
	}
}
