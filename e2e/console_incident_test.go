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
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests of issue 20: the console during an incident. Each
// test names the items it covers; each failed on the console
// before the fix.

// incidentConfig is a console stack: the embedded stores on listen
// (127.0.0.1:0 for any port), the server's retriever defaults (graph and
// its expansion off), auth on with an admin and a query key unless
// authOff, and extra YAML appended.
func incidentConfig(t *testing.T, dataDir, listen string, authOff bool, extra string) string {
	t.Helper()
	q := strconv.Quote
	cfg := `data_dir: ` + q(dataDir) + `
server:
  listen: ` + q(listen) + `
  debug_faults: true
  shutdown_grace_s: 2
backends:
  vector: {kind: embedded, dir: vector}
  keyword: {kind: bleve, dir: keyword}
  graph: {kind: embedded, dir: graph}
embedder: {kind: hashing, dimension: 384}
breakers:
  enabled: true
  failure_threshold: 5
  reset_timeout_s: 600
`
	if authOff {
		cfg += "auth: {enabled: false}\n"
	} else {
		// /metrics counts every tenant's traffic: not public beside a key
		// bound to a tenant.
		cfg += `auth:
  enabled: true
  public: [health, ready, openapi]
  keys:
    - {name: console-admin, key: ` + q(adminKey) + `, role: admin}
    - {name: console-query, key: ` + q(queryKey) + `, role: query}
    - {name: acme-reader, key: ` + q(tenantKey) + `, role: query, tenant: acme}
`
	}
	path := filepath.Join(t.TempDir(), "rag.yaml")
	if err := os.WriteFile(path, []byte(cfg+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// useKey types key into the console's key form, waits for the cards, and
// checks that the page names the key and its role.
func (b *browser) useKey(key, name string) {
	b.t.Helper()
	b.do("enter the key", chromedp.SendKeys(chromedp.CSS("#api-key"), key), chromedp.Click(chromedp.CSS("#use-key")))
	b.waitFor("cards", `document.querySelectorAll("#cards .card").length > 0`)
	b.waitFor("the key's status", `document.getElementById("key-status").textContent !== ""`)
	if ks := pageText(b, "#key-status"); !strings.HasPrefix(ks, "Key: "+name) {
		b.t.Errorf("key status %q does not name the key and its role (%s)", ks, name)
	}
}

// confirm answers the console's confirmation dialog.
func (b *browser) confirm(reason string) {
	b.t.Helper()
	b.waitFor("confirmation dialog", `document.getElementById("confirm").open`)
	if reason != "" {
		b.do("type the reason", chromedp.SendKeys(chromedp.CSS("#confirm-reason"), reason))
	}
	b.do("confirm", chromedp.Click(chromedp.CSS("#confirm-ok")))
	b.waitFor("dialog closed", `!document.getElementById("confirm").open`)
}

// mustCall sends a request and fails the test unless it answers 2xx.
func mustCall(t *testing.T, c *client, method, path string, in, out any) {
	t.Helper()
	if st, body, err := c.call(context.Background(), method, path, in, out); err != nil || st/100 != 2 {
		t.Fatalf("%s %s: %d %v %s", method, path, st, err, body)
	}
}

// timelineTexts is the timeline's entries, oldest first, each as
// "SOURCE|TEXT".
func timelineTexts(b *browser) []string {
	return jsEval[[]string](b, `[...document.querySelectorAll("#events li[data-seq]")].reverse().map(li => li.dataset.source + "|" + li.textContent)`)
}

// TestConsolePlaygroundDefaults is issue 20 items 1, 4 and 10: the
// playground sends nothing the user did not set, so it ranks exactly like
// the same query through the API, and shows the weights and fusion the
// server used; sources disabled in the configuration show as disabled, not
// as usable; the answer comes with its raw JSON, a curl command (without
// the key), a timestamp, the hits' text and each source's reason.
func TestConsolePlaygroundDefaults(t *testing.T) {
	b := newBrowser(t)
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, ""))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	loadDemo(t, admin)
	// Built now, so the playground's graph query below is answered.
	wakeGraph(t, admin)

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(queryKey, "console-query (query)")
	b.waitFor("cards", `document.querySelector("#card-graph") && document.querySelector("#card-graph_expand")`)

	t.Log("issue 29 item 8: the stack runs with debug_faults, and the page says so")
	b.waitFor("the fault-injection banner", `!document.getElementById("faults").hidden && document.getElementById("faults").offsetParent !== null`)
	if txt := pageText(b, "#faults"); !strings.Contains(txt, "Fault injection is on") || !strings.Contains(txt, "never in production") {
		t.Errorf("fault-injection banner %q", txt)
	}

	t.Log("item 4: disabled sources")
	for _, name := range []string{"graph", "graph_expand"} {
		b.waitFor(name+" disabled", `document.querySelector("#card-`+name+`").dataset.state === "disabled"`)
		if st := pageText(b, "#card-"+name+" h3 .badge"); st != "disabled" {
			t.Errorf("%s card badge %q, want disabled", name, st)
		}
	}
	// The keyword index joins from the record at start: its health may be
	// down in the page's first poll.
	b.waitFor("keyword usable", `document.getElementById("overall").textContent.includes("usable sources: vector, keyword")`)
	overall := pageText(b, "#overall")
	if !strings.Contains(overall, "usable sources: vector, keyword ·") || !strings.Contains(overall, "disabled by default: graph, graph_expand") {
		t.Errorf("overall line %q: graph must not be usable and must be listed as disabled", overall)
	}
	b.screenshot("disabled-sources")

	t.Log("item 1: server defaults")
	const text = "circuit breaker half-open trial calls"
	jsEval[bool](b, `(() => { window.sent = []; const f = window.fetch;
		window.fetch = (u, i) => { if (i && i.method === "POST") window.sent.push(i.body); return f(u, i); }; return true; })()`)
	b.do("run the query", chromedp.SendKeys(chromedp.CSS("#q-text"), text), chromedp.Click(chromedp.CSS("#run-query")))
	b.waitFor("hits", `document.querySelectorAll("#hits .hit[data-id]").length > 0`)
	var sent map[string]any
	if err := json.Unmarshal([]byte(jsEval[string](b, `window.sent[0]`)), &sent); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"text": text, "explain": true}; fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("the playground sent %v, want only %v", sent, want)
	}
	var res struct {
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
		Fusion struct {
			Mode    string             `json:"mode"`
			Weights map[string]float64 `json:"weights"`
		} `json:"fusion"`
	}
	mustCall(t, admin, http.MethodPost, "/v1/query", map[string]any{"text": text, "explain": true}, &res)
	var api []string
	for _, h := range res.Hits {
		api = append(api, h.ID)
	}
	if got := jsEval[[]string](b, `[...document.querySelectorAll("#hits .hit[data-id]")].map(h => h.dataset.id)`); !slices.Equal(got, api) {
		t.Errorf("the playground ranks %v, the API %v", got, api)
	}
	fusion := pageText(b, "#query-fusion")
	for _, want := range []string{"fused with " + res.Fusion.Mode, "keyword " + strconv.FormatFloat(res.Fusion.Weights["keyword"], 'g', -1, 64),
		"not used: graph (disabled), graph_expand (disabled)"} {
		if !strings.Contains(fusion, want) {
			t.Errorf("fusion line %q lacks %q", fusion, want)
		}
	}
	if strings.Contains(fusion, "graph 1") {
		t.Errorf("fusion line %q weights graph", fusion)
	}
	if got := jsEval[string](b, `document.querySelector("#q-on-graph").options[0].textContent`); got != "server default (off)" {
		t.Errorf("graph's default choice reads %q, want the server's default named", got)
	}

	t.Log("item 10: raw JSON, curl, timestamp, text, reasons")
	var raw struct {
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(jsEval[string](b, `document.getElementById("q-raw").textContent`)), &raw); err != nil || len(raw.Hits) != len(api) || raw.Hits[0].ID != api[0] {
		t.Errorf("raw JSON: %v, %+v", err, raw)
	}
	b.do("copy as curl", chromedp.Click(chromedp.CSS("#copy-curl")))
	curl := jsEval[string](b, `document.getElementById("q-curl").value`)
	if !strings.Contains(curl, `"http://`+srv.addr+`/v1/query'`) && !strings.Contains(curl, `'http://`+srv.addr+`/v1/query'`) ||
		!strings.Contains(curl, `$RAGD_API_KEY`) || !strings.Contains(curl, `{"text":"`+text+`","explain":true}`) || strings.Contains(curl, queryKey) {
		t.Errorf("curl command %q: want the URL, the body sent and $RAGD_API_KEY, never the key", curl)
	}
	if st := pageText(b, "#query-status"); !regexp.MustCompile(`answered at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`).MatchString(st) &&
		!strings.Contains(st, "clipboard") && !strings.Contains(st, "selected") {
		t.Errorf("query status %q lacks a timestamp", st)
	}
	if n := jsEval[int](b, `[...document.querySelectorAll("#hits .hit[data-id] .text")].filter(p => p.textContent.length > 20).length`); n == 0 {
		t.Error("no hit shows its document's text")
	}
	if r := jsEval[string](b, `document.querySelector('#query-sources tr[data-source="graph"] td:last-child').textContent`); r != "disabled" {
		t.Errorf("graph's reason %q, want disabled", r)
	}
	// Switching graph on by hand sends exactly that.
	b.do("switch graph on", chromedp.SetValue(chromedp.CSS("#q-on-graph"), "on"), chromedp.Click(chromedp.CSS("#run-query")))
	b.waitFor("second answer", `window.sent.length === 2 && document.querySelector('#query-sources tr[data-source="graph"]')?.dataset.status === "ok"`)
	if got := jsEval[string](b, `window.sent[1]`); got != `{"text":"`+text+`","explain":true,"sources":{"graph":{"enabled":true}}}` {
		t.Errorf("with graph switched on the playground sent %s", got)
	}
	b.do("scroll to the playground", chromedp.ScrollIntoView(chromedp.CSS("#query-fusion")))
	b.screenshot("playground")
	b.checkExceptions()
}

