package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/internal/loadgen"
	"github.com/ragd/ragd/spi"
)

// replicaFlags run one phase against several replicas at once: the query
// clients spread over them, each replica's change-log lag sampled, and,
// with -write-rate, a steady write load through the first.
type replicaFlags struct {
	urls       string
	pids       string
	writeDocs  string
	writeRate  float64
	writeBatch int
	lagEvery   time.Duration
	lagOut     string
	drain      time.Duration
}

func (f *replicaFlags) register() {
	flag.StringVar(&f.urls, "replicas", "", "comma-separated base URLs of ragd replicas: -clients spread over them (client i to replica i mod n), one row each and one for all")
	flag.StringVar(&f.pids, "replica-pids", "", "-replicas: their process ids, comma-separated, for CPU time per query")
	flag.StringVar(&f.writeDocs, "write-docs", "", "-replicas: JSONL or BEIR corpus (file or directory) the writer upserts, each pass with its texts marked \"rev N\"")
	flag.Float64Var(&f.writeRate, "write-rate", 0, "-replicas: documents a second the writer upserts through the first replica during the run (0: no writes)")
	flag.IntVar(&f.writeBatch, "write-batch", 50, "-replicas: documents per upsert request")
	flag.DurationVar(&f.lagEvery, "lag-every", time.Second, "-replicas: how often each replica's GET /v1/status/health is read for the log's lag")
	flag.StringVar(&f.lagOut, "lag-out", "", "-replicas: append every lag reading to this file, one line per replica and store (entries behind, then seconds)")
	flag.DurationVar(&f.drain, "drain", 2*time.Minute, "-replicas: after the writes, the longest wait for every replica's stores to apply the whole log")
}

// replica is one server of the run.
type replica struct {
	name, url string
	pid       int
	clients   int
	health    *client.Client
	report    *loadgen.Report
	lag       []loadgen.LagSample
	current   time.Duration // after the writes, until every store applied the log (-1: not within -drain)
}

func (f *replicaFlags) replicas(apiKey string) ([]*replica, error) {
	urls := strings.Split(f.urls, ",")
	var pids []string
	if f.pids != "" {
		pids = strings.Split(f.pids, ",")
		if len(pids) != len(urls) {
			return nil, fmt.Errorf("-replica-pids: %d ids for %d replicas", len(pids), len(urls))
		}
	}
	rs := make([]*replica, len(urls))
	for i, u := range urls {
		c, err := client.New(client.Config{BaseURL: strings.TrimSpace(u), APIKey: apiKey, Timeout: 5 * time.Second, MaxRetries: -1})
		if err != nil {
			return nil, err
		}
		rs[i] = &replica{name: string(rune('A' + i)), url: c.BaseURL(), health: c}
		if pids != nil {
			if rs[i].pid, err = strconv.Atoi(strings.TrimSpace(pids[i])); err != nil {
				return nil, fmt.Errorf("-replica-pids: %w", err)
			}
		}
	}
	return rs, nil
}

// run is one phase: label names it in the rows.
func (f *replicaFlags) run(ctx context.Context, w io.Writer, cfg loadgen.Config, label string, header bool) error {
	rs, err := f.replicas(cfg.APIKey)
	if err != nil {
		return err
	}
	if cfg.Clients < len(rs) {
		return fmt.Errorf("-clients %d: fewer than the %d replicas", cfg.Clients, len(rs))
	}
	if cfg.Duration <= 0 {
		return errors.New("-replicas needs a -duration")
	}
	var wcfg *loadgen.WriteConfig
	if f.writeRate > 0 {
		if wcfg, err = f.writer(cfg, rs[0].url); err != nil {
			return err
		}
	}

	lagCtx, stopLag := context.WithCancel(ctx)
	var lagWG, runWG sync.WaitGroup
	for _, r := range rs {
		lagWG.Go(func() { r.lag = loadgen.SampleLag(lagCtx, f.lagEvery, r.logStatus) })
	}
	errs := make([]error, len(rs)+1)
	for i, r := range rs {
		c := cfg
		c.Server, c.PID = r.url, r.pid
		c.Clients = cfg.Clients / len(rs)
		if i < cfg.Clients%len(rs) {
			c.Clients++
		}
		r.clients = c.Clients
		runWG.Go(func() { r.report, errs[i] = loadgen.Run(ctx, c) })
	}
	var wr *loadgen.WriteReport
	if wcfg != nil {
		runWG.Go(func() { wr, errs[len(rs)] = loadgen.Write(ctx, *wcfg) })
	}
	runWG.Wait()
	stopLag()
	lagWG.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if wr != nil {
		f.drained(ctx, rs)
	}
	if f.lagOut != "" {
		if err := appendSeries(f.lagOut, label, rs); err != nil {
			return err
		}
	}

	if header {
		fmt.Fprintln(w, "| phase | replica | queries | req/s | p50 ms | p99 ms | CPU ms/query | non-200 | partial | apply lag: log entries behind, max / p50 | apply lag: age of the oldest unapplied entry, s, max / p50 |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
	}
	var all []*loadgen.Report
	for _, r := range rs {
		entries, secs := lagCells(r.lag)
		queryRow(w, label, fmt.Sprintf("%s (%d clients)", r.name, r.clients), r.report, entries, secs)
		all = append(all, r.report)
	}
	queryRow(w, label, fmt.Sprintf("all (%d clients)", cfg.Clients), loadgen.Combine(label, all...), "", "")
	if wr != nil {
		var drained []string
		for _, r := range rs {
			if r.current < 0 {
				drained = append(drained, fmt.Sprintf("%s not within %s", r.name, f.drain))
			} else {
				drained = append(drained, fmt.Sprintf("%s after %.1f s", r.name, r.current.Seconds()))
			}
		}
		fmt.Fprintf(w, "| %s | writes through A (target %g docs/s, batches of %d) | %d docs, %d batches | **%.0f docs/s** stored | %.1f | %.1f | – | %d failed (%d requests) | %d batches late | every store current after the writes stopped: %s | |\n",
			label, f.writeRate, f.writeBatch, wr.Docs, wr.Batches, wr.DocsPerSec, ms(wr.P50), ms(wr.P99),
			wr.Failed, wr.Errors, wr.Late, strings.Join(drained, ", "))
	}
	return nil
}

func queryRow(w io.Writer, label, who string, r *loadgen.Report, entries, secs string) {
	cpu := "–"
	if r.CPUPerQuery > 0 {
		cpu = fmt.Sprintf("%.2f", ms(r.CPUPerQuery))
	}
	if entries == "" {
		entries, secs = "–", "–"
	}
	fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.1f | %.1f | %s | %d | %d | %s | %s |\n",
		label, who, r.Requests, r.ReqPerSec, ms(r.P50), ms(r.P99), cpu, r.Non200+r.Errors, r.Partial, entries, secs)
}

