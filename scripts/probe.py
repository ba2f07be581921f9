#!/usr/bin/env python3
"""Black-box probe of a live ragd in embedded mode: typed metadata, retags,
deletes, growth and shrinkage across the vector store's approximate-index
threshold and the keyword index's rebuilds, searches while writes run, and
kill -9 in the middle of writes, with every filtered search checked against a
model of the documents kept here.

    scripts/probe.py --ragd BIN --data DIR [--rounds N] [--seed S] [--plans a,b]

It starts `BIN serve` on a configuration of its own in DIR (hashing
embedder, so no model is needed; the approximate index from 1,500 rows;
keyword settle after 200 ms) and restarts it after each kill. Checks:

* every search and write answers 200 (207 for a write a document of which
  failed, itself a failure here): these requests are all valid;
* every hit is of the query's tenant and (when no write runs) matches the
  filter, as docs/api.md "Filters" defines it (evaluated here again);
* a keyword-only or vector-only search whose filter leaves at most 100
  documents returns exactly those (keyword: those holding the word);
* after kill -9: POST /v1/status/check finds nothing missing, stale or extra
  in a derived store, and acknowledged documents read back as sent (a batch
  whose answer was lost is left out of every check).

Plans: grow, big (past the keyword index's rebuild size), retag, shrink,
chaos (writes while two clients search), kill. Exit status 1 on any failure.
Python 3 standard library only.
"""
import argparse, http.client, json, os, random, shutil, subprocess, sys, threading, time
from datetime import datetime, timedelta, timezone

ap = argparse.ArgumentParser()
ap.add_argument("--ragd", required=True, help="the ragd binary")
ap.add_argument("--data", required=True, help="a directory of its own (emptied)")
ap.add_argument("--port", type=int, default=18095)
ap.add_argument("--rounds", type=int, default=12)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--plans", default="grow,big,retag,shrink,chaos,kill")
args = ap.parse_args()
rng = random.Random(args.seed)
PLANS = args.plans.split(",")

WORDS = ("alpha bravo delta echo golf hotel india kilo lima mike oscar papa "
         "romeo sierra tango victor xray zulu nickel copper silver zinc").split()
TENANTS = ["t1", "t2", "t3"]
KEYS = ["n", "x", "lang", "flag", "when", "tags", "mix"]
BASE = datetime(2020, 1, 1, tzinfo=timezone.utc)
EXTREME = [2**63 - 1, -2**63, 2**53, 2**53 + 1, 1e300, -1e300, -0.0, 0, 0.5, 1, "", "é", "0", True, False,
           {"$time": "0001-01-01T00:00:00.000000Z"}, {"$time": "9999-12-31T23:59:59.999999Z"},
           {"$time": "2020-01-01T00:00:00.000000Z"}]
model, uncertain, fails = {}, set(), []
stats = {"queries": 0, "complete_checked": 0, "written": 0, "deleted": 0, "kills": 0}
next_i = {t: 0 for t in TENANTS}

# ---- the server ------------------------------------------------------------
os.makedirs(args.data, exist_ok=True)
cfg = os.path.join(args.data, "rag.yaml")
with open(cfg, "w") as f:
    f.write(f"""data_dir: {os.path.join(os.path.abspath(args.data), "data")}
server: {{listen: 127.0.0.1:{args.port}}}
auth: {{enabled: false}}
embedder: {{kind: hashing}}
backends:
  vector: {{kind: embedded, dir: vector, ann: {{min_rows: 1500}}}}
  keyword: {{kind: bleve, dir: keyword, settle_after_ms: 200}}
  graph: {{kind: embedded, dir: graph}}
""")
shutil.rmtree(os.path.join(args.data, "data"), ignore_errors=True)
log = open(os.path.join(args.data, "serve.log"), "a")
server = None

def conn():
    return http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)

