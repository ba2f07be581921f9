// ragd operator console. Plain JavaScript, no dependencies, no storage:
// the API key lives in the variable apiKey only, for as long as the tab.
"use strict";
(() => {
  const POLL_MS = 2000;
  const HISTORY_EVERY = 5; // polls between history reads (10 s, one step)
  const STALE_MS = 2 * POLL_MS + 1000; // older than two polls: stale
  const MESSAGE_MS = 10000; // action messages clear after this
  // Card order; names the API reports beyond these follow alphabetically.
  const ORDER = ["vector", "keyword", "graph", "graph_expand", "embedder"];
  // Query sources with no breaker of their own, and the breaker guarding them.
  const GUARDED_BY = { graph_expand: "graph" };
  const QUERY_SOURCES = ["vector", "keyword", "graph", "graph_expand"];
  const MAX_EVENTS = 300;
  const WARN_SHARE = 0.8; // p99 at this share of the timeout: warn
  const TITLE = "ragd console";
  // Card order by severity: what needs the operator first.
  const SEVERITY = { open: 0, down: 0, half_open: 1, degraded: 1, held: 2, warn: 3, closed: 4, up: 4, unknown: 4, disabled: 5 };

  let apiKey = ""; // never written to storage or a cookie
  let authOff = false; // a request without a key succeeded
  let server = null; // the last GET /v1/status/server
  let instance = ""; // its instance id
  let lastEvent = 0; // seq of the newest event shown
  let lastOK = 0; // epoch ms of the last complete poll
  let polls = 0;
  let timer = 0;
  let generation = 0; // of refresh calls
  let history = null;
  let historyDenied = false;
  let messageTimer = 0;
  let queryGen = 0; // of playground answers: a cleared one is not shown
  let impact = null; // the last poll's answers ({queries, answers})
  let timeline = []; // the events shown, oldest first: {seq, at, kind, source, to, text}
  const cards = new Map(); // source name -> card elements
  const retryAt = new Map(); // breaker name -> epoch ms it admits a trial

  const $ = (id) => document.getElementById(id);

  // el builds an element; children are nodes or strings (set as text, never
  // parsed as HTML).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
    return e;
  }
  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.setAttribute("class", v);
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    return e;
  }
  // The SVG namespace: a name, never fetched (split so that the asset test,
  // which refuses any URL in the console, need not except it).
  const SVG = "http:" + "//www.w3.org/2000/svg";
  function svg(tag, attrs) { return setAttrs(document.createElementNS(SVG, tag), attrs); }

  const human = (s) => String(s).replace(/_/g, " ");
  function badge(value) {
    return el("span", { class: "badge", "data-v": value, text: human(value) });
  }

  // ---- formatting -------------------------------------------------------------

  const pad = (n) => String(n).padStart(2, "0");
  // The zone every time is shown in: the browser's, as an offset.
  function zone(d) {
    const off = -d.getTimezoneOffset();
    if (off === 0) return "UTC";
    return "UTC" + (off > 0 ? "+" : "−") + pad(Math.floor(Math.abs(off) / 60)) + ":" + pad(Math.abs(off) % 60);
  }
  const fmtDate = (d) => d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate());
  const fmtClock = (d) => pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  const fmtStamp = (d) => fmtDate(d) + " " + fmtClock(d) + " " + zone(d);
  const fmtMS = (ms) => (ms === undefined || ms === null ? "–" : ms < 10 ? ms.toFixed(2) + " ms" : Math.round(ms) + " ms");
  const fmtPct = (x) => Math.round(x * 100) + "%";
  // fmtShare never rounds a share that is not zero down to 0%.
  const fmtShare = (x) => (x > 0 && x < 0.005 ? "<1%" : fmtPct(x));
  const fmtHM = (d) => pad(d.getHours()) + ":" + pad(d.getMinutes());
  const fmtSecs = (ms) => Math.max(0, Math.ceil(ms / 1000)) + " s";
  function fmtDur(ms) {
    let s = Math.round(ms / 1000);
    if (s < 60) return s + " s";
    const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
    s %= 60;
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + m + " min";
    return m + " min " + s + " s";
  }

  // ---- requests -----------------------------------------------------------------

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

  // ---- key and identity -----------------------------------------------------------

  const canAct = () => Boolean(server && server.key && server.key.role === "admin" && !server.key.tenant);

  function setKeyStatus() {
    let msg;
    if (server && server.key) {
      const k = server.key;
      msg = (authOff ? "Authentication is off: acting as " : "Key: ") + k.name + " (" + k.role + (k.tenant ? ", tenant " + k.tenant : "") + ")";
      if (!canAct()) msg += k.tenant ? " · bound to a tenant: breaker actions need an admin key not bound to one" : " · read-only: breaker actions need an admin key";
    } else if (apiKey) msg = "Checking the key you entered (held in memory for this tab)…";
    else msg = "Enter an API key to see the server.";
    $("key-status").textContent = msg;
    const ok = canAct();
    for (const c of cards.values()) {
      for (const b of c.actions) {
        b.disabled = !ok || b.dataset.off === "true";
        b.title = !ok ? "needs an admin key not bound to a tenant" : b.dataset.why || "";
      }
    }
  }

  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const typed = $("api-key").value.trim();
    if (typed) {
      if (typed !== apiKey) { server = null; clearState(""); clearQuery(); }
      apiKey = typed; // an empty field keeps the key in use
    }
    $("api-key").value = "";
    setKeyStatus();
    refresh();
  });
  $("forget-key").addEventListener("click", () => {
    apiKey = "";
    authOff = false;
    server = null;
    $("api-key").value = "";
    clearState("");
    clearQuery();
    setKeyStatus();
    refresh();
  });

  // clearQuery forgets the playground's answer: it was read with a key
  // that is no longer in use (an answer still on its way is dropped too).
  function clearQuery() {
    queryGen++;
    $("query-result").hidden = true;
    $("hits").replaceChildren();
    $("query-sources").tBodies[0].replaceChildren();
    $("query-fusion").textContent = "";
    $("q-raw").textContent = "";
    $("q-curl").value = "";
    $("query-status").textContent = "";
    $("query-status").className = "";
    $("run-query").disabled = false;
  }

  // clearState forgets everything shown about the server: a new instance,
  // or a key that may not see it, must not be shown another's figures.
  function clearState(note) {
    for (const c of cards.values()) c.root.remove();
    cards.clear();
    retryAt.clear();
    lastEvent = 0;
    $("events").replaceChildren();
    $("timeline-note").textContent = note;
    history = null;
    $("history-ragd").replaceChildren();
    $("history-sources").replaceChildren();
    $("store-table").tBodies[0].replaceChildren();
    $("embedder").replaceChildren();
    $("server-line").textContent = "";
    $("faults").hidden = true;
    $("overall").textContent = "";
    timeline = [];
    impact = null;
    renderImpact();
    historyDenied = false;
    lastOK = 0;
    markStale();
  }

  function renderServer(s) {
    if (instance && s.instance !== instance) {
      clearState("The server restarted (instance " + instance + " → " + s.instance + "): the page was reset; the timeline below is read again from the server.");
    }
    instance = s.instance;
    server = s;
    $("faults").hidden = !s.debug_faults; // fault injection on: say so on every page
    const started = new Date(s.started_at);
    $("server-line").textContent = "ragd " + (s.version || "") + " · instance " + s.instance +
      " · started " + fmtStamp(started) + " · up " + fmtDur(s.uptime_s * 1000);
  }

  // ---- staleness ---------------------------------------------------------------------

  // markStale greys out everything once the last complete poll is older
  // than two polls, and says since when.
  function markStale() {
    const banner = $("stale");
    const age = Date.now() - lastOK;
    if (lastOK && age > STALE_MS) {
      document.body.dataset.stale = "true";
      banner.hidden = false;
      banner.textContent = "Not live: the server has not answered for " + fmtDur(age) + ". Everything below is as of " +
        fmtStamp(new Date(lastOK)) + " and may be out of date.";
    } else {
      delete document.body.dataset.stale;
      banner.hidden = true;
    }
    signalTrouble();
  }

  // ---- cards -------------------------------------------------------------------------

  const rank = (n) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  function sortNames(names) {
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
      el("h3", { id: id + "-h" }, el("span", {}, name, " ", el("span", { class: "stale-label", text: "stale" })), state));
    const c = { root, state, actions: [] };
    c.note = el("p", { class: "note", hidden: true });
    c.hold = el("p", { class: "held-note", hidden: true });
    c.warning = el("p", { class: "warning", role: "status", hidden: true });
    const dl = el("dl");
    c.breaker = row(dl, "Breaker");
    c.guard = row(dl, "Guarded by");
    c.health = row(dl, "Health");
    c.lastFailure = row(dl, "Last failure");
    c.lastFailure.classList.add("last-failure");
    c.failures = row(dl, "Failures");
    c.trips = row(dl, "Trips");
    c.retry = row(dl, "Retry in");
    c.retry.classList.add("countdown");
    c.limit = row(dl, "Concurrency");
    c.timeout = row(dl, "p99 vs timeout");
    c.latency = row(dl, "p50 / p99");
    c.share = row(dl, "Answered");
    c.statuses = row(dl, "Statuses, 1 min");
    c.docs = row(dl, "Documents");
    c.lag = row(dl, "Index lag");
    root.append(c.note, c.hold, c.warning, dl);
    cards.set(name, c);
    return c;
  }

  function addActions(c, name) {
    if (c.actions.length) return;
    const mk = (text, cls, label, fn) => {
      const b = el("button", { type: "button", class: cls, "aria-label": label + " " + name + " breaker", text });
      b.addEventListener("click", fn);
      c.actions.push(b);
      return b;
    };
    c.open = mk("Force open", "danger", "Force open", () => act(name, "force-open"));
    c.holdBtn = mk("Hold…", "hold", "Hold", () => act(name, "hold"));
    c.close = mk("Force close", "", "Force close", () => act(name, "force-close"));
    c.root.append(el("div", { class: "actions" }, ...c.actions));
  }

  function show(dd, content) {
    if (content === null || content === undefined) {
      dd.hidden = true;
      dd.previousSibling.hidden = true;
      return;
    }
    if (typeof content === "string") dd.textContent = content;
    else dd.replaceChildren(content);
    dd.hidden = false;
    dd.previousSibling.hidden = false;
  }

  // gauge is a labelled bar of value against max.
  function gauge(text, value, max, level) {
    const pct = max > 0 ? Math.max(0, Math.min(100, (value / max) * 100)) : 0;
    const fill = el("div", { class: "fill" });
    fill.style.width = pct.toFixed(1) + "%";
    return el("div", { class: "gauge", "data-level": level || "ok" },
      el("span", { text }), el("div", { class: "track", role: "img", "aria-label": text }, fill));
  }

  function renderCards(breakerList, health, stats) {
    const snaps = new Map(breakerList.map((b) => [b.name, b]));
    const failures = new Map((stats.failures || []).map((f) => [f.source, f]));
    const comps = health.components || {};
    const src = new Map((stats.sources || []).map((s) => [s.name, s]));
    const infos = new Map(((server && server.sources) || []).map((s) => [s.name, s]));
    const stores = new Map(((server && server.stores) || []).map((s) => [s.name, s]));
    const disabled = new Set(health.disabled || []);
    for (const s of infos.values()) if (!s.enabled) disabled.add(s.name);
    const names = new Set([...snaps.keys(), ...src.keys(), ...infos.keys()]);
    for (const n of Object.keys(comps)) if (!n.startsWith("breaker:")) names.add(n);
    for (const [n, guard] of Object.entries(GUARDED_BY)) if (names.has(guard)) names.add(n);

    const now = Date.now();
    for (const name of sortNames(names)) {
      const c = cards.get(name) || makeCard(name);
      const b = snaps.get(name);
      const comp = comps[name];
      const s = src.get(name);
      const info = infos.get(name);
      const guardName = GUARDED_BY[name];
      const gb = guardName ? snaps.get(guardName) : undefined;
      const br = b || gb; // the breaker deciding this source
      const held = br && br.hold;
      let state = br ? (held ? "held" : br.state) : comp ? comp.status : "unknown";
      if (disabled.has(name)) state = "disabled";
      c.root.dataset.state = state;
      c.state.dataset.v = state;
      c.state.textContent = human(state);

      c.note.hidden = !disabled.has(name);
      c.note.textContent = "Off by default (rag.yaml): queries leave it out unless they enable it. Not counted as usable.";
      show(c.breaker, br && (state === "disabled" || br !== b || held) ? human(br.state) + (br.since ? " since " + fmtClock(new Date(br.since)) : "") : null);
      show(c.guard, guardName ? "the " + guardName + " breaker" : null);
      c.hold.hidden = !held;
      if (held) c.hold.textContent = holdText(held, now);
      show(c.health, comp ? comp.status + (comp.detail ? " — " + comp.detail : "") : null);
      // The newest failed call, with the retriever's reason: a hang (a
      // timeout) reads unlike an error storm.
      const f = failures.get(name);
      show(c.lastFailure, f ? f.status + ": " + f.error + " · " + fmtClock(new Date(f.at)) + " (" + fmtDur(now - Date.parse(f.at)) + " ago)" : null);
      if (b) {
        const f = b.failure_count, th = b.failure_threshold;
        show(c.failures, gauge(f + " of " + th + " to trip", f, th, f >= th ? "bad" : f > 0 ? "warn" : "ok"));
      } else show(c.failures, null);
      show(c.trips, b ? String(b.opened_total) : null);
      if (b && b.state !== "closed" && !b.hold && b.retry_in_ms > 0) retryAt.set(name, now + b.retry_in_ms);
      else retryAt.delete(name);
      show(c.retry, !b || b.state === "closed" ? null : b.hold ? "never: held until released" : b.state === "half_open" ? "now: trial calls are admitted" : "");

      // Early warning: the adaptive limit against the calls in flight, the
      // p99 against the operator's timeout.
      const g = info && info.guard;
      if (g && g.limit > 0) {
        const busy = g.inflight / g.limit;
        show(c.limit, gauge(g.inflight + " in flight of limit " + g.limit + (g.shed_total ? " · " + g.shed_total + " shed" : ""),
          g.inflight, g.limit, busy >= 1 ? "bad" : busy >= WARN_SHARE ? "warn" : "ok"));
      } else show(c.limit, null);
      const p99 = s && s.calls ? s.p99_ms : null;
      let warn = "";
      if (info && info.timeout_ms > 0 && p99 !== null && p99 !== undefined) {
        const share = p99 / info.timeout_ms;
        show(c.timeout, gauge(fmtMS(p99) + " of " + info.timeout_ms + " ms", p99, info.timeout_ms, share >= 1 ? "bad" : share >= WARN_SHARE ? "warn" : "ok"));
        // A warning of what is about to happen: once the breaker is not
        // closed it has happened, and the card says so itself.
        if (share >= WARN_SHARE && (!br || br.state === "closed") && state !== "disabled") {
          warn = "p99 " + fmtMS(p99) + " is " + fmtPct(share) + " of the " + info.timeout_ms + " ms timeout: calls are about to time out.";
        }
      } else show(c.timeout, info && info.timeout_ms > 0 ? "timeout " + info.timeout_ms + " ms, no calls" : null);
      c.warning.hidden = !warn;
      c.warning.textContent = warn ? "⚠ " + warn : "";
      c.severity = SEVERITY[state] ?? SEVERITY.unknown;
      if (warn && c.severity > SEVERITY.warn) c.severity = SEVERITY.warn;
      c.trouble = c.severity <= SEVERITY.held ? name + " " + human(state) : warn ? name + " near its timeout" : "";
      show(c.latency, s && s.calls ? fmtMS(s.p50_ms) + " / " + fmtMS(s.p99_ms) : "no calls");
      show(c.share, s ? fmtPct(s.share) + " of " + stats.queries + " queries" : "no queries");
      show(c.statuses, s ? Object.entries(s.statuses).sort().map(([k, v]) => human(k) + " " + v).join(", ") : null);
      const st = stores.get(name);
      show(c.docs, st ? (st.dormant ? "not built (dormant)" : st.documents === undefined ? "unknown" : String(st.documents)) : null);
      show(c.lag, comp && comp.lag ? comp.lag.behind + " entries behind, oldest " + comp.lag.lag_seconds.toFixed(1) + " s" : null);
      if (b) {
        addActions(c, name);
        const open = b.state === "open";
        c.open.dataset.off = String(open);
        c.open.dataset.why = open ? "already open" : "";
        c.holdBtn.dataset.off = String(Boolean(b.hold));
        c.holdBtn.dataset.why = b.hold ? "already held" : "";
        c.close.textContent = b.hold ? "Release hold" : "Force close";
        c.close.setAttribute("aria-label", (b.hold ? "Release hold of " : "Force close ") + name + " breaker");
        c.close.dataset.off = String(b.state === "closed");
        c.close.dataset.why = b.state === "closed" ? "already closed" : "";
      }
    }
    for (const [name, c] of cards) if (!names.has(name)) { c.root.remove(); cards.delete(name); }
    orderCards();
    tick();
    setKeyStatus();
    signalTrouble();
  }

  // holdText describes a hold. A key bound to a tenant is not told who
  // placed it or why (the API leaves both out): the page says so rather
  // than print an empty name and "no reason given".
  function holdText(held, now) {
    const since = fmtStamp(new Date(held.since)), lasted = fmtDur(now - Date.parse(held.since));
    if (server && server.key && server.key.tenant) {
      return "Held open for maintenance since " + since + " (" + lasted + " so far): queries leave it out until an operator releases it. " +
        "Who placed the hold and why are not shown to keys bound to a tenant.";
    }
    return "Held open for maintenance" + (held.by ? " by " + held.by : "") + " since " + since +
      (held.reason ? ": " + held.reason : " (no reason given)") + ". Held " + lasted + " so far; force close releases it.";
  }

  // orderCards puts the cards in order of severity, then in the usual
  // order; it moves nothing when the order stands, and gives focus back
  // to a control a move took it from.
  function orderCards() {
    const container = $("cards");
    const want = [...cards.entries()].sort(([a, ca], [b, cb]) => ca.severity - cb.severity || rank(a) - rank(b) || a.localeCompare(b)).map(([, c]) => c.root);
    const have = [...container.children];
    if (want.length === have.length && want.every((r, i) => r === have[i])) return;
    const focused = container.contains(document.activeElement) ? document.activeElement : null;
    container.append(...want);
    if (focused && document.activeElement !== focused) focused.focus();
  }

  // signalTrouble names what is wrong in the tab's title and colours its
  // icon, so a console in a background tab still tells: ✖ for a source
  // out of queries, failed answers or a server not answering, ⚠ for a
  // source half-open, degraded, held or near its timeout, and partial
  // answers.
  function signalTrouble() {
    const bad = [], warn = [];
    for (const c of [...cards.values()].sort((a, b) => a.severity - b.severity)) {
      if (!c.trouble) continue;
      (c.severity === SEVERITY.open ? bad : warn).push(c.trouble);
    }
    const a = impact && impact.queries ? impact.answers : null;
    if (a && a.failed) bad.push(fmtShare(a.failed_share) + " of queries failed");
    else if (a && (a.partial || a.degraded)) warn.push(fmtShare(Math.max(a.partial_share, a.degraded_share)) + " of answers partial");
    if (document.body.dataset.stale) bad.unshift("not live");
    const all = [...bad, ...warn];
    const level = bad.length ? "bad" : warn.length ? "warn" : "ok";
    const list = all.slice(0, 3).join(", ") + (all.length > 3 ? " +" + (all.length - 3) : "");
    document.title = level === "ok" ? TITLE : (level === "bad" ? "✖ " : "⚠ ") + list + " — " + TITLE;
    const icon = level === "ok" ? "favicon.svg" : "favicon-" + level + ".svg";
    if ($("favicon").getAttribute("href") !== icon) $("favicon").setAttribute("href", icon);
  }

  // renderImpact is the first line of the page: what the last minute's
  // queries gave their callers (a tenant key: its tenant's queries).
  function renderImpact() {
    const p = $("impact");
    if (!impact) {
      p.textContent = "";
      p.dataset.level = "idle";
      return;
    }
    const who = server && server.key && server.key.tenant ? "Tenant " + server.key.tenant + "'s queries" : "Queries";
    const n = impact.queries, a = impact.answers || {};
    if (!n) {
      p.textContent = who + ", last minute: none.";
      p.dataset.level = "idle";
      return;
    }
    p.textContent = who + ", last minute: " + n + (n === 1 ? " query" : " queries") + " · " + fmtShare(a.partial_share) + " partial · " +
      fmtShare(a.degraded_share) + " degraded · " + fmtShare(a.failed_share) + " failed (no answer)";
    p.title = a.partial + " partial, " + a.degraded + " degraded, " + a.failed + " failed of " + n + " (a query may be partial and degraded both)";
    p.dataset.level = a.failed ? "bad" : a.partial || a.degraded ? "warn" : "ok";
  }

  // tick updates the retry countdowns once a second between polls, and
  // the staleness.
  function tick() {
    const now = Date.now();
    for (const [name, c] of cards) {
      if (c.retry.hidden || !retryAt.has(name)) continue;
      const at = retryAt.get(name);
      c.retry.textContent = at > now ? fmtSecs(at - now) : "now (the next call or probe is a trial)";
    }
    markStale();
  }
  setInterval(tick, 1000);

  function renderOverall(health) {
    const o = $("overall");
    const parts = [" · usable sources: " + ((health.usable || []).join(", ") || "none")];
    if ((health.disabled || []).length) parts.push(" · disabled by default: " + health.disabled.join(", "));
    o.replaceChildren("Overall: ", badge(health.status), ...parts);
  }

  // ---- actions -----------------------------------------------------------------------

  // Every action takes an optional reason, recorded with it (the API
  // refuses control and invisible characters, as in a hold's).
  const ACTIONS = {
    "force-open": { title: "Force open", text: (n) => "Take " + n + " out of every query now. It stays open for its cooldown, then a trial call may close it again. Queries answer from the other sources meanwhile.", ok: "Force open" },
    hold: { title: "Hold for maintenance", text: (n) => "Keep " + n + " open until someone force-closes it: no cooldown, no trial call, no probe. Operators see your key's name, the time and the reason; keys bound to a tenant see that it is held, and since when.", ok: "Hold open", focusReason: true },
    "force-close": { title: "Force close", text: (n) => "Put " + n + " back into queries now, ending any hold or cooldown. If it still fails, it trips again after its failure threshold.", ok: "Force close" },
  };

  // confirm asks in a modal dialog; it resolves to the reason (possibly
  // empty) on confirmation, or null.
  function confirmAction(action, name) {
    const a = ACTIONS[action];
    const d = $("confirm");
    $("confirm-h").textContent = a.title + ": " + name;
    $("confirm-text").textContent = a.text(name);
    $("confirm-ok").textContent = a.ok;
    $("confirm-reason").value = "";
    return new Promise((resolve) => {
      d.addEventListener("close", () => resolve(d.returnValue === "ok" ? $("confirm-reason").value.trim() : null), { once: true });
      d.returnValue = "";
      d.showModal();
      (a.focusReason ? $("confirm-reason") : $("confirm-cancel")).focus();
    });
  }

  function message(text, isError) {
    const status = $("action-status");
    clearTimeout(messageTimer);
    status.className = isError ? "error" : "";
    status.textContent = text;
    if (text) messageTimer = setTimeout(() => { status.textContent = ""; status.className = ""; }, MESSAGE_MS);
  }

  async function act(name, action) {
    message("");
    const reason = await confirmAction(action, name);
    if (reason === null) return;
    message((ACTIONS[action].title) + ": " + name + "…");
    try {
      const body = reason ? { reason } : undefined;
      const r = await request("POST", "/v1/status/breakers/" + encodeURIComponent(name) + "/" + action, body);
      if (r.status !== 200) {
        message("Could not " + ACTIONS[action].title.toLowerCase() + " " + name + ": " + errorText(r), true);
        return;
      }
      const b = r.data.breaker;
      message(name + " breaker is now " + human(b.state) + (b.hold ? ", held by " + b.hold.by : "") + ".");
      polls = 0; // the next poll reads the history too: the band changed
    } catch (e) {
      message("Server unreachable: " + e.message, true);
    }
    refresh();
  }

  // ---- timeline ------------------------------------------------------------------------

  function describe(e) {
    if (e.kind === "breaker" && e.breaker) {
      const b = e.breaker;
      if (b.reason === "held" && b.restored) {
        // Not a trip: the hold placed before a restart, kept.
        const since = Date.parse(b.held_since);
        return "hold" + (b.by ? " of " + b.by : "") + " restored after the restart: held open for maintenance since " +
          fmtStamp(new Date(since)) + " (" + fmtDur(Date.parse(e.at) - since) + " so far)" + (b.note ? ": " + b.note : "");
      }
      if (b.reason === "held") {
        return "held open for maintenance" + (b.by ? " by " + b.by : "") + (b.note ? ": " + b.note : "") +
          (b.from !== "open" ? " (" + human(b.from) + " → open, trip #" + b.opened_total + ")" : " (was open " + fmtDur(b.lasted_ms) + ")");
      }
      // The operator's words, then the figures: "(forced by ops: reindex;
      // trip #2; cooldown 30 s)".
      let s = human(b.reason) + (b.by ? " by " + b.by : "") + (b.note ? ": " + b.note : "");
      const what = [], figures = [];
      if (b.released_hold_of) what.push("released the hold of " + b.released_hold_of);
      if (b.failures && b.to === "open") what.push(b.failures + " failures");
      if (b.to === "open") what.push("trip #" + b.opened_total);
      if (b.from !== "closed" && b.lasted_ms !== undefined) figures.push("was " + human(b.from) + " " + fmtDur(b.lasted_ms));
      if (b.to === "closed" && b.outage_ms) figures.push("outage " + fmtDur(b.outage_ms));
      if (b.open_for_ms) figures.push("cooldown " + fmtDur(b.open_for_ms));
      if (what.length) s += (b.note ? "; " : ", ") + what.join(", ");
      if (figures.length) s += "; " + figures.join("; ");
      return human(b.from) + " → " + human(b.to) + " (" + s + ")";
    }
    if (e.kind === "burst" && e.burst) {
      const b = e.burst;
      if (b.phase === "started") return b.status + " burst started (" + b.count + " calls in quick succession)";
      return b.status + " burst ended after " + b.count + " calls over " + fmtDur(b.duration_ms || 0);
    }
    if (e.kind === "server" && e.server) {
      const s = e.server;
      return s.phase === "started" ? "ragd started (instance " + s.instance + (s.version ? ", " + s.version : "") + "): server restarted here"
        : "ragd stopped (instance " + s.instance + ")";
    }
    return e.kind;
  }

  // fetchEvents reads every event after the newest shown, page by page, so
  // none is missed however many came since; it changes nothing on the page
  // (showEvents does), so the caller can show them in the same task as the
  // cards.
  async function fetchEvents() {
    const fresh = { events: [], restart: false, dropped: false };
    let after = lastEvent;
    for (let pages = 0; pages < 20; pages++) {
      const page = await get("/v1/status/events?after=" + after + "&limit=500");
      if (page.last < after) { // the timeline started over: read it all
        fresh.restart = true;
        fresh.events = [];
        after = 0;
        continue;
      }
      if (page.dropped && after > 0) fresh.dropped = true;
      for (const e of page.events) {
        fresh.events.push(e);
        after = e.seq;
      }
      if (!page.more) break;
    }
    return fresh;
  }

  // showEvents adds what fetchEvents read to the timeline.
  function showEvents(fresh) {
    const list = $("events");
    if (fresh.restart) {
      list.replaceChildren();
      timeline = [];
      lastEvent = 0;
    }
    if (fresh.dropped) $("timeline-note").textContent = "Some events were dropped by the server's bounded timeline before this page read them.";
    for (const e of fresh.events) {
      const at = new Date(e.at);
      const to = e.breaker ? (e.breaker.reason === "held" ? "held" : e.breaker.to) : undefined;
      const text = describe(e);
      list.prepend(el("li", { "data-kind": e.kind, "data-source": e.source, "data-to": to, "data-seq": e.seq },
        el("time", { datetime: e.at, text: fmtStamp(at) }),
        e.kind === "server" ? null : el("span", { class: "src", text: e.source }),
        text));
      timeline.push({ seq: e.seq, at: at.getTime(), kind: e.kind, source: e.source, to, text: (e.kind === "server" ? "" : e.source + ": ") + text });
      lastEvent = e.seq;
    }
    while (list.children.length > MAX_EVENTS) list.lastChild.remove();
    if (timeline.length > MAX_EVENTS) timeline = timeline.slice(-MAX_EVENTS);
    if (!list.children.length) list.append(el("li", { class: "empty", text: "No events yet." }));
    else if (list.children.length > 1) list.querySelector(".empty")?.remove();
  }

  // ---- history charts --------------------------------------------------------------------

  // Where the pointer is over each chart (its id -> the fraction of its
  // width), so that a chart redrawn under a still pointer shows its values.
  const hoverAt = new Map();

  // chart draws series (numbers or null per step of the history h) as
  // lines or bars in a small SVG on a time axis that spans the history's
  // span, the newest step at the right edge; a band series draws states as
  // coloured cells. The timeline's events that opts.events accepts are
  // vertical marks. Pointing at a step shows its time, opts.hover(i) and
  // its events below the chart.
  function chart(title, lastText, series, opts) {
    const h = opts.h;
    const W = 300, H = 44;
    const step = h.step_ms;
    const start = Date.parse(h.start);
    const len = Math.max(1, ...series.map((s) => s.values.length));
    const right = start + len * step; // the end of the current step
    const left = right - Math.max(h.span_ms, len * step);
    const x = (t) => ((t - left) / (right - left)) * W;
    const xi = (i) => x(start + i * step);
    const cw = (W * step) / (right - left); // one step's width
    let max = opts.max || 0;
    for (const s of series) if (s.type !== "band") for (const v of s.values) if (v !== null && v > max) max = v;
    if (!max) max = 1;
    const y = (v) => H - 2 - (v / max) * (H - 4);
    const root = svg("svg", { viewBox: "0 0 " + W + " " + H, preserveAspectRatio: "none", role: "img",
      "aria-label": title + ": " + lastText });
    for (const s of series) {
      const cls = s.cls || "c-info";
      if (s.type === "band") {
        s.values.forEach((v, i) => root.append(svg("rect", { x: xi(i), y: 0, width: cw + 0.5, height: H, class: "band-" + (v || "none"), "data-state": v || "none" })));
      } else if (s.type === "bar") {
        const bw = Math.max(1, cw - 1);
        s.values.forEach((v, i) => { if (v) root.append(svg("rect", { x: xi(i), y: y(v), width: bw, height: H - 2 - y(v), class: "s-bar " + cls })); });
      } else {
        let d = "";
        const has = (v) => v !== null && v !== undefined;
        s.values.forEach((v, i) => { if (has(v)) d += (d && has(s.values[i - 1]) ? " L" : " M") + (xi(i) + cw / 2).toFixed(1) + " " + y(v).toFixed(1); });
        if (d) root.append(svg("path", { d: d.trim(), class: "s-line " + cls + (s.dashed ? " s-limit" : "") }));
      }
    }
    // Events: a thin mark, and a wide transparent line to point at.
    const evs = timeline.filter((e) => e.at >= left && e.at <= right && (!opts.events || opts.events(e)));
    for (const e of evs) {
      const ex = x(e.at).toFixed(1);
      const g = svg("g", { class: "marker", "data-seq": e.seq, "data-kind": e.kind, "data-source": e.source, "data-to": e.to });
      const tip = svg("title", {});
      tip.textContent = fmtClock(new Date(e.at)) + " " + e.text;
      g.append(tip, svg("line", { x1: ex, x2: ex, y1: 0, y2: H }), svg("line", { x1: ex, x2: ex, y1: 0, y2: H, stroke: "transparent", "stroke-width": 8 }));
      root.append(g);
    }
    const cursor = svg("line", { class: "cursor", y1: 0, y2: H, visibility: "hidden" });
    root.append(cursor);

    // The time axis: clock times at round minutes.
    const axis = el("div", { class: "axis", "aria-hidden": "true" });
    const width = right - left;
    const every = [60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3].find((m) => width / m <= 4) || 3600e3;
    for (let t = Math.ceil(left / every) * every; t <= right; t += every) {
      const pct = ((t - left) / width) * 100;
      if (pct < 4 || pct > 96) continue; // a label would cross the edge
      const tick = el("span", { text: fmtHM(new Date(t)) });
      tick.style.left = pct.toFixed(1) + "%";
      axis.append(tick);
    }
    const readout = el("div", { class: "readout" }); // no live region: it follows the pointer
    const fig = el("figure", { class: "chart", "data-chart": opts.id || title },
      el("figcaption", {}, el("span", { text: title }), el("b", { text: lastText })), root, axis, readout);

    const point = (frac) => {
      const t = left + frac * width;
      const i = Math.floor((t - start) / step);
      if (i < 0 || i >= len) { cursor.setAttribute("visibility", "hidden"); readout.textContent = ""; return; }
      const cx = (xi(i) + cw / 2).toFixed(1);
      cursor.setAttribute("x1", cx);
      cursor.setAttribute("x2", cx);
      cursor.setAttribute("visibility", "visible");
      const from = start + i * step;
      const inStep = evs.filter((e) => e.at >= from && e.at < from + step).map((e) => e.text);
      readout.textContent = fmtClock(new Date(from)) + ": " + (opts.hover ? opts.hover(i) : "") + inStep.map((t) => " · " + t).join("");
    };
    const id = opts.id || title;
    root.addEventListener("pointermove", (ev) => {
      const r = root.getBoundingClientRect();
      const frac = Math.max(0, Math.min(1, (ev.clientX - r.left) / r.width));
      hoverAt.set(id, frac);
      point(frac);
    });
    root.addEventListener("pointerleave", () => {
      if (!root.isConnected) return; // redrawn under the pointer: the new chart points on
      hoverAt.delete(id);
      cursor.setAttribute("visibility", "hidden");
      readout.textContent = "";
    });
    if (hoverAt.has(id)) point(hoverAt.get(id));
    return fig;
  }

  const last = (vs) => { for (let i = vs.length - 1; i >= 0; i--) if (vs[i] !== null && vs[i] !== undefined) return vs[i]; return null; };
  const sum = (vs) => vs.reduce((a, v) => a + (v || 0), 0);
  const perStep = (h, vs) => (vs.length ? sum(vs.slice(-6)) / Math.min(6, vs.length) / (h.step_ms / 1000) : 0); // per second, last minute
  const at = (vs, i) => (vs[i] === null || vs[i] === undefined ? "–" : vs[i]);
  const msAt = (vs, i) => fmtMS(vs[i]);
  // A source's chart shows its own events, its guard's and the server's.
  const eventsOf = (name) => (e) => e.kind === "server" || e.source === name || e.source === GUARDED_BY[name];

  function renderHistory(h) {
    history = h;
    const ragd = $("history-ragd");
    const r = h.http;
    const errs = r.status_4xx.map((v, i) => v + r.status_5xx[i]);
    const charts = [];
    if (h.partial) {
      // What users got, first: the share of answers partial, degraded, failed.
      const share = (vs) => vs.map((v, i) => (h.queries[i] ? v / h.queries[i] : null));
      const q6 = sum(h.queries.slice(-6));
      const lastMin = (vs) => (q6 ? fmtShare(sum(vs.slice(-6)) / q6) : "–");
      charts.push(chart("Answers partial · degraded · failed", lastMin(h.partial) + " · " + lastMin(h.degraded) + " · " + lastMin(h.failed) + " last min",
        [{ values: share(h.failed), type: "bar", cls: "c-bad" }, { values: share(h.partial), cls: "c-warn" }, { values: share(h.degraded), cls: "c-held", dashed: true }],
        { h, id: "impact", max: 1, hover: (i) => h.queries[i] + " queries, " + fmtShare(h.queries[i] ? h.partial[i] / h.queries[i] : 0) + " partial · " +
          fmtShare(h.queries[i] ? h.degraded[i] / h.queries[i] : 0) + " degraded · " + fmtShare(h.queries[i] ? h.failed[i] / h.queries[i] : 0) + " failed" }));
    }
    charts.push(
      chart("Requests per 10 s", perStep(h, r.requests).toFixed(1) + "/s", [{ values: r.requests, type: "bar", cls: "c-info" }],
        { h, id: "requests", hover: (i) => r.requests[i] + " requests" }),
      chart("4xx · 5xx · 429 per 10 s", sum(r.status_4xx) + " · " + sum(r.status_5xx) + " · " + sum(r.status_429) + " in 15 min",
        [{ values: errs, type: "bar", cls: "c-warn" }, { values: r.status_5xx, type: "bar", cls: "c-bad" }, { values: r.status_429, type: "bar", cls: "c-held" }],
        { h, id: "errors", hover: (i) => r.status_4xx[i] + " 4xx · " + r.status_5xx[i] + " 5xx · " + r.status_429[i] + " 429" }),
      chart("Query p50 / p99 (end to end)", fmtMS(last(r.query_p50_ms)) + " / " + fmtMS(last(r.query_p99_ms)),
        [{ values: r.query_p50_ms, cls: "c-ok" }, { values: r.query_p99_ms, cls: "c-warn" }],
        { h, id: "query-latency", hover: (i) => "p50 " + msAt(r.query_p50_ms, i) + " · p99 " + msAt(r.query_p99_ms, i) }),
    );
    ragd.replaceChildren(...charts);
    const infos = new Map(((server && server.sources) || []).map((s) => [s.name, s]));
    const bands = new Map(h.breakers.map((b) => [b.name, b.states]));
    const gauges = (kind, name) => h.gauges.find((g) => g.kind === kind && g.name === name);
    const box = $("history-sources");
    box.replaceChildren();
    const names = sortNames(new Set([...h.sources.map((s) => s.name), ...bands.keys()]));
    for (const name of names) {
      const s = h.sources.find((x) => x.name === name);
      const charts = [];
      const events = eventsOf(name);
      const band = bands.get(name) || bands.get(GUARDED_BY[name]);
      if (band) charts.push(chart("Breaker", human(band[band.length - 1]), [{ values: band, type: "band" }], { h, id: name + "-breaker", events, hover: (i) => human(band[i]) }));
      if (s) {
        const share = s.ok.map((v, i) => (h.queries[i] ? v / h.queries[i] : null));
        const timeout = infos.get(name) && infos.get(name).timeout_ms;
        const lat = [{ values: s.p50_ms, cls: "c-ok" }, { values: s.p99_ms, cls: "c-warn" }];
        if (timeout) lat.push({ values: s.p99_ms.map(() => timeout), cls: "c-bad", dashed: true });
        charts.push(
          chart("Calls per 10 s", String(last(s.calls) ?? 0), [{ values: s.calls, type: "bar" }], { h, id: name + "-calls", events, hover: (i) => s.calls[i] + " calls" }),
          chart("p50 / p99" + (timeout ? " (timeout " + timeout + " ms)" : ""), fmtMS(last(s.p50_ms)) + " / " + fmtMS(last(s.p99_ms)), lat,
            { h, id: name + "-latency", events, hover: (i) => "p50 " + msAt(s.p50_ms, i) + " · p99 " + msAt(s.p99_ms, i) }),
          chart("Share answered", last(share) === null ? "–" : fmtPct(last(share)), [{ values: share, cls: "c-ok" }],
            { h, id: name + "-share", max: 1, events, hover: (i) => (share[i] === null ? "no queries" : fmtPct(share[i]) + " of " + h.queries[i] + " queries") }),
          chart("Shed · timeout · error", sum(s.shed) + " · " + sum(s.timeout) + " · " + sum(s.error) + " in 15 min",
            [{ values: s.timeout.map((v, i) => v + s.shed[i] + s.error[i]), type: "bar", cls: "c-bad" }, { values: s.shed.map((v, i) => v + s.timeout[i]), type: "bar", cls: "c-warn" }, { values: s.shed, type: "bar", cls: "c-held" }],
            { h, id: name + "-failures", events, hover: (i) => s.shed[i] + " shed · " + s.timeout[i] + " timeout · " + s.error[i] + " error" }));
      }
      const lim = gauges("limit", name), inf = gauges("inflight", name);
      if (lim && inf) {
        charts.push(chart("In flight / limit", (last(inf.max) ?? 0) + " / " + (last(lim.min) ?? "–"),
          [{ values: inf.max, cls: "c-info" }, { values: lim.min, cls: "c-muted", dashed: true }],
          { h, id: name + "-limit", events, hover: (i) => at(inf.max, i) + " in flight / limit " + at(lim.min, i) }));
      }
      box.append(el("div", { "data-source": name }, el("h3", { text: name }), el("div", { class: "charts" }, ...charts)));
    }
    $("history-note").textContent = "Since " + fmtStamp(new Date(h.start)) + ".";
  }

  async function pollHistory() {
    if (historyDenied) return;
    try {
      renderHistory(await get("/v1/status/history"));
    } catch (e) {
      if (e.status === 403 || e.status === 404) {
        historyDenied = true;
        $("history-note").textContent = e.status === 403 ? "This key is bound to a tenant: the history counts every tenant's traffic, so it is not shown." : "This server keeps no history.";
      } else throw e;
    }
  }

  // ---- stores ------------------------------------------------------------------------------

  function renderStores(health) {
    if (!server) return;
    const tb = $("store-table").tBodies[0];
    const lags = new Map(((health.log && health.log.stores) || []).map((l) => [l.store, l]));
    tb.replaceChildren();
    for (const st of server.stores) {
      const l = lags.get(st.name);
      const g = history && history.gauges.find((x) => x.kind === "lag_entries" && x.name === st.name);
      tb.append(el("tr", { "data-store": st.name },
        el("th", { scope: "row", text: st.name }), el("td", { "data-label": "Kind", text: st.kind }), el("td", { "data-label": "Role", text: st.role }),
        el("td", { class: "num", "data-label": "Documents", text: st.dormant ? "not built" : st.documents === undefined ? (server.key.tenant ? "hidden (tenant key)" : "counting…") : String(st.documents) }),
        el("td", { "data-label": "Index lag", text: st.role === "record" ? "— (the record)" : st.dormant ? "dormant: nothing reads it; a query that asks for it builds it" : l ? l.behind + " entries, " + l.lag_seconds.toFixed(1) + " s" + (l.error ? " · " + l.error : "") : "–" }),
        el("td", { "data-label": "Lag, 15 min" }, g ? chart(st.name + " lag", (last(g.max) ?? 0) + " entries", [{ values: g.max, cls: "c-warn" }],
          { h: history, id: st.name + "-lag", events: eventsOf(st.name) }).querySelector("svg") : "–")));
    }
    const e = server.embedder;
    const facts = [["Version", server.version || "–"], ["Instance", server.instance], ["Started", fmtStamp(new Date(server.started_at))], ["Uptime", fmtDur(server.uptime_s * 1000)]];
    if (e) facts.unshift(["Embedder", e.kind + ", " + e.dimension + " dimensions"], ["Embedder identity", e.identity]);
    const comp = health.components && health.components.embedder;
    if (comp && comp.detail) facts.splice(2, 0, ["Embedder health", comp.status + " — " + comp.detail]);
    $("embedder").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  }

  // ---- polling ---------------------------------------------------------------------------

  // refresh polls once and schedules the next poll; a refresh started while
  // one is in flight (a new key) supersedes it, so one poll loop runs.
  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    const again = () => { if (mine === generation) timer = setTimeout(refresh, POLL_MS); };
    try {
      const [srv, br, health, stats] = await Promise.all([
        get("/v1/status/server"), get("/v1/status/breakers"), get("/v1/status/health", true), get("/v1/status/sources"),
      ]);
      if (mine !== generation) return;
      if (!apiKey) authOff = true;
      renderServer(srv);
      const fresh = await fetchEvents();
      // The breakers were read before these events: read them again, so
      // that no card is older than the timeline's newest entry (a forced
      // trip between the two reads showed on the timeline a poll before
      // its card). The two are drawn in one task: the page never shows one
      // without the other.
      let breakers = br.breakers || [];
      if (fresh.events.length) breakers = (await get("/v1/status/breakers")).breakers || [];
      if (mine !== generation) return;
      showEvents(fresh);
      renderCards(breakers, health, stats);
      if (polls++ % HISTORY_EVERY === 0 || !history) await pollHistory();
      else if (fresh.events.length && history && mine === generation) renderHistory(history); // new marks
      if (mine !== generation) return;
      renderOverall(health);
      impact = { queries: stats.queries, answers: stats.answers };
      renderImpact();
      renderStores(health);
      updateSourceControls();
      lastOK = Date.now();
      markStale();
      $("updated").textContent = "Last update " + fmtClock(new Date(lastOK)) + ".";
      $("overall").classList.remove("error");
    } catch (e) {
      if (mine !== generation) return;
      const o = $("overall");
      o.className = "overall error";
      if (e.status === 401 || e.status === 403) {
        // This key may not see the server (or auth was turned on): show
        // nothing of what an earlier key or instance saw.
        server = null;
        instance = "";
        historyDenied = false;
        clearState("");
        clearQuery();
        if (e.status === 401) authOff = false;
        o.textContent = e.status === 401 ? "This server needs an API key." : "This key may not read the status.";
      } else {
        o.textContent = e.status ? "Error: " + e.message : "Cannot reach ragd (" + e.message + ")";
      }
      markStale();
      setKeyStatus();
    }
    again();
  }

  // ---- query playground ------------------------------------------------------------------

  function buildSourceControls() {
    const box = $("q-sources");
    box.replaceChildren();
    for (const name of QUERY_SOURCES) {
      const mode = el("select", { id: "q-on-" + name },
        el("option", { value: "", text: "server default" }), el("option", { value: "on", text: "on" }), el("option", { value: "off", text: "off" }));
      const w = el("input", { type: "number", id: "q-w-" + name, min: "0", max: "1000", step: "0.05", inputmode: "decimal", placeholder: "server default" });
      box.append(el("div", { class: "src", "data-source": name },
        el("span", { class: "name", text: name }),
        el("label", { for: "q-on-" + name, text: "use" }), mode,
        el("label", { for: "q-w-" + name, text: "weight" }), w));
    }
    updateSourceControls();
  }

  // updateSourceControls names the server's own default in each source's
  // "server default" choice and weight placeholder.
  function updateSourceControls() {
    const infos = new Map(((server && server.sources) || []).map((s) => [s.name, s]));
    for (const name of QUERY_SOURCES) {
      const i = infos.get(name);
      const opt = $("q-on-" + name).options[0];
      opt.textContent = i ? "server default (" + (i.enabled ? "on" : "off") + ")" : "server default";
      $("q-w-" + name).placeholder = i ? "default " + i.weight : "server default";
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

  // buildQuery sends only what the user set: everything else is the
  // server's default, exactly as the same query through the API.
  function buildQuery() {
    const q = { text: $("q-text").value, explain: true };
    const limit = $("q-limit").value;
    if (limit !== "") q.limit = Number(limit);
    const mode = $("q-fusion").value;
    if (mode) q.fusion = { mode };
    const tenant = $("q-tenant").value.trim();
    if (tenant) q.tenant = tenant;
    const filter = parseFilter($("q-filter").value);
    if (Object.keys(filter).length) q.filter = filter;
    for (const name of QUERY_SOURCES) {
      const o = {};
      const on = $("q-on-" + name).value;
      if (on) o.enabled = on === "on";
      const w = $("q-w-" + name).value;
      if (w !== "") o.weight = Number(w);
      if (Object.keys(o).length) (q.sources = q.sources || {})[name] = o;
    }
    return q;
  }

  function curlOf(q) {
    const body = JSON.stringify(q).replace(/'/g, "'\\''");
    return "curl -sS -X POST '" + location.origin + "/v1/query' -H \"Authorization: Bearer $RAGD_API_KEY\" " +
      "-H 'Content-Type: application/json' --data-raw '" + body + "'";
  }

  function renderSources(tbody, sources) {
    tbody.replaceChildren();
    for (const name of sortNames(Object.keys(sources || {}))) {
      const s = sources[name];
      let detail = s.error || "";
      if (s.retry_in_ms) detail += (detail ? "; " : "") + "retry in " + fmtSecs(s.retry_in_ms);
      tbody.append(el("tr", { "data-source": name, "data-status": s.status },
        el("th", { scope: "row", text: name }), el("td", { "data-label": "Status" }, badge(s.status)),
        el("td", { class: "num", "data-label": "Took", text: fmtMS(s.took_ms) }), el("td", { class: "num", "data-label": "Returned", text: String(s.returned ?? "") }),
        el("td", { "data-label": "Reason", text: detail || "–" })));
    }
  }

  function renderFusion(res) {
    const f = res.fusion;
    const on = sortNames(Object.keys(f.weights || {}));
    const off = sortNames(Object.keys(res.sources || {}).filter((n) => QUERY_SOURCES.includes(n) && !on.includes(n)));
    let s = "The server fused with " + f.mode + (f.k ? " (k " + f.k + ")" : "") + " over a window of " + f.window +
      "; weights: " + (on.map((n) => n + " " + f.weights[n]).join(", ") || "none");
    if (f.expand) s += "; expansion weight " + f.expand.weight + ", " + f.expand.hops + " hop(s)";
    if (off.length) s += "; not used: " + off.map((n) => n + " (" + human(res.sources[n].status) + ")").join(", ");
    $("query-fusion").textContent = s + ".";
  }

  function renderHits(res) {
    const list = $("hits");
    list.replaceChildren();
    const order = sortNames(Object.keys(res.fusion && res.fusion.weights ? res.fusion.weights : {}));
    for (const h of res.hits) {
      const doc = h.document;
      const title = doc && doc.title ? doc.title : doc ? "(untitled)" : "(not hydrated)";
      const text = doc && doc.text ? (doc.text.length > 300 ? doc.text.slice(0, 300) + "…" : doc.text) : "";
      const li = el("li", { class: "hit", "data-id": h.id },
        el("header", {}, el("span", { class: "rank", text: "#" + h.rank }), el("span", { text: title }),
          el("span", { class: "id", text: h.id }), el("span", { class: "score", text: "score " + h.score.toPrecision(4) })),
        text ? el("p", { class: "text", text }) : null);
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
    $("q-curl").value = curlOf(q);
    const mine = ++queryGen;
    try {
      const r = await request("POST", "/v1/query", q);
      if (mine !== queryGen) return; // the key changed meanwhile: not this key's answer to show
      const at = fmtStamp(new Date());
      const result = $("query-result");
      $("q-raw").textContent = JSON.stringify(r.data, null, 2);
      if (r.status !== 200) {
        status.className = "error";
        status.textContent = "Query failed at " + at + ": " + errorText(r);
        const detail = r.data && r.data.error && r.data.error.sources;
        $("query-fusion").textContent = "";
        if (detail) renderSources($("query-sources").tBodies[0], detail);
        else $("query-sources").tBodies[0].replaceChildren();
        $("hits").replaceChildren();
        result.hidden = false;
        return;
      }
      const res = r.data;
      let msg = res.hits.length + " of " + res.total + " hits in " + fmtMS(res.took_ms) + ", answered at " + at;
      if (res.partial) msg += " · partial answer";
      if (res.degraded) msg += " · degraded";
      status.textContent = msg + ".";
      renderFusion(res);
      renderSources($("query-sources").tBodies[0], res.sources);
      renderHits(res);
      result.hidden = false;
    } catch (e) {
      if (mine !== queryGen) return;
      status.className = "error";
      status.textContent = "Server unreachable: " + e.message;
    } finally {
      if (mine === queryGen) $("run-query").disabled = false;
    }
  });

  $("copy-curl").addEventListener("click", async () => {
    const t = $("q-curl");
    t.focus();
    t.select();
    const status = $("query-status");
    try {
      await navigator.clipboard.writeText(t.value);
      status.textContent = "The curl command is on the clipboard.";
    } catch (_) {
      status.textContent = "The curl command is selected below: copy it with Ctrl+C.";
    }
  });

  $("tz").textContent = zone(new Date()) + " (this browser's zone)";
  buildSourceControls();
  setKeyStatus();
  refresh();
})();
