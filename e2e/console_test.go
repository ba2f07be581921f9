package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ragd/ragd/internal/demo"
	"github.com/ragd/ragd/internal/testenv"
)

// envArtifacts names the directory the browser tests save their
// screenshots in; unset, a temporary directory (logged) is used.
const envArtifacts = "RAG_TEST_ARTIFACTS"

// consoleSources are the cards the console must show for the embedded
// stack: the three sources, graph expansion and the embedder's breaker.
var consoleSources = []string{"vector", "keyword", "graph", "graph_expand", "embedder"}

// consoleConfig is the zero-setup embedded stack with auth on: an admin key
// for the console's force actions, and a reset timeout long enough that a
// forced-open breaker stays open for the whole test.
func consoleConfig(dataDir string) string {
	q := strconv.Quote
	return `data_dir: ` + q(dataDir) + `
server:
  listen: 127.0.0.1:0
backends:
  vector: {kind: embedded, dir: vector}
  keyword: {kind: bleve, dir: keyword}
  graph: {kind: embedded, dir: graph}
embedder: {kind: hashing, dimension: 384}
breakers:
  enabled: true
  failure_threshold: 5
  reset_timeout_s: 600
auth:
  enabled: true
  keys:
    - {name: console-admin, key: ` + q(adminKey) + `, role: admin}
    - {name: console-query, key: ` + q(queryKey) + `, role: query}
`
}

// browser is one headless Chromium tab on the console.
type browser struct {
	t    *testing.T
	ctx  context.Context
	dir  string // screenshots
	shot int

	mu         sync.Mutex
	exceptions []string // uncaught JavaScript exceptions of the page
	failed     []string // "STATUS URL" of every answer >= 400 the page got
}

