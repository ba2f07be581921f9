// ragd operator console. Plain JavaScript, no dependencies, no storage:
// the API key lives in the variable apiKey only, for as long as the tab.
"use strict";
(() => {
  const POLL_MS = 2000;
  // Card order; names the API reports beyond these follow alphabetically.
  const ORDER = ["vector", "keyword", "graph", "graph_expand", "embedder"];
  // Query sources with no breaker of their own, and the breaker guarding them.
  const GUARDED_BY = { graph_expand: "graph" };
  const QUERY_SOURCES = ["vector", "keyword", "graph", "graph_expand"];
  const MAX_EVENTS = 200;

  let apiKey = ""; // never written to storage or a cookie
  let authOff = false; // a request without a key succeeded
  let lastEvent = 0;
  let timer = 0;
  let generation = 0; // of refresh calls
  const cards = new Map(); // source name -> card elements
  const retryAt = new Map(); // breaker name -> epoch ms it admits a trial

  const $ = (id) => document.getElementById(id);

  // el builds an element; children are nodes or strings (set as text, never
  // parsed as HTML).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function badge(value) {
    return el("span", { class: "badge", "data-v": value, text: String(value).replace(/_/g, " ") });
  }

  // request calls the API and returns {status, data}; it throws only when
  // the server cannot be reached.
  async function request(method, path, body) {
    const headers = { Accept: "application/json" };
    if (apiKey) headers.Authorization = "Bearer " + apiKey;
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    return { status: resp.status, data };
  }

  function errorText(r) {
    const e = r.data && r.data.error;
    if (!e) return "HTTP " + r.status;
    return e.message + " (" + e.code + (e.request_id ? ", request " + e.request_id : "") + ")";
  }

  async function get(path, acceptDown) {
    const r = await request("GET", path);
    if (r.status === 200 || (acceptDown && r.status === 503 && r.data && !r.data.error)) return r.data;
    const err = new Error(errorText(r));
    err.status = r.status;
    throw err;
  }

  const fmtMS = (ms) => (ms === undefined || ms === null ? "–" : ms < 10 ? ms.toFixed(2) + " ms" : Math.round(ms) + " ms");
  const fmtPct = (x) => Math.round(x * 100) + "%";
  const fmtSecs = (ms) => Math.max(0, Math.ceil(ms / 1000)) + " s";

  // ---- key -----------------------------------------------------------------

  function setKeyStatus() {
    let msg;
    if (apiKey) msg = "Using the key you entered (held in memory for this tab).";
    else if (authOff) msg = "This server has authentication off: every request acts as the anonymous admin.";
    else msg = "Enter an API key to see the server.";
    $("key-status").textContent = msg;
    const canAct = Boolean(apiKey) || authOff;
    for (const c of cards.values()) {
      for (const b of c.actions) {
        b.disabled = !canAct;
        b.title = canAct ? "" : "needs an admin key";
      }
    }
  }

  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const typed = $("api-key").value.trim();
    if (typed) apiKey = typed; // an empty field keeps the key in use
    $("api-key").value = "";
    setKeyStatus();
    refresh();
  });
  $("forget-key").addEventListener("click", () => {
    apiKey = "";
    authOff = false;
    $("api-key").value = "";
    setKeyStatus();
    refresh();
  });

  // ---- cards ---------------------------------------------------------------

  function sortNames(names) {
    const rank = (n) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
    return [...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }

  function row(dl, label) {
    const dd = el("dd");
    dl.append(el("dt", { text: label }), dd);
    return dd;
  }

  function makeCard(name) {
    const id = "card-" + name.replace(/[^a-z0-9_-]/gi, "_");
    const state = el("span", { class: "badge" });
    const root = el("article", { class: "card", id, "aria-labelledby": id + "-h", "data-source": name },
      el("h3", { id: id + "-h" }, el("span", { text: name }), state));
    const dl = el("dl");
    const c = { root, state, actions: [] };
    c.guard = row(dl, "Guarded by");
    c.health = row(dl, "Health");
    c.failures = row(dl, "Consecutive failures");
    c.trips = row(dl, "Trips");
    c.retry = row(dl, "Retry in");
    c.retry.classList.add("countdown");
    c.latency = row(dl, "Latency p50 / p99");
    c.share = row(dl, "Answered");
    c.statuses = row(dl, "Recent statuses");
    c.lag = row(dl, "Index lag");
    root.append(dl);
    cards.set(name, c);
    return c;
  }

  function addActions(c, name) {
    if (c.actions.length) return;
    const open = el("button", { type: "button", class: "danger", "aria-label": "Force open " + name + " breaker", text: "Force open" });
    const close = el("button", { type: "button", "aria-label": "Force close " + name + " breaker", text: "Force close" });
    open.addEventListener("click", () => force(name, "force-open"));
    close.addEventListener("click", () => force(name, "force-close"));
    c.actions = [open, close];
    c.root.append(el("div", { class: "actions" }, open, close));
  }

  function show(dd, text) {
    dd.textContent = text;
    dd.hidden = text === null;
    dd.previousSibling.hidden = text === null;
  }

  function renderCards(breakerList, health, stats) {
    const snaps = new Map(breakerList.map((b) => [b.name, b]));
    const comps = health.components || {};
    const src = new Map((stats.sources || []).map((s) => [s.name, s]));
    const names = new Set([...snaps.keys(), ...src.keys()]);
    for (const n of Object.keys(comps)) if (!n.startsWith("breaker:")) names.add(n);
    for (const [n, guard] of Object.entries(GUARDED_BY)) if (names.has(guard)) names.add(n);

    const container = $("cards");
    const now = Date.now();
    for (const name of sortNames(names)) {
      const c = cards.get(name) || makeCard(name);
      container.append(c.root); // moves it into order; focus is kept
      const b = snaps.get(name);
      const comp = comps[name];
      const s = src.get(name);
      const guard = GUARDED_BY[name];

      // A guarded source shows its guard's breaker state.
      const gb = guard ? snaps.get(guard) : undefined;
      const state = b ? b.state : comp ? comp.status : gb ? gb.state : "unknown";
      c.root.dataset.state = state;
      c.state.dataset.v = state;
      c.state.textContent = state.replace(/_/g, " ");
      show(c.health, comp ? comp.status + (comp.detail ? " — " + comp.detail : "") : null);
      show(c.guard, guard ? "the " + guard + " breaker" : null);
      show(c.failures, b ? b.failure_count + " / " + b.failure_threshold : null);
      show(c.trips, b ? String(b.opened_total) : null);
      if (b && b.state !== "closed" && b.retry_in_ms > 0) retryAt.set(name, now + b.retry_in_ms);
      else retryAt.delete(name);
      show(c.retry, b ? "" : null);
      show(c.latency, s && s.calls ? fmtMS(s.p50_ms) + " / " + fmtMS(s.p99_ms) : "no calls");
      show(c.share, s ? fmtPct(s.share) + " of " + stats.queries + " queries" : "no queries");
      show(c.statuses, s ? Object.entries(s.statuses).sort().map(([k, v]) => k + " " + v).join(", ") : null);
      // Derived-store lag, when the health endpoint reports one.
      show(c.lag, comp && comp.lag !== undefined ? lagText(comp.lag) : null);
      if (b) addActions(c, name);
    }
    tick();
    setKeyStatus();
  }

  function lagText(lag) {
    if (lag === null || typeof lag !== "object") return String(lag);
    return Object.entries(lag).map(([k, v]) => k.replace(/_/g, " ") + " " + v).join(", ");
  }

  // tick updates the retry countdowns once a second between polls.
  function tick() {
    const now = Date.now();
    for (const [name, c] of cards) {
      if (c.retry.hidden) continue;
      const at = retryAt.get(name);
      c.retry.textContent = at === undefined ? "–" : at > now ? fmtSecs(at - now) : "now (next call is a trial)";
    }
  }
  setInterval(tick, 1000);

  function renderOverall(health) {
    const o = $("overall");
    o.replaceChildren("Overall: ", badge(health.status),
      " · usable sources: " + ((health.usable || []).join(", ") || "none"));
  }

  async function force(name, action) {
    const status = $("action-status");
    status.className = "";
    status.textContent = (action === "force-open" ? "Opening " : "Closing ") + name + "…";
    try {
      const r = await request("POST", "/v1/status/breakers/" + encodeURIComponent(name) + "/" + action);
      if (r.status !== 200) {
        status.className = "error";
        status.textContent = "Could not " + action.replace("-", " ") + " " + name + ": " + errorText(r);
        return;
      }
      status.textContent = name + " breaker is now " + r.data.breaker.state.replace(/_/g, " ") + ".";
    } catch (e) {
      status.className = "error";
      status.textContent = "Server unreachable: " + e.message;
    }
    refresh();
  }

  // ---- timeline --------------------------------------------------------------

  function describe(e) {
    if (e.kind === "breaker" && e.breaker) {
      const b = e.breaker;
      let s = b.from.replace(/_/g, " ") + " → " + b.to.replace(/_/g, " ") + " (" + b.reason.replace(/_/g, " ");
      if (b.failures) s += ", " + b.failures + " failures";
      if (b.to === "open") s += ", trip #" + b.opened_total;
      if (b.open_for_ms) s += ", open for " + fmtSecs(b.open_for_ms);
      return s + ")";
    }
    if (e.kind === "burst" && e.burst) {
      const b = e.burst;
      if (b.phase === "started") return b.status + " burst started (" + b.count + " calls in quick succession)";
      return b.status + " burst ended after " + b.count + " calls over " + fmtSecs(b.duration_ms || 0);
    }
    return e.kind;
  }

  async function pollEvents() {
    const page = await get("/v1/status/events?after=" + lastEvent + "&limit=100");
    const list = $("events");
    if (page.last < lastEvent) list.replaceChildren(); // the server restarted
    lastEvent = page.last;
    if (page.dropped) $("timeline-note").textContent = "Some older events were dropped from the server's ring.";
    for (const e of page.events) {
      const at = new Date(e.at);
      list.prepend(el("li", { "data-kind": e.kind, "data-source": e.source },
        el("time", { datetime: e.at, text: at.toLocaleTimeString() }),
        el("span", { class: "src", text: e.source }),
        describe(e)));
    }
    while (list.children.length > MAX_EVENTS) list.lastChild.remove();
    if (!list.children.length) list.append(el("li", { class: "empty", text: "No events yet." }));
    else list.querySelector(".empty")?.remove();
  }

  // ---- polling -----------------------------------------------------------------

  // refresh polls once and schedules the next poll; a refresh started while
  // one is in flight (a new key) supersedes it, so one poll loop runs.
  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    const again = () => { if (mine === generation) timer = setTimeout(refresh, POLL_MS); };
    try {
      const [br, health, stats] = await Promise.all([
        get("/v1/status/breakers"), get("/v1/status/health", true), get("/v1/status/sources"),
      ]);
      if (!apiKey) authOff = true;
      renderOverall(health);
      renderCards(br.breakers || [], health, stats);
      await pollEvents();
      $("updated").textContent = "Last update " + new Date().toLocaleTimeString() + ".";
    } catch (e) {
      const o = $("overall");
      o.className = "overall error";
      o.textContent = e.status === 401 ? "This server needs an API key." : e.status === 403 ? "This key may not read the status." : "Error: " + e.message;
      if (e.status === 401) authOff = false;
      setKeyStatus();
      again();
      return;
    }
    $("overall").className = "overall";
    again();
  }

  // ---- query playground ----------------------------------------------------------

  function buildSourceControls() {
    const box = $("q-sources");
    for (const name of QUERY_SOURCES) {
      const on = el("input", { type: "checkbox", id: "q-on-" + name, checked: true });
      const w = el("input", { type: "number", id: "q-w-" + name, min: "0", max: "100", step: "0.05", inputmode: "decimal" });
      box.append(el("div", { class: "src" },
        on, el("label", { for: "q-on-" + name, text: name }),
        el("label", { for: "q-w-" + name, text: "weight", class: "hint" }), w));
    }
  }

  function parseFilter(text) {
    const f = {};
    for (const part of text.split(",")) {
      const p = part.trim();
      if (!p) continue;
      const i = p.indexOf("=");
      if (i <= 0) throw new Error("filter \"" + p + "\" is not key=value");
      const k = p.slice(0, i).trim();
      (f[k] = f[k] || []).push(p.slice(i + 1).trim());
    }
    return f;
  }

  function buildQuery() {
    const q = { text: $("q-text").value, explain: true, limit: Number($("q-limit").value) || 10 };
    const mode = $("q-fusion").value;
    if (mode) q.fusion = { mode };
    const tenant = $("q-tenant").value.trim();
    if (tenant) q.tenant = tenant;
    const filter = parseFilter($("q-filter").value);
    if (Object.keys(filter).length) q.filter = filter;
    q.sources = {};
    for (const name of QUERY_SOURCES) {
      const o = { enabled: $("q-on-" + name).checked };
      const w = $("q-w-" + name).value;
      if (w !== "") o.weight = Number(w);
      q.sources[name] = o;
    }
    return q;
  }

  function renderSources(tbody, sources) {
    tbody.replaceChildren();
    for (const name of sortNames(Object.keys(sources || {}))) {
      const s = sources[name];
      let detail = s.error || "";
      if (s.retry_in_ms) detail += (detail ? "; " : "") + "retry in " + fmtSecs(s.retry_in_ms);
      tbody.append(el("tr", { "data-source": name, "data-status": s.status },
        el("th", { scope: "row", text: name }), el("td", {}, badge(s.status)),
        el("td", { class: "num", text: fmtMS(s.took_ms) }), el("td", { class: "num", text: String(s.returned ?? "") }),
        el("td", { text: detail })));
    }
  }

  function renderHits(res) {
    const list = $("hits");
    list.replaceChildren();
    const order = sortNames(Object.keys(res.fusion && res.fusion.weights ? res.fusion.weights : {}));
    for (const h of res.hits) {
      const title = h.document && h.document.title ? h.document.title : "(not hydrated)";
      const li = el("li", { class: "hit", "data-id": h.id },
        el("header", {}, el("span", { class: "rank", text: "#" + h.rank }), el("span", { text: title }),
          el("span", { class: "id", text: h.id }), el("span", { class: "score", text: "score " + h.score.toPrecision(4) })));
      const parts = el("div", { class: "parts", role: "list", "aria-label": "per-source contributions to " + h.id });
      const explain = h.explain || {};
      for (const name of sortNames(new Set([...order, ...Object.keys(explain)]))) {
        if (!(name in explain)) continue;
        const p = explain[name];
        const item = el("div", { role: "listitem", class: "part" });
        item.append(el("span", { text: name }));
        if (p) {
          const pct = h.score > 0 ? Math.max(0, Math.min(100, (p.contribution / h.score) * 100)) : 0;
          const bar = el("div", { class: "bar", "data-source": name, role: "img",
            "aria-label": name + " contributed " + Math.round(pct) + "% of the score" });
          bar.style.width = pct.toFixed(1) + "%";
          item.append(el("div", { class: "track" }, bar),
            el("span", { class: "detail", text: "rank " + p.rank + " · raw " + p.raw_score.toPrecision(3) + " · +" + p.contribution.toPrecision(3) }));
        } else {
          item.append(el("div", { class: "track" }), el("span", { class: "absent", text: "not returned" }));
        }
        parts.append(item);
      }
      li.append(parts);
      list.append(li);
    }
    if (!res.hits.length) list.append(el("li", { class: "hit", text: "No hits." }));
  }

  $("query-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const status = $("query-status");
    status.className = "";
    let q;
    try { q = buildQuery(); } catch (e) { status.className = "error"; status.textContent = e.message; return; }
    status.textContent = "Running…";
    $("run-query").disabled = true;
    try {
      const r = await request("POST", "/v1/query", q);
      const result = $("query-result");
      if (r.status !== 200) {
        status.className = "error";
        status.textContent = "Query failed: " + errorText(r);
        const detail = r.data && r.data.error && r.data.error.sources;
        result.hidden = !detail;
        if (detail) { renderSources($("query-sources").tBodies[0], detail); $("hits").replaceChildren(); }
        return;
      }
      const res = r.data;
      let msg = res.hits.length + " of " + res.total + " hits in " + fmtMS(res.took_ms) + ", fused with " + res.fusion.mode;
      if (res.partial) msg += " · partial answer";
      if (res.degraded) msg += " · degraded";
      status.textContent = msg + ".";
      renderSources($("query-sources").tBodies[0], res.sources);
      renderHits(res);
      result.hidden = false;
    } catch (e) {
      status.className = "error";
      status.textContent = "Server unreachable: " + e.message;
    } finally {
      $("run-query").disabled = false;
    }
  });

  buildSourceControls();
  setKeyStatus();
  refresh();
})();