// TestConsoleAcrossRestarts is issue 20 items 2, 3 and 11: the timeline
// keeps its history across a restart, with markers, and misses nothing
// that happened before the page's next poll; with the server down
// everything is greyed out and labelled; a server that comes back
// demanding a key shows nothing of the old instance; the timeline gives
// real durations, dates with the time zone, coloured kinds, and sits
// above the fold on a 1440×900 screen.
func TestConsoleAcrossRestarts(t *testing.T) {
	b := newBrowser(t)
	b.do("1440×900", chromedp.EmulateViewport(1440, 900))
	data := t.TempDir()
	srv := startRagd(t, incidentConfig(t, data, "127.0.0.1:0", true, ""))
	addr := srv.addr
	c := newClient(addr, "")
	t.Cleanup(c.close)
	loadDemo(t, c)

	b.do("open the console", chromedp.Navigate("http://"+addr+"/ui/"))
	b.waitFor("cards", `document.querySelector("#card-keyword")?.dataset.state === "closed"`)
	mustCall(t, c, http.MethodPost, "/v1/status/breakers/keyword/force-open", nil, nil)
	b.waitFor("keyword open", `document.querySelector("#card-keyword").dataset.state === "open"`)
	b.do("let it be open a while", chromedp.Sleep(3*time.Second))
	mustCall(t, c, http.MethodPost, "/v1/status/breakers/keyword/force-close", nil, nil)
	mustCall(t, c, http.MethodPost, "/v1/status/breakers/vector/force-open", nil, nil)
	b.waitFor("timeline", `document.querySelectorAll('#events li[data-source="keyword"]').length === 2 &&
		document.querySelector("#card-vector").dataset.state === "open"`)

	t.Log("item 11: durations, dates, colours, above the fold")
	closed := jsEval[string](b, `document.querySelector('#events li[data-source="keyword"][data-to="closed"]')?.textContent ?? ""`)
	if m := regexp.MustCompile(`was open (\d+) s; outage (\d+) s`).FindStringSubmatch(closed); m == nil || m[1] == "0" || len(m[1]) > 2 {
		t.Errorf("the close event %q: want the real open duration (a few seconds), not the 600 s cooldown", closed)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC([+−]\d\d:\d\d)?`).MatchString(closed) {
		t.Errorf("the event %q does not start with a date, time and zone", closed)
	}
	colours := jsEval[map[string]string](b, `Object.fromEntries(["open", "closed"].map(k => {
		const li = document.querySelector('#events li[data-to="' + k + '"]');
		return [k, li ? getComputedStyle(li).borderLeftColor : "none"]; }))`)
	if colours["open"] == colours["closed"] {
		t.Errorf("open and closed events look alike: %v", colours)
	}
	if top := jsEval[float64](b, `document.querySelector("#events li")?.getBoundingClientRect().bottom ?? 1e9`); top > 900 {
		t.Errorf("the newest timeline entry ends at %.0f px, below the fold of a 900 px screen", top)
	}
	b.screenshot("timeline-1440x900")

	t.Log("item 3: the server goes away")
	srv.stop(t)
	b.waitFor("greyed out", `document.body.dataset.stale === "true" && !document.getElementById("stale").hidden`)
	if op := jsEval[float64](b, `parseFloat(getComputedStyle(document.querySelector("#card-keyword")).opacity)`); op >= 1 {
		t.Errorf("a stale card is drawn at opacity %v", op)
	}
	if !strings.Contains(pageText(b, "#stale"), "Not live") || jsEval[int](b, `[...document.querySelectorAll(".card .stale-label")].filter(l => l.offsetParent).length`) == 0 {
		t.Errorf("no label says the data is stale: %q", pageText(b, "#stale"))
	}
	b.screenshot("server-down")

	t.Log("item 2: a restart, and a breaker forced right after it")
	srv = startRagd(t, incidentConfig(t, data, addr, true, ""))
	mustCall(t, c, http.MethodPost, "/v1/status/breakers/graph/force-open", nil, nil)
	b.waitFor("live again with the new instance", `!document.body.dataset.stale && document.querySelector("#card-vector")?.dataset.state === "closed"`)
	b.waitFor("the forced graph event", `[...document.querySelectorAll('#events li[data-source="graph"]')].some(li => li.textContent.includes("closed → open (forced"))`)
	got := timelineTexts(b)
	want := []string{"keyword", "closed → open (forced", "keyword", "open → closed (forced", "vector", "closed → open (forced",
		"ragd", "ragd stopped", "ragd", "ragd started", "graph", "closed → open (forced"}
	var flat []string
	for _, e := range got {
		src, text, _ := strings.Cut(e, "|")
		if strings.Contains(text, "ragd started") && len(flat) == 0 {
			continue // the first start
		}
		flat = append(flat, src)
		for _, k := range []string{"closed → open (forced", "open → closed (forced", "ragd stopped", "ragd started"} {
			if strings.Contains(text, k) {
				flat = append(flat, k)
			}
		}
	}
	if !slices.Equal(flat, want) {
		t.Errorf("timeline across the restart:\n got %q\nwant %q\n(entries %q)", flat, want, got)
	}
	if n := jsEval[int](b, `new Set([...document.querySelectorAll("#events li[data-seq]")].map(li => li.dataset.seq)).size`); n != len(got) {
		t.Errorf("%d distinct sequence numbers for %d entries", n, len(got))
	}
	if state := jsEval[string](b, `document.querySelector("#card-graph").dataset.state`); state != "disabled" ||
		!strings.Contains(pageText(b, "#card-graph"), "open since") {
		t.Errorf("graph card after its forced trip: %s %q", state, pageText(b, "#card-graph"))
	}
	b.screenshot("after-restart")

	t.Log("item 3: back with a key required")
	srv.stop(t)
	b.waitFor("stale", `document.body.dataset.stale === "true"`)
	startRagd(t, incidentConfig(t, data, addr, false, ""))
	b.waitFor("asks for a key", `document.getElementById("overall").textContent.includes("needs an API key")`)
	if n := jsEval[int](b, `document.querySelectorAll("#cards .card, #events li[data-seq], #history-sources .chart").length`); n != 0 {
		t.Errorf("%d cards, events and charts of the previous instance are still shown", n)
	}
	if !jsEval[bool](b, `document.getElementById("stale").hidden`) {
		t.Error("the stale banner stays over an empty page")
	}
	b.screenshot("key-required")
	b.checkExceptions()
}

// TestConsoleCardsNotOlderThanTimeline: a card never shows a breaker's
// state older than the timeline's newest event. The page reads the
// breakers, then the events; a trip between the two reads used to reach
// the timeline a poll (2 s) before its card. Here the page's breaker
// reads answer a snapshot taken before the trip until the page has read
// the trip's event, so that every poll falls in that window: the card
// must show the trip when the timeline does.
func TestConsoleCardsNotOlderThanTimeline(t *testing.T) {
	b := newBrowser(t)
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", true, ""))
	c := newClient(srv.addr, "")
	t.Cleanup(c.close)

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.waitFor("cards", `document.querySelector("#card-keyword")?.dataset.state === "closed"`)
	jsEval[bool](b, `(() => {
		const f = window.fetch;
		window.fetch = async (u, init) => {
			const url = String(u), isGet = !init || !init.method || init.method === "GET";
			if (isGet && url.includes("/v1/status/breakers") && window.staleBreakers !== undefined) {
				return new Response(window.staleBreakers, { status: 200, headers: { "Content-Type": "application/json" } });
			}
			const r = await f(u, init);
			if (isGet && url.includes("/v1/status/events") && window.staleBreakers !== undefined) {
				const page = await r.clone().json();
				if (page.events && page.events.some((e) => e.source === "keyword")) window.staleBreakers = undefined;
			}
			return r;
		};
		f("/v1/status/breakers", { cache: "no-store" }).then((r) => r.text()).then((s) => { window.staleBreakers = s; });
		return true;
	})()`)
	b.waitFor("snapshot taken", `window.staleBreakers !== undefined`)
	mustCall(t, c, http.MethodPost, "/v1/status/breakers/keyword/force-open", nil, nil)
	b.waitFor("the trip on the timeline", `document.querySelector('#events li[data-source="keyword"][data-to="open"]') !== null`)
	if state := jsEval[string](b, `document.querySelector("#card-keyword").dataset.state`); state != "open" {
		t.Errorf("the timeline shows keyword's trip while its card says %q", state)
	}
	b.checkExceptions()
}

// TestConsoleHold is issue 20 item 5: force actions ask first; a
// maintenance hold is placed from the card with a reason, shown with who
// and when, never counts down, is named on the timeline, and is released
// by force-close; forced events name the key.
func TestConsoleHold(t *testing.T) {
	b := newBrowser(t)
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, ""))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(adminKey, "console-admin (admin)")
	b.waitFor("cards", `document.querySelector("#card-vector")?.dataset.state === "closed"`)
	jsEval[bool](b, `(() => { window.posts = 0; const f = window.fetch;
		window.fetch = (u, i) => { if (i && i.method === "POST") window.posts++; return f(u, i); }; return true; })()`)

	t.Log("a force action asks first; cancel sends nothing")
	b.do("force open vector", chromedp.Click(chromedp.CSS(`#card-vector button[aria-label="Force open vector breaker"]`)))
	b.waitFor("dialog", `document.getElementById("confirm").open`)
	b.screenshot("confirm-force-open")
	b.do("cancel", chromedp.Click(chromedp.CSS("#confirm-cancel")))
	b.do("two polls", chromedp.Sleep(5*time.Second))
	if n := jsEval[int](b, `window.posts`); n != 0 || jsEval[string](b, `document.querySelector("#card-vector").dataset.state`) != "closed" {
		t.Fatalf("cancelling the confirmation sent %d requests", n)
	}

	t.Log("hold with a reason")
	b.do("hold vector", chromedp.Click(chromedp.CSS(`#card-vector button[aria-label="Hold vector breaker"]`)))
	b.confirm("pg 16 upgrade")
	b.waitFor("held", `document.querySelector("#card-vector").dataset.state === "held"`)
	note := pageText(b, "#card-vector .held-note")
	if !regexp.MustCompile(`^Held open for maintenance by console-admin since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\S*: pg 16 upgrade`).MatchString(note) {
		t.Errorf("hold note %q", note)
	}
	if r := pageText(b, "#card-vector .countdown"); r != "never: held until released" {
		t.Errorf("retry row of a held breaker %q", r)
	}
	b.waitFor("timeline names the hold", `[...document.querySelectorAll('#events li[data-source="vector"]')].some(li =>
		li.dataset.to === "held" && li.textContent.includes("held open for maintenance by console-admin: pg 16 upgrade"))`)
	var br struct {
		Breakers []heldSnap `json:"breakers"`
	}
	mustCall(t, admin, http.MethodGet, "/v1/status/breakers", nil, &br)
	if i := slices.IndexFunc(br.Breakers, func(s heldSnap) bool { return s.Name == "vector" }); i < 0 || br.Breakers[i].Hold == nil || br.Breakers[i].Hold.By != "console-admin" || br.Breakers[i].Hold.Reason != "pg 16 upgrade" {
		t.Fatalf("the API's view of the hold: %+v", br.Breakers)
	}
	if jsEval[bool](b, `document.querySelector('#card-vector button[aria-label="Force open vector breaker"]').disabled`) != true {
		t.Error("force open stays enabled on a held breaker")
	}
	b.screenshot("held")

	t.Log("force open names the key; release")
	b.do("force open keyword", chromedp.Click(chromedp.CSS(`#card-keyword button[aria-label="Force open keyword breaker"]`)))
	b.confirm("")
	b.waitFor("forced event", `[...document.querySelectorAll('#events li[data-source="keyword"]')].some(li => li.textContent.includes("(forced by console-admin"))`)
	b.do("release vector", chromedp.Click(chromedp.CSS(`#card-vector button[aria-label="Release hold of vector breaker"]`)))
	b.confirm("")
	b.waitFor("released", `document.querySelector("#card-vector").dataset.state === "closed" &&
		[...document.querySelectorAll('#events li[data-source="vector"]')].some(li => li.textContent.includes("released the hold of console-admin"))`)
	b.screenshot("released")
	b.checkExceptions()
}

type heldSnap struct {
	Name string `json:"name"`
	Hold *struct {
		By     string `json:"by"`
		Reason string `json:"reason"`
	} `json:"hold"`
}

// TestConsoleNarrowAndRoles is issue 20 item 6: at 390 px nothing scrolls
// sideways and the query's detail and bars stay usable; action messages
// clear; disabled buttons look disabled; a query key's name and role show
// and its admin buttons are off; no favicon request fails.
func TestConsoleNarrowAndRoles(t *testing.T) {
	b := newBrowser(t)
	b.do("390 px", chromedp.EmulateViewport(390, 844))
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, ""))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	loadDemo(t, admin)
	mustCall(t, admin, http.MethodPost, "/v1/status/breakers/keyword/force-open", nil, nil)

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(queryKey, "console-query (query)")
	b.waitFor("cards", `document.querySelector("#card-keyword")?.dataset.state === "open"`)
	if ks := pageText(b, "#key-status"); !strings.Contains(ks, "read-only") {
		t.Errorf("key status %q does not say the key cannot act", ks)
	}
	if n := jsEval[int](b, `[...document.querySelectorAll(".card .actions button")].filter(b => !b.disabled).length`); n != 0 {
		t.Errorf("%d admin buttons enabled for a query key", n)
	}
	b.do("run a query", chromedp.SendKeys(chromedp.CSS("#q-text"), "circuit breaker half-open"), chromedp.Click(chromedp.CSS("#run-query")))
	b.waitFor("hits", `document.querySelectorAll("#hits .hit[data-id]").length > 0`)
	if w := jsEval[string](b, `document.scrollingElement.scrollWidth + "/" + window.innerWidth`); w != "390/390" {
		t.Errorf("page width/viewport %s: the page scrolls sideways", w)
	}
	right := jsEval[float64](b, `Math.max(...[...document.querySelectorAll('#query-sources td, #hits .detail, #hits .track')].map(e => e.getBoundingClientRect().right))`)
	if right > 390 {
		t.Errorf("query details reach %.0f px, past the 390 px screen", right)
	}
	reason := jsEval[map[string]float64](b, `(() => { const r = document.querySelector('#query-sources tr[data-source="keyword"] td:last-child').getBoundingClientRect(); return {w: r.width, x: r.left}; })()`)
	if reason["w"] < 100 {
		t.Errorf("the reason cell is %.0f px wide", reason["w"])
	}
	if w := jsEval[float64](b, `document.querySelector("#hits .hit .track").getBoundingClientRect().width`); w < 60 {
		t.Errorf("a contribution bar's track is %.0f px wide", w)
	}
	b.do("scroll to the answer", chromedp.ScrollIntoView(chromedp.CSS("#query-sources")))
	b.screenshot("narrow-query")

	t.Log("disabled buttons look disabled; messages clear")
	disabledLook := jsEval[string](b, `getComputedStyle(document.querySelector('#card-vector button.danger')).color`)
	b.do("forget", chromedp.Click(chromedp.CSS("#forget-key")))
	b.useKey(adminKey, "console-admin (admin)")
	b.waitFor("enabled", `!document.querySelector('#card-vector button.danger').disabled`)
	if enabledLook := jsEval[string](b, `getComputedStyle(document.querySelector('#card-vector button.danger')).color`); enabledLook == disabledLook {
		t.Errorf("a disabled and an enabled Force open are both drawn %s", enabledLook)
	}
	b.do("force close keyword", chromedp.Click(chromedp.CSS(`#card-keyword button[aria-label="Force close keyword breaker"]`)))
	b.confirm("")
	b.waitFor("message", `document.getElementById("action-status").textContent.includes("keyword breaker is now closed")`)
	b.waitFor("message cleared", `document.getElementById("action-status").textContent === ""`)
	b.screenshot("narrow-cards")

	t.Log("no failed favicon request")
	b.do("reload", chromedp.Reload())
	b.waitFor("asks for a key", `document.getElementById("overall").textContent.includes("needs an API key")`)
	b.do("let the icon load", chromedp.Sleep(2*time.Second))
	b.mu.Lock()
	failed := slices.Clone(b.failed)
	b.mu.Unlock()
	for _, f := range failed {
		if !strings.Contains(f, "/v1/status/") { // the polls without a key get 401
			t.Errorf("a request failed: %s", f)
		}
	}
	b.checkExceptions()
}