def call(c, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read()
    try:
        return r.status, json.loads(raw) if raw else None
    except ValueError:
        return r.status, raw

def start():
    global server
    server = subprocess.Popen([args.ragd, "serve", "-c", cfg], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        try:
            if call(conn(), "GET", "/readyz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("probe: ragd not ready after 120 s (see serve.log)")

# ---- documents ---------------------------------------------------------------
def t_iso(d): return d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

def rand_value(k):
    if k == "n": return rng.randint(-3, 12)
    if k == "x": return rng.randint(0, 8) / 2.0
    if k == "lang": return rng.choice(["en", "de", "fr", "es", "3"])
    if k == "flag": return rng.choice([True, False])
    if k == "when": return {"$time": t_iso(BASE + timedelta(days=rng.randint(0, 40)))}
    if k == "tags": return rng.sample(["a", "b", "c", "d", 1, 2], rng.randint(0, 3))
    if rng.random() < 0.3: return [rng.choice(EXTREME) for _ in range(rng.randint(0, 3))]
    return rng.choice(EXTREME)

def rand_meta(): return {k: rand_value(k) for k in KEYS if rng.random() < 0.7}

def rand_text(): return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))

def new_doc(tenant):
    i = next_i[tenant]; next_i[tenant] += 1
    return {"id": f"{tenant}-d{i}", "tenant": tenant, "title": rng.choice(WORDS), "text": rand_text(), "metadata": rand_meta()}

# ---- the filter language, as docs/api.md "Filters" states it ----------------
def is_num(v): return isinstance(v, (int, float)) and not isinstance(v, bool)
def is_time(v): return isinstance(v, dict) and "$time" in v
def items(v): return v if isinstance(v, list) else [v]

def equal(a, b):
    if is_num(a) and is_num(b): return a == b  # Python compares int and float exactly
    if is_time(a) and is_time(b): return a["$time"] == b["$time"]
    return type(a) == type(b) and a == b

def ordered(op, a, b):
    if is_num(a) and is_num(b): x, y = a, b
    elif is_time(a) and is_time(b): x, y = a["$time"], b["$time"]  # fixed width: orders as the instants
    else: return False
    return {"$gt": x > y, "$gte": x >= y, "$lt": x < y, "$lte": x <= y}[op]

def cond_holds(md, key, cond):
    if isinstance(cond, list): cond = {"$in": cond}
    if not isinstance(cond, dict) or is_time(cond): cond = {"$eq": cond}
    present = key in md
    for op, v in cond.items():
        if op == "$exists":
            ok = present == v
        elif op == "$not":
            ok = not cond_holds(md, key, v)
        elif op in ("$ne", "$nin"):
            vs = [v] if op == "$ne" else v
            ok = not (present and any(equal(it, x) for it in items(md[key]) for x in vs))
        elif not present:
            ok = False
        elif op in ("$eq", "$in"):
            vs = [v] if op == "$eq" else v
            ok = any(equal(it, x) for it in items(md[key]) for x in vs)
        else:
            ok = any(ordered(op, it, v) for it in items(md[key]))
        if not ok:
            return False
    return True

def holds(md, f):
    for k, v in f.items():
        if k == "$and": ok = all(holds(md, g) for g in v)
        elif k == "$or": ok = any(holds(md, g) for g in v)
        elif k == "$not": ok = not holds(md, v)
        else: ok = cond_holds(md, k, v)
        if not ok:
            return False
    return True

def operand(k):
    """A scalar of the key's kinds (a filter's operands are never lists)."""
    if k == "tags": return rng.choice(["a", "b", 1, 2])
    if k == "mix": return rng.choice(EXTREME)
    return rand_value(k)

def rand_cond(k):
    r = rng.random()
    if r < 0.25: return operand(k)
    if r < 0.4: return {"$in": [operand(k) for _ in range(rng.randint(1, 3))]}
    if r < 0.5: return {"$ne": operand(k)}
    if r < 0.6: return {"$exists": rng.choice([True, False])}
    if r < 0.9:
        if k == "when": v = rand_value("when")
        elif k == "mix": v = rng.choice([x for x in EXTREME if is_num(x) or is_time(x)])
        elif k in ("lang", "flag"): v = rng.randint(0, 3)  # never holds on strings or booleans
        else: v = rng.choice([rng.randint(-2, 10), rng.randint(0, 8) / 2.0])
        return {op: v for op in rng.sample(["$gt", "$gte", "$lt", "$lte"], rng.randint(1, 2))}
    return {"$not": {"$in": [operand(k)]}}

def rand_filter(depth=0):
    f = {}
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if depth < 2 and r < 0.12: f["$or"] = [rand_filter(depth + 1) for _ in range(rng.randint(1, 3))]
        elif depth < 2 and r < 0.2: f["$not"] = rand_filter(depth + 1)
        elif depth < 2 and r < 0.25: f["$and"] = [rand_filter(depth + 1) for _ in range(2)]
        else:
            k = rng.choice(KEYS)
            f[k] = rand_cond(k)
    return f

# ---- writes --------------------------------------------------------------
def upsert(c, docs):
    try:
        st, body = call(c, "POST", "/v1/documents", {"documents": docs})
    except (OSError, http.client.HTTPException):
        for d in docs:  # the answer was lost: either state may hold
            uncertain.add(d["id"])
            model.pop(d["id"], None)
        raise
    if st not in (200, 207):
        fails.append(f"upsert answered {st}: {str(body)[:300]}")
        return
    for d, r in zip(docs, body["results"]):
        if r["status"] == "ok":
            model[d["id"]] = d
        else:
            fails.append(f"upsert result {r}")
    stats["written"] += len(docs)

def delete(c, ids):
    st, body = call(c, "POST", "/v1/documents/delete", {"ids": ids})
    if st not in (200, 207):
        fails.append(f"delete answered {st}: {str(body)[:300]}")
        return
    for i, r in zip(ids, body["results"]):
        if r["status"] in ("ok", "not_found"):
            model.pop(i, None)
        else:
            fails.append(f"delete result {r}")
    stats["deleted"] += len(ids)

def grow(c, n):
    for s in range(0, n, 250):
        upsert(c, [new_doc(rng.choice(TENANTS)) for _ in range(min(250, n - s))])

def retag(c, n):
    ids = rng.sample(sorted(model), min(n, len(model)))
    for s in range(0, len(ids), 250):
        docs = []
        for i in ids[s:s + 250]:
            d = dict(model[i], metadata=rand_meta())
            if rng.random() < 0.3:
                d["text"] = rand_text()
            docs.append(d)
        upsert(c, docs)

def shrink(c, n):
    ids = sorted(model)
    ids = ids[-n:] if rng.random() < 0.5 else rng.sample(ids, min(n, len(ids)))
    for s in range(0, len(ids), 500):
        delete(c, ids[s:s + 500])

def wait_current(c):
    """Until every awake derived store has applied the log (the health
    answer is cached for 1 s: only one read after t0 counts)."""
    t0 = datetime.now(timezone.utc)
    for _ in range(1200):
        _, h = call(c, "GET", "/v1/status/health")
        log_ = h["log"]
        if datetime.fromisoformat(log_["as_of"].replace("Z", "+00:00")) >= t0 and \
                all(s["behind"] == 0 for s in log_["stores"] if not s.get("dormant")):
            return
        time.sleep(0.2)
    fails.append("the derived stores were not current after 4 minutes")

# ---- searches ---------------------------------------------------------------
def query(c, tenant, f, source, word):
    q = {"text": word, "tenant": tenant, "filter": f, "limit": 100, "window": 1000,
         "sources": {s: {"enabled": s == source} for s in ("vector", "keyword", "graph")}}
    st, body = call(c, "POST", "/v1/query", q)
    stats["queries"] += 1
    if st != 200:
        fails.append(f"query answered {st}: {json.dumps(q)[:300]} -> {str(body)[:300]}")
        return
    if body["sources"][source]["status"] != "ok":
        fails.append(f"{source}: {body['sources'][source]} for {json.dumps(q)[:300]}")
        return
    raw = [h["id"] for h in body["hits"]]
    got = [i for i in raw if i not in uncertain]
    leaked = [i for i in got if not i.startswith(tenant + "-")]
    if leaked:
        fails.append(f"tenant {tenant}'s query answered {leaked[:3]}")
    want = {i for i, d in model.items() if d["tenant"] == tenant and holds(d["metadata"], f)
            and (source == "vector" or word in (d["title"] + " " + d["text"]).split())}
    extra = [i for i in got if i not in want]
    if extra:
        fails.append(f"{source}: {extra[:3]} do not match {json.dumps(f)} (model {[model.get(i, {}).get('metadata') for i in extra[:1]]})")
    # A document whose write's answer was lost may be stored and take a
    # place of the page: a full page holding one says nothing of the rest.
    if len(want) <= 100 and (len(raw) < 100 or len(raw) == len(got)):
        stats["complete_checked"] += 1
        if missing := sorted(want - set(got)):
            fails.append(f"{source}: {len(missing)} of {len(want)} missing ({missing[:3]}) for {json.dumps(f)}, word {word}")

def checked_searches(c, n):
    for _ in range(n):
        query(c, rng.choice(TENANTS), rand_filter(), rng.choice(["vector", "keyword"]), rng.choice(WORDS))

def chaos(c, batches):
    """Writes on one connection while two clients search: 5xx and tenants
    only (a document may change between its search and its hydration)."""
    stop, errs = threading.Event(), []
    pool = [rand_filter() for _ in range(50)]

    def reader(seed):
        r, c2 = random.Random(seed), conn()
        while not stop.is_set():
            t = r.choice(TENANTS)
            st, body = call(c2, "POST", "/v1/query", {"text": r.choice(WORDS), "tenant": t, "filter": r.choice(pool), "limit": 100, "window": 1000})
            if st != 200:
                errs.append(f"query while writing answered {st}: {str(body)[:300]}")
            elif any(not h["id"].startswith(t + "-") for h in body["hits"]):
                errs.append(f"tenant {t}'s query while writing answered another tenant's document")
    readers = [threading.Thread(target=reader, args=(rng.random(),)) for _ in range(2)]
    for th in readers:
        th.start()
    for _ in range(batches):
        rng.choice([lambda: grow(c, rng.randint(50, 400)), lambda: retag(c, rng.randint(20, 300)),
                    lambda: shrink(c, rng.randint(20, 400))])()
    stop.set()
    for th in readers:
        th.join()
    fails.extend(errs)

def kill_during_writes(n):
    """kill -9 at a random moment of a stream of writes, then a restart."""
    stats["kills"] += 1
    threading.Timer(rng.uniform(0.3, 5), server.kill).start()
    c = conn()
    try:
        while True:
            grow(c, n)
    except (OSError, http.client.HTTPException):
        pass
    server.wait()
    start()
    c = conn()
    st, body = call(c, "POST", "/v1/status/check", {})
    if st != 200:
        fails.append(f"check after kill -9 answered {st}")
    for s in (body or {}).get("stores", []):
        if s.get("missing") or s.get("stale") or s.get("extra") or s.get("error"):
            fails.append(f"check after kill -9: {json.dumps(s)[:300]}")
    for i in rng.sample(sorted(model), min(200, len(model))):
        st, d = call(c, "GET", "/v1/documents/" + i)
        if st != 200 or d["text"] != model[i]["text"] or (d.get("metadata") or {}) != model[i]["metadata"]:
            fails.append(f"acknowledged {i} after kill -9: {st} {str(d)[:200]}")
    return c

start()
c = conn()
try:
    for rnd in range(args.rounds):
        plan = rng.choice(PLANS)
        if plan == "grow": grow(c, rng.randint(200, 1500))
        elif plan == "big": grow(c, rng.randint(3000, 18000))
        elif plan == "retag": retag(c, rng.randint(50, 1500))
        elif plan == "shrink": shrink(c, rng.randint(len(model) // 4, max(1, len(model) * 3 // 4)))
        elif plan == "chaos": chaos(c, rng.randint(2, 6))
        elif plan == "kill": c = kill_during_writes(rng.randint(500, 3000))
        wait_current(c)
        checked_searches(c, 60)
        print(f"round {rnd} {plan}: {len(model)} documents, {stats['queries']} searches checked "
              f"({stats['complete_checked']} for completeness), {len(fails)} failures", flush=True)
        if len(fails) > 40:
            break
finally:
    server.terminate()
    server.wait()
print(json.dumps(stats))
for f in fails[:40]:
    print("FAIL", f)
sys.exit(1 if fails else 0)
