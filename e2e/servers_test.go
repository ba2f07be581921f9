package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/testenv"
)

// TestServers runs the real ragd binary on dedicated PostgreSQL and Neo4j
// servers with Cranfield ingested, then takes each server away in turn
// while queries continue: stopped (dead) and started again, and Neo4j
// paused (hung) and let run again. The servers are processes or, with
// RAG_TESTENV=containers, containers (docker stop, start, pause). One stack is shared by the subtests, which run in
// order and build on each other (starting a dedicated Neo4j takes tens of
// seconds).
func TestServers(t *testing.T) {
	s := startStack(t)

	t.Run("Queries", func(t *testing.T) { testQueries(t, s) })
	t.Run("Neo4jOutage", func(t *testing.T) { testNeo4jOutage(t, s) })
	t.Run("Neo4jHung", func(t *testing.T) { testNeo4jHung(t, s) })
	t.Run("PostgresOutage", func(t *testing.T) { testPostgresOutage(t, s) })
	t.Run("DeployConfig", func(t *testing.T) { testDeployConfig(t, s) })
	// Last: it ends the shared ragd.
	t.Run("SIGTERM", func(t *testing.T) { testSIGTERM(t, s) })
}

// testQueries checks answers while every server is up: complete, hydrated
// and relevant.
func testQueries(t *testing.T, s *stack) {
	ctx := context.Background()
	anon := newClient(s.Ragd.addr, "")
	defer anon.close()
	st, body, err := anon.call(ctx, http.MethodPost, "/v1/query", queryRequest{Text: "wing"}, nil)
	if err != nil || st != http.StatusUnauthorized || errorCode(body) != "unauthorized" {
		t.Errorf("query without a key: status %d, %v, %s; want 401 unauthorized", st, err, body)
	}

	const n = 30
	healthy, relevant, graphHits := 0, 0, 0
	var wall []time.Duration
	took := map[string][]time.Duration{}
	for i := range n {
		q := s.Corpus.Queries[i]
		begin := time.Now()
		st, res, body, err := s.query(ctx, q.Text)
		wall = append(wall, time.Since(begin))
		if err != nil || st != http.StatusOK {
			t.Fatalf("query %s: status %d, %v: %.300s", q.ID, st, err, body)
		}
		if why := checkHydrated(res); why != "" {
			t.Errorf("query %s: %s", q.ID, why)
		}
		for _, name := range sourceNames {
			// A slow answer on this shared machine may time out; an
			// error or an open breaker with every server up is a bug.
			if st := res.Sources[name].Status; st != "ok" && st != "timeout" {
				t.Errorf("query %s: source %s is %q (%s) with every server up", q.ID, name, st, res.Sources[name].Error)
			}
		}
		for name, ss := range res.Sources {
			took[name] = append(took[name], time.Duration(ss.TookMS*float64(time.Millisecond)))
		}
		if checkHealthy(res) == "" {
			healthy++
		}
		if s.relevantInTop(q.ID, res.Hits) {
			relevant++
		}
		if res.Sources["graph"].Returned > 0 {
			graphHits++
		}
	}
	t.Logf("query wall time p50 %v max %v; source p50: vector %v keyword %v graph %v graph_expand %v",
		percentile(wall, 50), percentile(wall, 100), percentile(took["vector"], 50), percentile(took["keyword"], 50),
		percentile(took["graph"], 50), percentile(took["graph_expand"], 50))
	t.Logf("%d Cranfield queries: %d complete, %d with a relevant document in the top 10, %d with graph matches", n, healthy, relevant, graphHits)
	if healthy < n*2/3 {
		t.Errorf("only %d of %d answers were complete with every server up", healthy, n)
	}
	if relevant < n/2 {
		t.Errorf("only %d of %d queries found a relevant document in the top 10", relevant, n)
	}
	if graphHits == 0 {
		t.Errorf("the graph source matched nothing for %d queries: entity extraction or Neo4j writes are not wired", n)
	}

	d := s.Corpus.Corpus[0]
	var got document
	st, body, err = s.Query.call(ctx, http.MethodGet, "/v1/documents/"+url.PathEscape(d.ID), nil, &got)
	if err != nil || st != http.StatusOK || got.ID != d.ID || got.Title != d.Title || got.Text != d.Text {
		t.Errorf("GET /v1/documents/%s: status %d, %v, got %+v: %.200s", d.ID, st, err, got, body)
	}
}