// newBrowser starts Debian's chromium with the flags known to work in CI
// containers and a fresh profile, and closes it when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := testenv.Chromium(t)
	profile, err := os.MkdirTemp("", "ragd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 1000),
	}
	b := &browser{t: t}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf), chromedp.WithListener(b.listen))
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		// Chromium's helpers may still write to the profile for a moment.
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The first Run starts the browser; it must not carry a timeout.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1 + 1`)); err != nil {
		t.Fatalf("start chromium (%s): %v", exe, err)
	}
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		dir = t.TempDir()
	}
	// One directory per test, named after it.
	dir = filepath.Join(dir, "console", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshots go to %s", dir)
	b.ctx, b.dir = ctx, dir
	return b
}

// listen records the page's uncaught exceptions and failed answers.
func (b *browser) listen(ev any) {
	if e, ok := ev.(*network.EventResponseReceived); ok && e.Response != nil && e.Response.Status >= 400 {
		b.mu.Lock()
		b.failed = append(b.failed, fmt.Sprintf("%d %s", e.Response.Status, e.Response.URL))
		b.mu.Unlock()
		return
	}
	if e, ok := ev.(*cdpruntime.EventExceptionThrown); ok && e.ExceptionDetails != nil {
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg = d.Exception.Description
		}
		b.mu.Lock()
		b.exceptions = append(b.exceptions, fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, msg))
		b.mu.Unlock()
	}
}

// checkExceptions fails the test for any uncaught exception so far.
func (b *browser) checkExceptions() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.exceptions {
		b.t.Errorf("uncaught JavaScript exception: %s", e)
	}
}

// stepTimeout bounds one browser step; generous, because CI machines are
// shared and the console polls every two seconds.
const stepTimeout = 90 * time.Second

// do runs actions, failing the test with what when they fail.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.screenshot("failed-" + what)
		b.t.Fatalf("%s: %v", what, err)
	}
}

// jsEval evaluates a JavaScript expression into T.
func jsEval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds.
func (b *browser) waitFor(what, predicate string) {
	b.t.Helper()
	b.do(what, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
}

// screenshot saves the whole page as NN-name.png.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	b.shot++
	path := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", b.shot, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("save screenshot: %v", err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// pageText is the trimmed textContent of the first element matching sel.
func pageText(b *browser, sel string) string {
	b.t.Helper()
	return jsEval[string](b, `(document.querySelector(`+strconv.Quote(sel)+`)?.textContent ?? "").trim()`)
}

// tabTo presses Tab until the focused element matches sel, at most limit
// times, and fails the test if it never does.
func (b *browser) tabTo(sel string, limit int) {
	b.t.Helper()
	for range limit {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if jsEval[bool](b, `document.activeElement?.matches(`+strconv.Quote(sel)+`) ?? false`) {
			return
		}
	}
	b.screenshot("tab-lost")
	b.t.Fatalf("%s not reached with %d presses of Tab; focus is on %s", sel, limit,
		jsEval[string](b, `document.activeElement?.outerHTML.slice(0, 200) ?? "nothing"`))
}

// TestConsoleInBrowser drives the operator console in headless Chromium
// against a real `ragd serve` on the embedded stack: every source shows a
// card, a query key sees everything but cannot act, force-opening keyword
// through the UI (after a confirmation) turns its card open with a ticking
// countdown, a query shows its explain bars, and the whole page works from
// the keyboard with every control labelled.
func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(cfgPath, []byte(consoleConfig(filepath.Join(dir, "data"))), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startRagd(t, cfgPath)
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	loadDemo(t, admin)
	ui := "http://" + srv.addr + "/ui/"

	t.Log("step: every source has a card")
	{
		b.do("open the console", chromedp.Navigate(ui))
		b.waitFor("ask for a key", `document.getElementById("overall").textContent.includes("needs an API key")`)
		// A query key sees everything but may not act on a breaker.
		b.do("enter the query key",
			chromedp.SendKeys(chromedp.CSS("#api-key"), queryKey),
			chromedp.Click(chromedp.CSS("#use-key")))
		b.waitFor("cards", `["`+strings.Join(consoleSources, `","`)+`"].every(n => document.querySelector("#card-" + n))`)
		b.waitFor("the key's name and role", `document.getElementById("key-status").textContent.startsWith("Key: console-query (query)")`)
		if !jsEval[bool](b, `document.getElementById("faults").hidden`) {
			t.Error("the fault-injection banner shows on a server without debug_faults")
		}
		if n := jsEval[int](b, `[...document.querySelectorAll(".card .actions button")].filter(b => !b.disabled).length`); n != 0 {
			t.Errorf("%d breaker buttons enabled for a query key", n)
		}
		b.do("switch to the admin key",
			chromedp.Click(chromedp.CSS("#forget-key")),
			chromedp.SendKeys(chromedp.CSS("#api-key"), adminKey),
			chromedp.Click(chromedp.CSS("#use-key")))
		b.waitFor("admin key in use", `document.getElementById("key-status").textContent.startsWith("Key: console-admin (admin)")`)
		// However often the key form is sent, even while a poll is in
		// flight, one poll loop runs: about five status polls in ten seconds,
		// fewer on a loaded machine, never the ten or more of two loops.
		jsEval[bool](b, `(() => { window.polls = 0; const f = window.fetch;
			window.fetch = (u, i) => { if (String(u).startsWith("/v1/status/breakers")) window.polls++; return f(u, i); };
			const form = document.getElementById("key-form");
			for (let i = 0; i < 5; i++) form.requestSubmit();
			return true; })()`)
		b.do("let the submits' polls finish", chromedp.Sleep(time.Second))
		jsEval[int](b, `window.polls = 0`)
		b.do("watch the polls", chromedp.Sleep(10*time.Second))
		if n := jsEval[int](b, `window.polls`); n > 7 {
			t.Errorf("%d status polls in 10 s, want at most 7 (one loop every 2 s)", n)
		}
		if ks := pageText(b, "#key-status"); !strings.HasPrefix(ks, "Key: console-admin") {
			t.Errorf("sending the key form empty dropped the key: %q", ks)
		}
		// Three queries through the API; the cards show them within a poll
		// (the window is the last minute: they are sent just now).
		for range 3 {
			if st, body, err := admin.call(context.Background(), http.MethodPost, "/v1/query",
				queryRequest{Text: "retrieval fusion"}, nil); err != nil || st != http.StatusOK {
				t.Fatalf("query: %d %v %s", st, err, body)
			}
		}
		b.waitFor("figures", `document.querySelector("#card-keyword").textContent.includes("of 3 queries")`)
		for _, name := range []string{"vector", "keyword", "embedder"} {
			if st := pageText(b, "#card-"+name+" h3 .badge"); st != "closed" {
				t.Errorf("%s card shows %q, want closed", name, st)
			}
		}
		// The key lives in memory only.
		if stored := jsEval[string](b, `localStorage.length + "/" + sessionStorage.length + "/" + document.cookie`); stored != "0/0/" {
			t.Errorf("the page stored something: localStorage/sessionStorage/cookie = %s", stored)
		}
		if v := jsEval[string](b, `document.getElementById("api-key").value`); v != "" {
			t.Errorf("the key stays in the input field: %q", v)
		}
		b.screenshot("sources")
	}

	t.Log("step: force-open keyword from its card")
	{
		b.do("click force open", chromedp.Click(chromedp.CSS(`#card-keyword button[aria-label="Force open keyword breaker"]`)))
		b.waitFor("confirmation", `document.getElementById("confirm").open`)
		b.do("confirm", chromedp.Click(chromedp.CSS("#confirm-ok")))
		b.waitFor("keyword card open", `document.querySelector("#card-keyword").dataset.state === "open"`)
		b.waitFor("countdown", `/^\d+ s$/.test(document.querySelector("#card-keyword .countdown").textContent)`)
		first := countdown(b, "keyword")
		if first < 500 || first > 600 {
			t.Errorf("countdown %d s right after force-open, want about 600", first)
		}
		b.waitFor("countdown ticks", `parseInt(document.querySelector("#card-keyword .countdown").textContent) < `+strconv.Itoa(first))
		b.waitFor("timeline entry", `[...document.querySelectorAll('#events li[data-source="keyword"]')].some(li => li.textContent.includes("closed → open (forced by console-admin"))`)
		// The API agrees with the card.
		var br struct {
			Breakers []breakerSnap `json:"breakers"`
		}
		if st, body, err := admin.call(context.Background(), http.MethodGet, "/v1/status/breakers", nil, &br); err != nil || st != http.StatusOK {
			t.Fatalf("breakers: %d %v %s", st, err, body)
		}
		if i := slices.IndexFunc(br.Breakers, func(s breakerSnap) bool { return s.Name == "keyword" }); i < 0 || br.Breakers[i].State != "open" {
			t.Fatalf("the API does not report keyword open: %+v", br.Breakers)
		}
		b.screenshot("keyword-forced-open")
	}

	t.Log("step: query shows explain bars")
	{
		b.do("run a query",
			chromedp.SendKeys(chromedp.CSS("#q-text"), "circuit breaker half-open trial calls"),
			chromedp.Click(chromedp.CSS("#run-query")))
		b.waitFor("hits", `document.querySelectorAll("#hits .hit[data-id]").length > 0`)
		// keyword is forced open, graph is off by default, vector answered.
		for src, want := range map[string]string{"keyword": "circuit_open", "vector": "ok", "graph": "disabled"} {
			if got := jsEval[string](b, `document.querySelector('#query-sources tr[data-source="`+src+`"]')?.dataset.status ?? ""`); got != want {
				t.Errorf("query status of %s: %q, want %q", src, got, want)
			}
		}
		widths := jsEval[map[string]float64](b, `Object.fromEntries([...document.querySelectorAll("#hits .hit:first-child .bar")]
			.map(bar => [bar.dataset.source, bar.getBoundingClientRect().width]))`)
		if widths["vector"] <= 0 {
			t.Errorf("explain bars of the top hit: %v, want vector wider than 0", widths)
		}
		if _, ok := widths["keyword"]; ok {
			t.Errorf("the top hit has a keyword bar although keyword was circuit-open: %v", widths)
		}
		if d := pageText(b, "#hits .hit:first-child .detail"); !regexp.MustCompile(`^rank \d+ · raw \S+ · \+\S+$`).MatchString(d) {
			t.Errorf("contribution detail %q, want rank, raw score and contribution", d)
		}
		b.do("scroll to the hits", chromedp.ScrollIntoView(chromedp.CSS("#playground")))
		b.screenshot("query-explain")
	}

	t.Log("step: keyboard and labels")
	{
		// A reload forgets the key: it was never stored.
		b.do("reload", chromedp.Reload())
		b.waitFor("key forgotten", `document.getElementById("overall").textContent.includes("needs an API key")`)

		// Keyboard only from here: the skip link comes first, then the key.
		b.tabTo(`a.skip`, 3)
		b.tabTo(`#api-key`, 3)
		b.do("type the key", chromedp.KeyEvent(adminKey), chromedp.KeyEvent(kb.Enter))
		b.waitFor("key in use", `document.getElementById("key-status").textContent.startsWith("Key: console-admin")`)
		b.waitFor("keyword card", `document.querySelector("#card-keyword")?.dataset.state === "open"`)
		b.tabTo(`button[aria-label="Force close keyword breaker"]`, 60)
		b.do("press Enter on force close", chromedp.KeyEvent(kb.Enter))
		b.waitFor("confirmation", `document.getElementById("confirm").open && document.activeElement.id === "confirm-cancel"`)
		b.tabTo(`#confirm-ok`, 3)
		b.do("confirm with Enter", chromedp.KeyEvent(kb.Enter))
		b.waitFor("keyword closed", `document.querySelector("#card-keyword").dataset.state === "closed"`)
		b.tabTo(`#q-text`, 80)
		b.do("type a query", chromedp.KeyEvent("hybrid retrieval fusion"), chromedp.KeyEvent(kb.Enter))
		b.waitFor("hits", `document.querySelectorAll("#hits .hit[data-id]").length > 0 &&
			document.querySelector('#query-sources tr[data-source="keyword"]')?.dataset.status === "ok"`)

		// Every control has an accessible name, as Chromium computes it.
		unnamed := unnamedControls(t, b)
		if len(unnamed) > 0 {
			t.Errorf("controls without an accessible name: %v", unnamed)
		}
		if n := jsEval[int](b, `[...document.querySelectorAll("article.card")].filter(c =>
			!document.getElementById(c.getAttribute("aria-labelledby"))).length`); n != 0 {
			t.Errorf("%d cards without a resolvable aria-labelledby", n)
		}
		b.do("focus the query field", chromedp.Focus(chromedp.CSS("#q-text")))
		b.screenshot("keyboard")
	}
	b.checkExceptions()
}

