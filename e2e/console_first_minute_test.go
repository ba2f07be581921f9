package e2e_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// The browser tests of issue 30 item 6: the console for the first minute
// of an incident. Each test names the defects (D) and gaps (G) it covers;
// each failed on the console before the fix.

// tenantKey is a query key bound to tenant acme (incidentConfig).
const tenantKey = "e2e-acme-key-0123456789abcdef"

// sourcesAnswers is the part of GET /v1/status/sources the tests read.
type sourcesAnswers struct {
	Queries int `json:"queries"`
	Answers struct {
		Partial       int     `json:"partial"`
		Degraded      int     `json:"degraded"`
		Failed        int     `json:"failed"`
		PartialShare  float64 `json:"partial_share"`
		DegradedShare float64 `json:"degraded_share"`
	} `json:"answers"`
	Failures []struct {
		Source string `json:"source"`
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"failures"`
}

// query sends n queries and returns their status codes (a query every
// source failed is a 503, not an error of the test).
func queries(t *testing.T, c *client, n int, text string) []int {
	t.Helper()
	var codes []int
	for range n {
		st, body, err := c.call(context.Background(), http.MethodPost, "/v1/query", queryRequest{Text: text}, nil)
		if err != nil || st != http.StatusOK && st != http.StatusServiceUnavailable {
			t.Fatalf("query: %d %v %s", st, err, body)
		}
		codes = append(codes, st)
	}
	return codes
}

// checkWithin bounds check's wait: ten polls of the console.
const checkWithin = 20 * time.Second

// check waits until a JavaScript predicate holds, like waitFor, but for
// checkWithin only, and fails the test without stopping it: the steps
// after it still run, so one run reports every item that does not hold.
func (b *browser) check(what, predicate string) bool {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, checkWithin)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(checkWithin)))
	if err != nil {
		b.screenshot("failed-" + what)
		b.t.Errorf("%s: not within %s: %v", what, checkWithin, err)
		return false
	}
	return true
}

// cardOrder is the cards' names in page order.
func cardOrder(b *browser) []string {
	return jsEval[[]string](b, `[...document.querySelectorAll("#cards .card")].map(c => c.dataset.source)`)
}

// TestConsoleUserImpactFirst is issue 30 item 6: user impact first (G: the
// share of partial, degraded and failed answers of the last minute, at
// the top of the page and in GET /v1/status/sources, before only in
// /metrics); the last failure's text on each card, so a hang and an error
// storm read differently (G), kept per tenant; cards ordered by severity
// and the tab's title and icon naming the trouble (G); the "about to time
// out" warning ends with the trip (D: it outlived it).
func TestConsoleUserImpactFirst(t *testing.T) {
	b := newBrowser(t)
	extra := `retriever:
  sources:
    keyword: {timeout_ms: 400}
`
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, extra))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	acme := newClient(srv.addr, tenantKey)
	t.Cleanup(acme.close)
	loadDemo(t, admin)

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(adminKey, "console-admin (admin)")
	b.waitFor("cards", `document.querySelector("#card-keyword")?.dataset.state === "closed"`)

	t.Log("all well: the impact line says so, the title and icon are quiet")
	queries(t, admin, 4, "retrieval fusion")
	b.check("impact of 4 queries", `/\b4 queries\b/.test(document.getElementById("impact")?.textContent ?? "")`)
	if txt := pageText(b, "#impact"); !strings.Contains(txt, "0% partial") || !strings.Contains(txt, "0% degraded") {
		t.Errorf("impact line with every source answering: %q", txt)
	}
	top := jsEval[map[string]float64](b, `({impact: document.getElementById("impact").getBoundingClientRect().top,
		cards: document.getElementById("cards").getBoundingClientRect().top})`)
	if top["impact"] >= top["cards"] || top["impact"] > 300 {
		t.Errorf("the impact line is at %.0f px, the cards at %.0f px: want it first, above the fold", top["impact"], top["cards"])
	}
	if title := jsEval[string](b, `document.title`); title != "ragd console" {
		t.Errorf("title %q with nothing wrong", title)
	}
	if icon := jsEval[string](b, `document.getElementById("favicon").getAttribute("href")`); icon != "favicon.svg" {
		t.Errorf("icon %q with nothing wrong", icon)
	}

	t.Log("keyword slows down to near its timeout: a warning, and its card comes first")
	mustCall(t, admin, http.MethodPut, "/debug/faults/keyword", map[string]int{"delay_ms": 350}, nil)
	queries(t, admin, 8, "circuit breaker")
	b.waitFor("p99 warning", `!document.querySelector("#card-keyword .warning").hidden`)
	b.check("keyword first", `document.querySelector("#cards .card")?.dataset.source === "keyword"`)
	if title := jsEval[string](b, `document.title`); !strings.Contains(title, "keyword") || !strings.HasPrefix(title, "⚠") {
		t.Errorf("title %q while keyword nears its timeout, want it named behind ⚠", title)
	}
	b.check("the icon warns", `document.getElementById("favicon").getAttribute("href") === "favicon-warn.svg"`)
	b.screenshot("warning")

	t.Log("keyword fails and trips: the warning goes, the failure's text shows")
	mustCall(t, admin, http.MethodPut, "/debug/faults/keyword", map[string]bool{"fail": true}, nil)
	queries(t, admin, 6, "circuit breaker")
	b.waitFor("keyword open", `document.querySelector("#card-keyword").dataset.state === "open"`)
	b.check("the warning ends with the trip", `document.querySelector("#card-keyword .warning").hidden`)
	b.check("keyword's failure", `/error: backend unavailable/.test(document.querySelector("#card-keyword .last-failure")?.textContent ?? "")`)
	if order := cardOrder(b); len(order) == 0 || order[0] != "keyword" {
		t.Errorf("card order %v, want the open keyword first", order)
	}
	if title := jsEval[string](b, `document.title`); !strings.HasPrefix(title, "✖") || !strings.Contains(title, "keyword open") {
		t.Errorf("title %q with keyword open", title)
	}
	b.check("the icon says so", `document.getElementById("favicon").getAttribute("href") === "favicon-bad.svg"`)
	if n := jsEval[int](b, `document.querySelectorAll("#card-vector .last-failure:not([hidden])").length`); n != 0 {
		t.Errorf("vector, which never failed, shows a last failure: %q", pageText(b, "#card-vector .last-failure"))
	}
	var srcs sourcesAnswers
	mustCall(t, admin, http.MethodGet, "/v1/status/sources", nil, &srcs)
	if srcs.Answers.Partial < 6 || srcs.Answers.Degraded < 6 || srcs.Answers.PartialShare <= 0 {
		t.Errorf("GET /v1/status/sources answers %+v of %d queries: want the failing keyword's queries partial and degraded", srcs.Answers, srcs.Queries)
	}
	b.check("impact", `/([1-9]\d*)% partial/.test(document.getElementById("impact").textContent)`)
	if lvl := jsEval[string](b, `document.getElementById("impact").dataset.level`); lvl != "warn" && lvl != "bad" {
		t.Errorf("impact level %q with partial answers", lvl)
	}

	t.Log("vector hangs: a timeout, which reads unlike keyword's errors; queries fail")
	mustCall(t, admin, http.MethodPut, "/debug/faults/vector", map[string]bool{"hang": true}, nil)
	if codes := queries(t, admin, 2, "circuit breaker"); !slices.Contains(codes, http.StatusServiceUnavailable) {
		t.Fatalf("with keyword open and vector hung the queries answered %v", codes)
	}
	b.check("vector's timeout", `/timeout: deadline of \d+ms exceeded/.test(document.querySelector("#card-vector .last-failure")?.textContent ?? "")`)
	b.check("failed answers", `/[1-9]\d*% failed/.test(document.getElementById("impact").textContent)`)
	// The history, read every 10 s, charts it too (docs/img/console.png).
	b.check("the history charts the failures", `document.querySelector('[data-chart="impact"] rect.c-bad') !== null`)
	b.screenshot("impact")

	t.Log("a tenant key sees its own tenant's answers and failures only")
	var mine sourcesAnswers
	mustCall(t, acme, http.MethodGet, "/v1/status/sources", nil, &mine)
	if mine.Queries != 0 || mine.Answers.Partial != 0 || len(mine.Failures) != 0 {
		t.Errorf("acme's key sees another tenant's queries: %+v", mine)
	}
	b.checkExceptions()
}

// TestConsoleChartsTimeAndEvents is issue 30 item 6: history charts draw
// lines as lines (D: `.c-warn{fill}` overrode `.s-line{fill:none}` and
// filled them as wedges), with a time axis, values on hover and the
// timeline's events as markers (G), and a chart of the answers users got.
func TestConsoleChartsTimeAndEvents(t *testing.T) {
	b := newBrowser(t)
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, ""))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	loadDemo(t, admin)
	queries(t, admin, 10, "retrieval fusion")
	mustCall(t, admin, http.MethodPost, "/v1/status/breakers/keyword/force-open", map[string]string{"reason": "reindex"}, nil)
	queries(t, admin, 4, "circuit breaker")

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(adminKey, "console-admin (admin)")
	b.waitFor("charts", `document.querySelector('[data-chart="vector-latency"] path') && document.querySelector('[data-chart="keyword-breaker"] rect')`)

	t.Log("lines are not filled")
	if fills := jsEval[[]string](b, `[...new Set([...document.querySelectorAll("#history path.s-line")].map(p => getComputedStyle(p).fill))]`); len(fills) == 0 || !slices.Equal(fills, []string{"none"}) {
		t.Errorf("line fills %v, want none", fills)
	}

	t.Log("a time axis")
	ticks := jsEval[[]string](b, `[...document.querySelectorAll('[data-chart="requests"] .axis span')].map(s => s.textContent)`)
	if len(ticks) < 2 {
		t.Errorf("time axis of the requests chart: %q, want at least two clock times", ticks)
	}
	for _, tk := range ticks {
		if !regexp.MustCompile(`^\d\d:\d\d(:\d\d)?$`).MatchString(tk) {
			t.Errorf("tick %q is not a clock time", tk)
		}
	}

	t.Log("event markers")
	b.check("markers", `document.querySelectorAll('[data-chart="keyword-breaker"] .marker[data-source="keyword"]').length > 0`)
	marker := jsEval[string](b, `document.querySelector('[data-chart="keyword-breaker"] .marker[data-source="keyword"]')?.textContent ?? ""`)
	if !strings.Contains(marker, "forced by console-admin") {
		t.Errorf("keyword's marker %q does not name the forced trip", marker)
	}
	if n := jsEval[int](b, `document.querySelectorAll('[data-chart="vector-breaker"] .marker[data-source="keyword"]').length`); n != 0 {
		t.Errorf("vector's chart shows %d markers of keyword's breaker", n)
	}

	t.Log("values on hover")
	b.do("scroll to the chart", chromedp.ScrollIntoView(chromedp.CSS(`[data-chart="requests"]`)))
	r := jsEval[map[string]float64](b, `(() => { const r = document.querySelector('[data-chart="requests"] svg').getBoundingClientRect();
		return {x: r.right - 3, y: r.top + r.height / 2}; })()`)
	b.do("hover the newest step", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r["x"], r["y"]))
	b.check("readout", `document.querySelector('[data-chart="requests"] .readout')?.textContent !== ""`)
	readout := pageText(b, `[data-chart="requests"] .readout`)
	if !regexp.MustCompile(`^\d\d:\d\d:\d\d: \d+ requests( · .+)*$`).MatchString(readout) {
		t.Errorf("readout %q, want the step's time and value", readout)
	}

	t.Log("what users got, per step")
	b.check("impact chart", `document.querySelector('[data-chart="impact"] path, [data-chart="impact"] rect')`)
	b.screenshot("charts")
	b.checkExceptions()
}

// TestConsoleReasonsTenantsAndKeys is issue 30 item 6: the Reason box of
// force-open, force-close and a hold's release is recorded (D: typed and
// lost) and refused with invisible characters as a hold's is; a tenant
// key reads a hold without a dangling "by" and a false "(no reason
// given)" (D); Forget key and a key change clear the previous answer (D);
// at 390 px no word of the stores table breaks in the middle (D).
func TestConsoleReasonsTenantsAndKeys(t *testing.T) {
	b := newBrowser(t)
	srv := startRagd(t, incidentConfig(t, t.TempDir(), "127.0.0.1:0", false, ""))
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	loadDemo(t, admin)
	mustCall(t, admin, http.MethodPost, "/v1/status/breakers/vector/hold", map[string]string{"reason": "pg 16 upgrade"}, nil)

	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(adminKey, "console-admin (admin)")
	b.waitFor("cards", `document.querySelector("#card-keyword")?.dataset.state === "closed"`)

	t.Log("the reason of a force-open is recorded")
	b.do("force open keyword", chromedp.Click(chromedp.CSS(`#card-keyword button[aria-label="Force open keyword breaker"]`)))
	b.confirm("reindex after the bleve upgrade")
	b.check("the reason on the timeline", `[...document.querySelectorAll('#events li[data-source="keyword"]')].some(li =>
		li.textContent.includes("forced by console-admin: reindex after the bleve upgrade"))`)

	t.Log("a reason with a bidi override is refused, and the breaker stays open")
	b.do("force close keyword", chromedp.Click(chromedp.CSS(`#card-keyword button[aria-label="Force close keyword breaker"]`)))
	b.waitFor("confirmation dialog", `document.getElementById("confirm").open`)
	// Set, not typed: key events cannot carry U+202E.
	jsEval[bool](b, `(document.getElementById("confirm-reason").value = "done\u202egnirpmoc") !== ""`)
	b.do("confirm", chromedp.Click(chromedp.CSS("#confirm-ok")))
	b.check("refused", `document.getElementById("action-status").classList.contains("error") &&
		document.getElementById("action-status").textContent.includes("reason")`)
	if st := jsEval[string](b, `document.querySelector("#card-keyword").dataset.state`); st != "open" {
		t.Errorf("keyword is %s after a refused force-close", st)
	} else {
		b.do("force close keyword", chromedp.Click(chromedp.CSS(`#card-keyword button[aria-label="Force close keyword breaker"]`)))
		b.confirm("bleve answers again")
		b.waitFor("closed", `document.querySelector("#card-keyword").dataset.state === "closed"`)
		b.check("the release's reason", `[...document.querySelectorAll('#events li[data-source="keyword"]')].some(li =>
			li.textContent.includes("open → closed (forced by console-admin: bleve answers again"))`)
	}

	t.Log("Forget key clears the answer on screen")
	b.do("run a query", chromedp.SendKeys(chromedp.CSS("#q-text"), "circuit breaker"), chromedp.Click(chromedp.CSS("#run-query")))
	b.waitFor("hits", `document.querySelectorAll("#hits .hit[data-id]").length > 0`)
	b.do("forget the key", chromedp.Click(chromedp.CSS("#forget-key")))
	b.check("answer cleared", `document.getElementById("query-result").hidden && document.querySelectorAll("#hits li").length === 0 &&
		document.getElementById("q-raw").textContent === "" && document.getElementById("query-status").textContent === ""`)

	t.Log("a tenant key reads the hold")
	b.useKey(tenantKey, "acme-reader (query, tenant acme)")
	b.waitFor("held", `document.querySelector("#card-vector")?.dataset.state === "held"`)
	note := pageText(b, "#card-vector .held-note")
	if strings.Contains(note, "by  since") || strings.Contains(note, "by since") || strings.Contains(note, "no reason given") ||
		!regexp.MustCompile(`^Held open for maintenance since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`).MatchString(note) ||
		!strings.Contains(note, "not shown to keys bound to a tenant") {
		t.Errorf("hold note for a tenant key: %q", note)
	}
	if strings.Contains(note, "pg 16 upgrade") || strings.Contains(note, "console-admin") {
		t.Errorf("a tenant key reads the operator's name or note: %q", note)
	}
	b.screenshot("tenant-hold")

	t.Log("a new key clears the answer too")
	b.do("run a query", chromedp.Click(chromedp.CSS("#run-query")))
	b.waitFor("an answer (acme has no documents)", `!document.getElementById("query-result").hidden && document.querySelectorAll("#hits li").length > 0`)
	b.useKey(adminKey, "console-admin (admin)")
	b.check("answer cleared", `document.getElementById("query-result").hidden && document.querySelectorAll("#hits li").length === 0`)

	t.Log("the reason of a hold's release is recorded")
	b.waitFor("held", `document.querySelector("#card-vector")?.dataset.state === "held"`)
	b.do("release vector", chromedp.Click(chromedp.CSS(`#card-vector button[aria-label="Release hold of vector breaker"]`)))
	b.confirm("pg 16 is up")
	b.waitFor("released", `document.querySelector("#card-vector").dataset.state === "closed"`)
	b.check("the release's reason", `[...document.querySelectorAll('#events li[data-source="vector"]')].some(li =>
		li.dataset.to === "closed" && li.textContent.includes("forced by console-admin: pg 16 is up; released the hold of console-admin"))`)

	t.Log("at 390 px the stores table breaks between words")
	b.do("390 px", chromedp.EmulateViewport(390, 844))
	b.waitFor("stores", `document.querySelectorAll("#store-table tbody tr").length === 3`)
	b.do("scroll to the stores", chromedp.ScrollIntoView(chromedp.CSS("#stores")))
	broken := jsEval[[]string](b, `(() => {
		const out = [];
		for (const cell of document.querySelectorAll("#store-table th, #store-table td")) {
			const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
			for (let n = walker.nextNode(); n; n = walker.nextNode()) {
				for (const m of n.data.matchAll(/\S+/g)) {
					const r = document.createRange();
					r.setStart(n, m.index);
					r.setEnd(n, m.index + m[0].length);
					const lines = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
					if (lines.size > 1) out.push(m[0]);
				}
			}
		}
		return out; })()`)
	if len(broken) > 0 {
		t.Errorf("words broken across lines in the stores table at 390 px: %q", broken)
	}
	if w := jsEval[string](b, `document.scrollingElement.scrollWidth + "/" + window.innerWidth`); w != "390/390" {
		t.Errorf("page width/viewport %s: the page scrolls sideways", w)
	}
	b.screenshot("stores-390")
	b.checkExceptions()
}

// TestConsoleHoldAcrossRestart is issue 30 item 6 (D): a maintenance hold
// kept across a restart keeps its start — the card, the API and the
// release's "was open" count from when it was placed, not from the
// restart — and restoring it is no new trip.
func TestConsoleHoldAcrossRestart(t *testing.T) {
	b := newBrowser(t)
	data := t.TempDir()
	srv := startRagd(t, incidentConfig(t, data, "127.0.0.1:0", true, ""))
	addr := srv.addr
	c := newClient(addr, "")
	t.Cleanup(c.close)

	b.do("open the console", chromedp.Navigate("http://"+addr+"/ui/"))
	b.waitFor("cards", `document.querySelector("#card-keyword")?.dataset.state === "closed"`)
	placed := time.Now()
	mustCall(t, c, http.MethodPost, "/v1/status/breakers/keyword/hold", map[string]string{"reason": "bleve reindex"}, nil)
	b.waitFor("held", `document.querySelector("#card-keyword").dataset.state === "held"`)
	held := breakerRow(b, "keyword")
	b.do("hold a while", chromedp.Sleep(4*time.Second))

	srv.stop(t)
	startRagd(t, incidentConfig(t, data, addr, true, ""))
	b.waitFor("live again, still held", `!document.body.dataset.stale && document.querySelector("#card-keyword")?.dataset.state === "held" &&
		[...document.querySelectorAll('#events li')].some(li => li.textContent.includes("ragd started") && li.dataset.seq > 3)`)

	var br struct {
		Breakers []struct {
			Name        string    `json:"name"`
			OpenedTotal int       `json:"opened_total"`
			Since       time.Time `json:"since"`
			Hold        *struct {
				Since time.Time `json:"since"`
			} `json:"hold"`
		} `json:"breakers"`
	}
	mustCall(t, c, http.MethodGet, "/v1/status/breakers", nil, &br)
	i := slices.IndexFunc(br.Breakers, func(s struct {
		Name        string    `json:"name"`
		OpenedTotal int       `json:"opened_total"`
		Since       time.Time `json:"since"`
		Hold        *struct {
			Since time.Time `json:"since"`
		} `json:"hold"`
	}) bool {
		return s.Name == "keyword"
	})
	if i < 0 || br.Breakers[i].Hold == nil {
		t.Fatalf("keyword after the restart: %+v", br.Breakers)
	}
	k := br.Breakers[i]
	if k.OpenedTotal != 0 {
		t.Errorf("restoring the hold counted a trip: opened_total %d", k.OpenedTotal)
	}
	if !k.Since.Equal(k.Hold.Since) {
		t.Errorf("keyword open since %v, its hold since %v: the restored hold's state starts at the restart", k.Since, k.Hold.Since)
	}
	if after := breakerRow(b, "keyword"); after != held || !strings.HasPrefix(held, "open since ") {
		t.Errorf("the card's breaker row reads %q after the restart, %q before it: want the hold's start", after, held)
	}
	restored := jsEval[[]string](b, `[...document.querySelectorAll('#events li[data-source="keyword"]')].map(li => li.textContent)`)
	if len(restored) == 0 || strings.Contains(restored[0], "trip #") || !strings.Contains(restored[0], "restored") {
		t.Errorf("the restore on the timeline: %q, want it named a restored hold, not a trip", restored)
	}

	mustCall(t, c, http.MethodPost, "/v1/status/breakers/keyword/force-close", nil, nil)
	lasted := time.Since(placed)
	b.waitFor("released", `[...document.querySelectorAll('#events li[data-source="keyword"][data-to="closed"]')].length > 0`)
	rel := jsEval[string](b, `document.querySelector('#events li[data-source="keyword"][data-to="closed"]').textContent`)
	m := regexp.MustCompile(`was open (\d+) s`).FindStringSubmatch(rel)
	if m == nil {
		t.Fatalf("the release %q says not how long the hold lasted", rel)
	}
	if s, _ := strconv.Atoi(m[1]); time.Duration(s)*time.Second < lasted-2*time.Second || time.Duration(s)*time.Second > lasted+time.Second {
		t.Errorf("the release says the hold lasted %s s; it was placed %s ago", m[1], lasted.Round(time.Second))
	}
	b.screenshot("released-after-restart")
	b.checkExceptions()
}

// breakerRow is the text of a card's "Breaker" row.
func breakerRow(b *browser, name string) string {
	b.t.Helper()
	return jsEval[string](b, `[...document.querySelectorAll("#card-`+name+` dt")].find(d => d.textContent === "Breaker")?.nextElementSibling.textContent ?? ""`)
}