// outage describes one backing server taken away.
type outage struct {
	source  string // retrieval source and breaker name: graph or vector
	stop    func(context.Context) error
	start   func(context.Context) error
	checkFn func(queryResult) string // extra per-answer check while down
	hung    bool                     // stop pauses the server rather than stopping it
	// within bounds how long the breaker may take to open (default 30 s):
	// a hung server fails each call only at the source timeout.
	within time.Duration

	lastStatus string // the source's status in the last answer
}

// down stops the server and queries until the source's breaker has opened
// (some answer says circuit_open) and /v1/status/health shows it down.
// Every answer must be 200 with the source dropped.
func (o *outage) down(t *testing.T, s *stack) {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	if err := o.stop(ctx); err != nil {
		t.Fatalf("stop the %s server: %v", o.source, err)
	}
	t.Logf("%s server %s in %v", o.source, map[bool]string{false: "stopped", true: "paused"}[o.hung], time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	within := o.within
	if within == 0 {
		within = 30 * time.Second
	}
	deadline := begin.Add(within)
	// Component health is cached for up to a second (api.HealthCacheTTL);
	// breaker states are live.
	sawOpen, sawBreakerDown, sawComponentDown := false, false, false
	queries := 0
	for i := 0; !sawOpen || !sawBreakerDown || !sawComponentDown; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("within %v: circuit_open seen %v, breaker:%s down in health seen %v, component %s down seen %v",
				within, sawOpen, o.source, sawBreakerDown, o.source, sawComponentDown)
		}
		o.mustAnswerDropped(t, s, s.queryText(i))
		queries++
		if o.lastStatus == "circuit_open" {
			sawOpen = true
		}
		st, h := s.health(t)
		if c := h.Components[o.source]; c.Status == "down" {
			sawComponentDown = true
		}
		if b := h.Components["breaker:"+o.source]; b.Status == "down" {
			sawBreakerDown = true
			if b.State != "open" {
				t.Errorf("health: breaker:%s is down but its state is %q", o.source, b.State)
			}
			if st != http.StatusOK || h.Status != "degraded" {
				t.Errorf("health with breaker:%s down: status %d, overall %q; want 200 degraded", o.source, st, h.Status)
			}
			if slices.Contains(h.Usable, o.source) || len(h.Usable) != len(sourceNames)-1 {
				t.Errorf("health: usable %v with breaker:%s open", h.Usable, o.source)
			}
		}
		if !sawBreakerDown || !sawComponentDown {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("%s down: %d queries, all 200 with %s dropped; breaker open and health degraded within %v",
		o.source, queries, o.source, time.Since(begin).Round(time.Millisecond))
	if v := s.metric(t, `ragd_breaker_trips_total{breaker="`+o.source+`"}`); v < 1 {
		t.Errorf("ragd_breaker_trips_total{breaker=%q} = %v after the breaker opened", o.source, v)
	}
}

// up starts the server again and waits, without any help, for the source
// to answer ok and its breaker to be closed. Every answer meanwhile must be
// 200 and hydrated.
func (o *outage) up(t *testing.T, s *stack) {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	if err := o.start(ctx); err != nil {
		t.Fatalf("start the %s server: %v", o.source, err)
	}
	t.Logf("%s server %s in %v", o.source, map[bool]string{false: "started again", true: "unpaused"}[o.hung], time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	deadline := begin.Add(60 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not recover within 60 s of its server's restart: breaker %+v", o.source, s.breaker(t, o.source))
		}
		st, res, body, err := s.query(ctx, s.queryText(i))
		if err != nil || st != http.StatusOK {
			t.Fatalf("query during %s recovery: status %d, %v: %.300s", o.source, st, err, body)
		}
		if why := checkHydrated(res); why != "" {
			t.Fatalf("query during %s recovery: %s", o.source, why)
		}
		if res.Sources[o.source].Status != "ok" {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if b := s.breaker(t, o.source); b.State != "closed" {
			continue
		}
		_, h := s.health(t)
		if h.Components["breaker:"+o.source].Status == "up" && h.Components[o.source].Status == "up" {
			break
		}
	}
	t.Logf("%s recovered on its own %v after its server was back", o.source, time.Since(begin).Round(time.Millisecond))
}

// mustAnswerDropped runs one query and requires a 200 that names the
// source as dropped. It records the source's status in lastStatus.
func (o *outage) mustAnswerDropped(t *testing.T, s *stack, text string) {
	t.Helper()
	st, res, body, err := s.query(context.Background(), text)
	if err != nil || st != http.StatusOK {
		t.Fatalf("query with %s down: status %d, %v: %.300s", o.source, st, err, body)
	}
	if why := checkDropped(res, o.source); why != "" {
		t.Fatalf("query with %s down: %s", o.source, why)
	}
	if o.checkFn != nil {
		if why := o.checkFn(res); why != "" {
			t.Fatalf("query with %s down: %s", o.source, why)
		}
	}
	o.lastStatus = res.Sources[o.source].Status
}

// testNeo4jOutage stops Neo4j under a serving ragd.
func testNeo4jOutage(t *testing.T, s *stack) {
	ctx := context.Background()
	o := &outage{source: "graph", stop: s.Neo4j.Stop, start: s.Neo4j.Start}
	o.down(t, s)

	// Writes go on: the system of record takes the document; the keyword
	// index applies it from the change log at once, the graph once Neo4j
	// is back.
	const entity = "xylophonic zeppelin"
	doc := document{ID: "e2e-graph-outage", Title: "written while Neo4j was down",
		Text: "a document about a xylophonic zeppelin", Entities: []string{entity}}
	var resp batchResponse
	st, body, err := s.Admin.call(ctx, http.MethodPost, "/v1/documents?wait=5s", upsertRequest{Documents: []document{doc}}, &resp)
	if err != nil || st != http.StatusOK {
		t.Fatalf("ingest with Neo4j down: status %d, %v: %.300s; want 200", st, err, body)
	}
	if r := resp.Results[0]; r.Status != "ok" || r.Stores["vector"] != "ok" || r.Stores["keyword"] != "current" || r.Stores["graph"] != "pending" {
		t.Errorf("ingest with Neo4j down: result %+v; want ok with keyword current and graph pending", r)
	} else {
		s.Accepted[doc.ID] = true
	}

	// Force-close: admin only, unknown names are 404, and the closed
	// breaker honestly trips again while the server is still down.
	st, body, _ = s.Query.call(ctx, http.MethodPost, "/v1/status/breakers/graph/force-close", nil, nil)
	if st != http.StatusForbidden {
		t.Errorf("force-close with the query key: status %d, %s; want 403", st, body)
	}
	st, body, _ = s.Admin.call(ctx, http.MethodPost, "/v1/status/breakers/nosuch/force-close", nil, nil)
	if st != http.StatusNotFound || errorCode(body) != "unknown_breaker" {
		t.Errorf("force-close of an unknown breaker: status %d, %s; want 404 unknown_breaker", st, body)
	}
	var fc forceCloseResponse
	st, body, err = s.Admin.call(ctx, http.MethodPost, "/v1/status/breakers/graph/force-close", nil, &fc)
	if err != nil || st != http.StatusOK || !fc.ForcedClosed || fc.Breaker.Name != "graph" || fc.Breaker.State != "closed" {
		t.Fatalf("force-close graph: status %d, %v, %+v: %.300s", st, err, fc, body)
	}
	if b := s.breaker(t, "graph"); b.State != "closed" {
		t.Errorf("after force-close the graph breaker is %q", b.State)
	}
	retripped := false
	for i := 0; i < 20 && !retripped; i++ {
		o.mustAnswerDropped(t, s, s.queryText(100+i))
		retripped = o.lastStatus == "circuit_open"
	}
	if !retripped {
		t.Errorf("the force-closed graph breaker did not open again within 20 queries against a stopped server")
	}

	o.up(t, s)

	// The graph applies the change log once Neo4j is back.
	begin := time.Now()
	for {
		var res queryResult
		off := false
		st, body, err := s.Query.call(ctx, http.MethodPost, "/v1/query", queryRequest{Text: entity, Limit: 5,
			Sources: map[string]sourceOptions{"vector": {Enabled: &off}, "keyword": {Enabled: &off}}}, &res)
		if err != nil || st != http.StatusOK {
			t.Fatalf("graph-only query: status %d, %v: %.300s", st, err, body)
		}
		if len(res.Hits) > 0 && res.Hits[0].ID == doc.ID {
			t.Logf("the write missed during the outage reached Neo4j %v after recovery", time.Since(begin).Round(time.Millisecond))
			break
		}
		if time.Since(begin) > 45*time.Second {
			t.Fatalf("the graph did not apply the write missed during the outage within 45 s: hits %+v", res.Hits)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// testNeo4jHung freezes Neo4j under a serving ragd (SIGSTOP of the server
// process, or docker pause of its container): its port still accepts
// connections, which get no answer, so graph calls end only at the source
// timeout. Every answer is still 200 with the graph dropped, the breaker
// opens, and once Neo4j runs again the graph comes back through the
// breaker's own probes.
func testNeo4jHung(t *testing.T, s *stack) {
	o := &outage{source: "graph", stop: s.Neo4j.Pause, start: s.Neo4j.Unpause, hung: true, within: 2 * time.Minute}
	o.down(t, s)
	o.up(t, s)
}

// testPostgresOutage stops PostgreSQL, the system of record, under a
// serving ragd.
func testPostgresOutage(t *testing.T, s *stack) {
	ctx := context.Background()
	o := &outage{source: "vector", stop: s.PG.Stop, start: s.PG.Start,
		checkFn: func(res queryResult) string {
			// Hydration falls back from the record store to the others.
			if h := res.Hydration["vector"]; h.Status == "ok" {
				return "the vector store hydrated documents while PostgreSQL is stopped"
			}
			return ""
		}}
	o.down(t, s)

	// Writes while the system of record is down: refused per document
	// (207, store_unavailable), never a 500 and never half-written.
	docs := []document{
		{ID: "e2e-pg-outage-1", Title: "first", Text: "written while PostgreSQL was down"},
		{ID: "e2e-pg-outage-2", Title: "second", Text: "also written while PostgreSQL was down"},
	}
	t.Run("IngestWhileDown", func(t *testing.T) {
		var resp batchResponse
		st, body, err := s.Admin.call(ctx, http.MethodPost, "/v1/documents", upsertRequest{Documents: docs}, &resp)
		if err != nil {
			t.Fatalf("ingest with PostgreSQL down: %v", err)
		}
		if st != http.StatusMultiStatus || resp.Failed != len(docs) {
			t.Errorf("ingest with PostgreSQL down: status %d %+v: %.300s; want 207 with every document failed", st, resp, body)
		}
		for _, r := range resp.Results {
			if r.Status != "failed" || r.Code != "store_unavailable" {
				t.Errorf("ingest with PostgreSQL down: result %+v; want failed store_unavailable", r)
			}
		}
		t.Logf("ingest with PostgreSQL down answered %d %s", st, errorCode(body))
	})
	st, body, _ := s.Query.call(ctx, http.MethodGet, "/v1/documents/"+url.PathEscape(s.Corpus.Corpus[0].ID), nil, nil)
	if st != http.StatusServiceUnavailable || errorCode(body) != "unavailable" {
		t.Errorf("GET a document with PostgreSQL down: status %d: %.300s; want 503 unavailable", st, body)
	}

	o.up(t, s)

	// Nothing accepted before or during the outage is lost.
	ids := make([]string, 0, len(s.Accepted))
	for id := range s.Accepted {
		ids = append(ids, id)
	}
	if lost := s.missingDocuments(t, ids); len(lost) > 0 {
		t.Errorf("%d of %d accepted documents are gone after PostgreSQL came back, e.g. %v", len(lost), len(ids), lost[:min(5, len(lost))])
	}
	// What was refused during the outage was not written, and can be now.
	for _, d := range docs {
		st, body, err := s.Query.call(ctx, http.MethodGet, "/v1/documents/"+url.PathEscape(d.ID), nil, nil)
		if err != nil || st != http.StatusNotFound {
			t.Errorf("GET %s, refused during the outage: status %d, %v: %.200s; want 404", d.ID, st, err, body)
		}
	}
	var resp batchResponse
	st, body, err := s.Admin.call(ctx, http.MethodPost, "/v1/documents", upsertRequest{Documents: docs}, &resp)
	if err != nil || st != http.StatusOK || resp.OK != len(docs) {
		t.Fatalf("ingest after PostgreSQL came back: status %d, %v: %.300s", st, err, body)
	}
	for _, d := range docs {
		s.Accepted[d.ID] = true
	}
}

// missingDocuments GETs every id and returns those not answered 200.
func (s *stack) missingDocuments(t *testing.T, ids []string) []string {
	t.Helper()
	var (
		mu   sync.Mutex
		lost []string
		wg   sync.WaitGroup
	)
	work := make(chan string)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				var d document
				st, _, err := s.Query.call(context.Background(), http.MethodGet, "/v1/documents/"+url.PathEscape(id), nil, &d)
				if err != nil || st != http.StatusOK || d.ID != id {
					mu.Lock()
					lost = append(lost, fmt.Sprintf("%s (status %d, %v)", id, st, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	slices.Sort(lost)
	return lost
}

// testDeployConfig starts a second ragd from deploy/rag.servers.yaml,
// configured only through the environment variables it documents, on the
// same servers. Its keyword index starts empty and is rebuilt from the
// system of record. The file ships the built-in model; the stack wrote
// hashing vectors, so the copy started here has the stack's embedder
// section instead (the only change).
func testDeployConfig(t *testing.T, s *stack) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.Neo4j.URI)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "rag.servers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := regexp.MustCompile(`(?m)^embedder:\n(  .*\n)+`)
	if !shipped.Match(b) {
		t.Fatal("deploy/rag.servers.yaml has no embedder section")
	}
	cfgPath := filepath.Join(t.TempDir(), "rag.servers.yaml")
	if err := os.WriteFile(cfgPath, shipped.ReplaceAll(b, []byte("embedder:\n  kind: hashing\n  dimension: 384\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "e2e-deploy-admin-key-0123456789"
	p := startRagd(t, cfgPath,
		"RAGD_PG_DSN="+s.PG.DSN,
		"RAGD_NEO4J_URI="+u.String(),
		"RAGD_NEO4J_USER="+s.Neo4j.User,
		"RAGD_NEO4J_PASSWORD="+s.Neo4j.Password,
		"RAGD_ADMIN_KEY="+key,
		"RAGD_DATA_DIR="+t.TempDir(),
		"RAGD_LISTEN=127.0.0.1:0",
	)
	c := newClient(p.addr, key)
	defer c.close()
	relevant := 0
	for i := range 10 {
		q := s.Corpus.Queries[i]
		var res queryResult
		st, body, err := c.call(context.Background(), http.MethodPost, "/v1/query", queryRequest{Text: q.Text}, &res)
		if err != nil || st != http.StatusOK {
			t.Fatalf("query %s: status %d, %v: %.300s", q.ID, st, err, body)
		}
		if why := checkHydrated(res); why != "" {
			t.Errorf("query %s: %s", q.ID, why)
		}
		if res.Sources["keyword"].Status != "ok" || res.Sources["keyword"].Returned == 0 {
			t.Errorf("query %s: keyword source %+v; want the index rebuilt from PostgreSQL", q.ID, res.Sources["keyword"])
		}
		if s.relevantInTop(q.ID, res.Hits) {
			relevant++
		}
	}
	if relevant < 5 {
		t.Errorf("ragd from deploy/rag.servers.yaml: only %d of 10 queries found a relevant document", relevant)
	}
	anon := newClient(p.addr, "")
	defer anon.close()
	if st, body, _ := anon.call(context.Background(), http.MethodPost, "/v1/query", queryRequest{Text: "wing"}, nil); st != http.StatusUnauthorized {
		t.Errorf("deploy config: query without a key: status %d, %s; want 401 (auth on)", st, body)
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := p.wait(30 * time.Second); err != nil || code != 0 {
		t.Errorf("ragd from deploy/rag.servers.yaml: exit code %d, %v after SIGTERM", code, err)
	}
}

// testSIGTERM sends SIGTERM while a long ingest is in flight: the request
// completes, then ragd exits 0.
func testSIGTERM(t *testing.T, s *stack) {
	// 400 documents: long enough to be seen in flight, short enough to
	// finish within the grace period on a loaded machine (re-ingesting all
	// 1,398 took over 30 s at load average 20).
	// (Fewer with the bundled sample corpus, when Cranfield is absent.)
	docs := make([]document, 0, 400)
	for _, d := range s.Corpus.Corpus[:min(400, len(s.Corpus.Corpus))] {
		docs = append(docs, document{ID: d.ID, Title: d.Title, Text: d.Text})
	}
	type answer struct {
		st   int
		resp batchResponse
		body []byte
		err  error
		at   time.Time
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		a.st, a.body, a.err = s.Admin.call(context.Background(), http.MethodPost, "/v1/documents", upsertRequest{Documents: docs}, &a.resp)
		a.at = time.Now()
		done <- a
	}()
	// Wait until the server is serving it: in flight counts the scrape too.
	deadline := time.Now().Add(30 * time.Second)
	for s.metric(t, "ragd_http_requests_in_flight") < 2 {
		select {
		case a := <-done:
			t.Fatalf("the re-ingest of %d documents finished (status %d) before it was seen in flight", len(docs), a.st)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the ingest request was not seen in flight within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sent := time.Now()
	if err := s.Ragd.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.st != http.StatusOK || a.resp.OK != len(docs) {
		t.Errorf("in-flight ingest across SIGTERM: status %d, %v, ok %d of %d: %.300s", a.st, a.err, a.resp.OK, len(docs), a.body)
	}
	code, err := s.Ragd.wait(60 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("ragd after SIGTERM: exit code %d, %v; want 0", code, err)
	}
	t.Logf("SIGTERM: the in-flight ingest finished %v after the signal, then ragd exited 0", a.at.Sub(sent).Round(time.Millisecond))
	if !s.Ragd.log.contains("ragd: shutting down") {
		t.Errorf("ragd did not log its shutdown")
	}
	if _, _, err := s.Query.call(context.Background(), http.MethodGet, "/healthz", nil, nil); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("after exit, /healthz: %v; want connection refused", err)
	}
}