// TestConsoleHistoryAndWarnings is issue 20 items 7, 8 and 9: charts of
// the last minutes drawn from /v1/status/history, the limit and calls in
// flight, the timeout beside the p99 with a warning as it nears it, the
// failures toward the threshold, and the stores, embedder and server.
func TestConsoleHistoryAndWarnings(t *testing.T) {
	b := newBrowser(t)
	extra := `retriever:
  sources:
    keyword: {timeout_ms: 400}
`
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, extra))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	loadDemo(t, admin)
	wakes := wakeGraph(t, admin) // so it has a count and a lag to chart
	mustCall(t, admin, http.MethodPost, "/v1/status/breakers/graph/force-open", nil, nil)
	for range 10 {
		mustCall(t, admin, http.MethodPost, "/v1/query", queryRequest{Text: "retrieval fusion"}, nil)
	}
	// keyword now answers in about 350 ms: under its 400 ms timeout, but
	// close to it.
	mustCall(t, admin, http.MethodPut, "/debug/faults/keyword", map[string]int{"delay_ms": 350}, nil)
	for range 8 {
		mustCall(t, admin, http.MethodPost, "/v1/query", queryRequest{Text: "circuit breaker"}, nil)
	}
	if st, _, _ := admin.call(context.Background(), http.MethodPost, "/v1/query", map[string]any{"txt": 1}, nil); st != http.StatusBadRequest {
		t.Fatalf("a bad query answered %d", st)
	}

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(adminKey, "console-admin (admin)")

	t.Log("item 8: early warning")
	b.waitFor("p99 warning", `!document.querySelector("#card-keyword .warning").hidden`)
	warn := pageText(b, "#card-keyword .warning")
	if !regexp.MustCompile(`p99 \d+ ms is \d+% of the 400 ms timeout`).MatchString(warn) {
		t.Errorf("keyword warning %q", warn)
	}
	if !jsEval[bool](b, `document.querySelector("#card-vector .warning").hidden`) {
		t.Errorf("vector warns: %q", pageText(b, "#card-vector .warning"))
	}
	limit := pageText(b, "#card-keyword dl")
	for _, re := range []string{`\d+ in flight of limit \d+`, `\d+ ms of 400 ms`, `\d of 5 to trip`} {
		if !regexp.MustCompile(re).MatchString(limit) {
			t.Errorf("keyword card %q lacks %s", limit, re)
		}
	}
	b.screenshot("early-warning")

	t.Log("item 7: history")
	b.waitFor("charts", `document.querySelector('[data-chart="keyword-latency"] path') && document.querySelector('[data-chart="requests"] rect')`)
	var h struct {
		Steps int `json:"steps"`
		HTTP  struct {
			Requests  []int `json:"requests"`
			Status4xx []int `json:"status_4xx"`
		} `json:"http"`
		Sources []struct {
			Name  string `json:"name"`
			Calls []int  `json:"calls"`
		} `json:"sources"`
	}
	mustCall(t, admin, http.MethodGet, "/v1/status/history", nil, &h)
	sum := func(xs []int) (n int) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	// One document batch, the queries that woke the graph, 18 queries and
	// a bad one; status polls and the fault switch are not traffic.
	if want := 20 + wakes; sum(h.HTTP.Requests) != want || sum(h.HTTP.Status4xx) != 1 {
		t.Errorf("history counts %d requests, %d 4xx; want %d and 1", sum(h.HTTP.Requests), sum(h.HTTP.Status4xx), want)
	}
	errs := pageText(b, `[data-chart="errors"] figcaption b`)
	if errs != "1 · 0 · 0 in 15 min" {
		t.Errorf("the 4xx · 5xx · 429 chart says %q, want 1 · 0 · 0", errs)
	}
	bars := jsEval[int](b, `document.querySelectorAll('[data-chart="requests"] rect').length`)
	nonEmpty := 0
	for _, v := range h.HTTP.Requests {
		if v > 0 {
			nonEmpty++
		}
	}
	if bars != nonEmpty {
		t.Errorf("the requests chart draws %d bars for %d steps with requests", bars, nonEmpty)
	}
	if st := jsEval[[]string](b, `[...document.querySelectorAll('[data-chart="graph-breaker"] rect')].map(r => r.dataset.state)`); len(st) == 0 || st[len(st)-1] != "open" {
		t.Errorf("graph's breaker band %v, want it open now", st)
	}
	b.do("scroll to the history", chromedp.ScrollIntoView(chromedp.CSS("#history")))
	b.screenshot("history")

	t.Log("item 9: stores, embedder, server")
	var s struct {
		Instance string `json:"instance"`
		Version  string `json:"version"`
	}
	mustCall(t, admin, http.MethodGet, "/v1/status/server", nil, &s)
	b.waitFor("document counts", `[...document.querySelectorAll("#store-table tbody tr")].map(r => r.dataset.store + "=" + r.cells[3].textContent).join(",") === "vector=24,keyword=24,graph=24"`)
	if lag := jsEval[int](b, `document.querySelectorAll('#store-table tr[data-store="keyword"] svg, #store-table tr[data-store="graph"] svg').length`); lag != 2 {
		t.Errorf("%d lag charts, want one per derived store", lag)
	}
	facts := pageText(b, "#embedder")
	for _, want := range []string{"hashing, 384 dimensions", "kind=hashing", "Instance" + s.Instance, "Version" + s.Version, "Uptime"} {
		if !strings.Contains(facts, want) {
			t.Errorf("embedder and server facts %q lack %q", facts, want)
		}
	}
	b.do("scroll to the stores", chromedp.ScrollIntoView(chromedp.CSS("#stores")))
	b.screenshot("stores")
	b.checkExceptions()
}
