// Command ragd-bench drives a running ragd with a bounded, loopback-only
// query load and prints markdown table rows (see scripts/bench.sh).
//
// One load run, one row:
//
//	ragd-bench -server http://127.0.0.1:8080 -queries ../shared/data/cranfield \
//	    -clients 8 -duration 10s -pid $(pgrep -n ragd) -label "embedded, healthy"
//
// A fault scenario (healthy phase, then per fault: until the breaker opens,
// breaker open, healed until the source answers), one row per phase:
//
//	ragd-bench -scenario embedded ...      faults injected through /debug/faults
//	ragd-bench -scenario vector-hung -rate 200 -clients 64 ...
//	                                       the vector store hung only (open loop,
//	                                       more clients than its limit)
//	ragd-bench -scenario servers -neo4j-pid N -pg-pids "P1 P2 ..." \
//	    -neo4j-stop CMD -neo4j-start CMD ...   SIGSTOP/SIGCONT, then a restart
//
// Several replicas at once, the clients spread over them, each replica's
// change-log lag read every second, optionally under a steady write load
// through the first (one row per replica, one for all, one for the writes):
//
//	ragd-bench -replicas http://127.0.0.1:8080,http://127.0.0.1:8081 \
//	    -replica-pids "P1,P2" -clients 8 -duration 30s -label "writes" \
//	    -write-docs ../shared/data/cranfield -write-rate 200 -write-batch 50
//
// Queries that bring their own vectors (a JSONL file of {"text","vector"}
// lines, as scripts/bench.sh scale writes) are sent with -send vector or
// both; -took adds each source's took_ms percentiles under the row.
//
// pgvector's recall@k against exact search, at several ef_search values
// and for one tenant (no load run; the store is opened in-process):
//
//	ragd-bench -pg-recall "$RAGD_PG_DSN" -queries queries-v384.jsonl -tenant t1
//
// The same against exact answers computed beforehand (ragd-vectors make),
// and a running ragd's recall@k against them (-body switches the other
// sources off; one row):
//
//	ragd-bench -pg-recall "$RAGD_PG_DSN" -queries q.jsonl -exact exact.jsonl -tenant t1
//	ragd-bench -server URL -queries q.jsonl -exact exact.jsonl -label "vector recall" \
//	    -body '{"sources":{"keyword":{"enabled":false},"graph":{"enabled":false}}}'
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/ragd/ragd/internal/loadgen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ragd-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg     loadgen.Config
		queries string
		body    string
		label   string
		header  bool
		jsonOut string
		sc      scenarioFlags
		qf      queryFlags
		rf      recallFlags
		rep     replicaFlags
		af      apiRecallFlags
	)
	flag.StringVar(&cfg.Server, "server", "http://127.0.0.1:8080", "ragd base URL")
	flag.StringVar(&cfg.APIKey, "api-key", os.Getenv("RAGD_API_KEY"), "API key (default $RAGD_API_KEY)")
	flag.StringVar(&queries, "queries", "", "BEIR directory (its queries.jsonl) or a JSONL file of {\"text\"} or {\"_id\",\"text\"} lines")
	flag.StringVar(&body, "body", "", "JSON object merged into every query body, e.g. '{\"sources\":{\"graph\":{\"enabled\":false}}}'")
	flag.IntVar(&cfg.Clients, "clients", 8, "concurrent clients (open loop: the most requests outstanding)")
	flag.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests a second on a fixed schedule, whatever the answers (0: closed loop, each client waits for its answer)")
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "run length (0: bounded by -requests only)")
	flag.IntVar(&cfg.MaxRequests, "requests", 0, "stop after this many requests (0: bounded by -duration only)")
	flag.IntVar(&cfg.PID, "pid", 0, "ragd's process id, for CPU time per query")
	flag.StringVar(&label, "label", "load", "the row's scenario label")
	flag.BoolVar(&header, "header", false, "print the table header before the row")
	flag.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	sc.register()
	qf.register()
	rf.register()
	rep.register()
	af.register()
	flag.Parse()

	qs, vecs, err := readQueries(queries)
	if err != nil {
		return err
	}
	if rf.dsn != "" {
		return rf.run(context.Background(), os.Stdout, qs, vecs, af.exact)
	}
	if cfg.Queries, cfg.Vectors, err = qf.apply(qs, vecs); err != nil {
		return err
	}
	if body != "" {
		if err := json.Unmarshal([]byte(body), &cfg.Body); err != nil {
			return fmt.Errorf("-body: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if af.exact != "" {
		cfg.Vectors = vecs
		return af.run(ctx, os.Stdout, cfg, rf, label)
	}
	if sc.mode != "" {
		return sc.run(ctx, cfg)
	}
	if rep.urls != "" {
		return rep.run(ctx, os.Stdout, cfg, label, header)
	}
	r, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return err
	}
	r.Label = label
	if header {
		loadgen.Header(os.Stdout)
	}
	loadgen.Row(os.Stdout, r)
	qf.report(os.Stdout, r)
	if jsonOut != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(jsonOut, b, 0o644)
	}
	return nil
}

// eachLine calls fn with every non-empty line of path.
func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// readQueries reads the query texts, and each line's "vector" when it has
// one (nil otherwise).
func readQueries(path string) ([]string, [][]float32, error) {
	if path == "" {
		return nil, nil, fmt.Errorf("-queries is required")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "queries.jsonl")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var (
		texts []string
		vecs  [][]float32
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var q struct {
			Text   string    `json:"text"`
			Vector []float32 `json:"vector"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if q.Text != "" || q.Vector != nil {
			texts = append(texts, q.Text)
			vecs = append(vecs, q.Vector)
		}
	}
	return texts, vecs, sc.Err()
}