// lagCells are the two lag cells of a replica's row: per kept store,
// entries behind and seconds, max / p50 over the readings.
func lagCells(samples []loadgen.LagSample) (entries, secs string) {
	stores, failed := loadgen.SummariseLag(samples)
	var e, s []string
	for _, st := range stores {
		note := ""
		if st.Errors > 0 {
			note = fmt.Sprintf(" (apply errors in %d readings)", st.Errors)
		}
		e = append(e, fmt.Sprintf("%s %d / %d%s", st.Store, st.MaxBehind, st.P50Behind, note))
		s = append(s, fmt.Sprintf("%s %.2f / %.2f", st.Store, st.MaxSeconds, st.P50Seconds))
	}
	entries = strings.Join(e, "; ")
	if entries == "" {
		entries = "no store kept"
	}
	entries += fmt.Sprintf(" (%d readings", len(samples))
	if failed > 0 {
		entries += fmt.Sprintf(", %d failed", failed)
	}
	entries += ")"
	return entries, strings.Join(s, "; ")
}

func (r *replica) logStatus(ctx context.Context) (*ingest.LogStatus, error) {
	h, err := r.health.Health(ctx)
	if err != nil {
		return nil, err
	}
	if h.Log == nil {
		return nil, errors.New("health has no log status")
	}
	return h.Log, nil
}

// drained waits, at most -drain, until every replica's kept stores have
// applied the whole log, in a status read after the writes ended (health
// reuses one for up to a second), and records how long each took.
func (f *replicaFlags) drained(ctx context.Context, rs []*replica) {
	start := time.Now()
	for _, r := range rs {
		r.current = -1
	}
	for left := len(rs); left > 0 && time.Since(start) < f.drain && ctx.Err() == nil; {
		for _, r := range rs {
			if r.current >= 0 {
				continue
			}
			if st, err := r.logStatus(ctx); err == nil && !st.AsOf.Before(start) && loadgen.Current(st) {
				r.current = time.Since(start)
				left--
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writer is the write load of the phase: -write-docs upserted through
// url at -write-rate.
func (f *replicaFlags) writer(cfg loadgen.Config, url string) (*loadgen.WriteConfig, error) {
	if f.writeDocs == "" {
		return nil, errors.New("-write-rate needs -write-docs")
	}
	docs, err := readDocs(f.writeDocs)
	if err != nil {
		return nil, err
	}
	c, err := client.New(client.Config{BaseURL: url, APIKey: cfg.APIKey, MaxRetries: -1})
	if err != nil {
		return nil, err
	}
	return &loadgen.WriteConfig{
		Docs: docs, Rate: f.writeRate, Batch: f.writeBatch, Duration: cfg.Duration,
		Upsert: func(ctx context.Context, batch []spi.Document) (int, int, error) {
			res, err := c.Upsert(ctx, batch, nil)
			if err != nil {
				return 0, 0, err
			}
			return res.OK, res.Failed, nil
		},
	}, nil
}

// readDocs reads the writer's documents, leaving out lines that do not
// parse and documents the server would refuse as empty.
func readDocs(path string) ([]spi.Document, error) {
	file, format, err := corpus.ResolveInput(path, corpus.FormatAuto)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var docs []spi.Document
	for l, err := range corpus.ReadDocuments(fh, format) {
		if errors.Is(err, corpus.ErrBadInput) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if l.Doc.Title != "" || l.Doc.Text != "" || l.Doc.Vector != nil {
			docs = append(docs, l.Doc)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("-write-docs %s: no documents", path)
	}
	return docs, nil
}

// appendSeries appends each replica's lag readings to file: per kept
// store, one line of entries behind and one of seconds, in reading order
// ("-" for a reading that failed or lacked the store).
func appendSeries(file, label string, rs []*replica) error {
	fh, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for _, r := range rs {
		stores, _ := loadgen.SummariseLag(r.lag)
		for _, st := range stores {
			var behind, secs []string
			for _, s := range r.lag {
				b, sec := "-", "-"
				for _, l := range s.Stores {
					if l.Store == st.Store && s.Err == nil {
						b, sec = strconv.FormatUint(l.Behind, 10), strconv.FormatFloat(l.LagSeconds, 'f', 1, 64)
					}
				}
				behind, secs = append(behind, b), append(secs, sec)
			}
			fmt.Fprintf(fh, "%s, %s, %s, entries behind: %s\n", label, r.name, st.Store, strings.Join(behind, " "))
			fmt.Fprintf(fh, "%s, %s, %s, seconds: %s\n", label, r.name, st.Store, strings.Join(secs, " "))
		}
	}
	return fh.Close()
}