// countdown reads a card's retry countdown in seconds.
func countdown(b *browser, name string) int {
	b.t.Helper()
	s := strings.TrimSuffix(pageText(b, "#card-"+name+" .countdown"), " s")
	n, err := strconv.Atoi(s)
	if err != nil {
		b.t.Fatalf("countdown %q: %v", s, err)
	}
	return n
}

type breakerSnap struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// unnamedControls lists the form controls whose computed accessible name
// is empty.
func unnamedControls(t *testing.T, b *browser) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("accessibility tree: %v", err)
	}
	controls := []string{"textbox", "searchbox", "combobox", "button", "checkbox", "spinbutton", "link"}
	var unnamed []string
	seen := 0
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		var role, name string
		_ = json.Unmarshal(n.Role.Value, &role)
		if !slices.Contains(controls, role) {
			continue
		}
		seen++
		if n.Name != nil {
			_ = json.Unmarshal(n.Name.Value, &name)
		}
		if strings.TrimSpace(name) == "" {
			unnamed = append(unnamed, role+"#"+string(n.NodeID))
		}
	}
	// Key form 3, query form 5 + 8 per-source controls + run, 2 per breaker.
	if seen < 20 {
		t.Fatalf("only %d controls in the accessibility tree", seen)
	}
	return unnamed
}

// wakeGraph asks for the graph until it answers: with rag.yaml's defaults
// the embedded graph is dormant (nothing reads it) until a query asks for
// it, and answers once built from the change log. It returns how many
// queries it sent (traffic, for tests that count it).
func wakeGraph(t *testing.T, c *client) (queries int) {
	t.Helper()
	on := true
	deadline := time.Now().Add(60 * time.Second)
	for {
		var res queryResult
		queries++
		st, _, err := c.call(context.Background(), http.MethodPost, "/v1/query",
			queryRequest{Text: "circuit breaker", Sources: map[string]sourceOptions{"graph": {Enabled: &on}}}, &res)
		if err == nil && st == http.StatusOK && res.Sources["graph"].Status == "ok" {
			return queries
		}
		if time.Now().After(deadline) {
			t.Fatalf("the graph did not answer within 60 s: %d %v %+v", st, err, res.Sources)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loadDemo posts the bundled sample corpus through the API.
func loadDemo(t *testing.T, c *client) {
	t.Helper()
	docs, err := demo.Documents()
	if err != nil {
		t.Fatal(err)
	}
	var resp batchResponse
	st, body, err := c.call(context.Background(), http.MethodPost, "/v1/documents", map[string]any{"documents": docs}, &resp)
	if err != nil || st != http.StatusOK || resp.OK != len(docs) {
		t.Fatalf("load the demo corpus: %d %v %s", st, err, body)
	}
}
