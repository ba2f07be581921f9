package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/spi"
)

// recallFlags select the pgvector recall measurement: instead of a load
// run, each query's vector is searched through the pgvector store (the
// production path, vector.Backend.Retrieve) at several ef_search values
// and compared with an exact scan.
type recallFlags struct {
	dsn     string
	table   string
	efs     string
	shipped int
	tenant  string
	n       int
	k       int
	embed   int
	load    string
	m       int
	efc     int
	buildMB int
	// tenantAll measures the tenant at every -ef, not only the shipped.
	tenantAll bool
}

func (f *recallFlags) register() {
	flag.StringVar(&f.dsn, "pg-recall", "", "measure pgvector recall@k against exact search on this DSN instead of a load run")
	flag.StringVar(&f.table, "pg-table", vector.DefaultTable, "-pg-recall: the documents table")
	flag.StringVar(&f.efs, "ef", "40,100,200,400,800", "-pg-recall: ef_search values, ascending")
	flag.IntVar(&f.shipped, "ef-shipped", vector.DefaultEfSearch, "-pg-recall: the shipped ef_search (marked in the table)")
	flag.StringVar(&f.tenant, "tenant", "", "-pg-recall: also measure a tenant-filtered search (iterative scan) of this tenant at the shipped ef_search")
	flag.IntVar(&f.n, "recall-queries", 100, "-pg-recall: queries to measure (the first N with a vector)")
	flag.IntVar(&f.k, "k", 10, "-pg-recall: k")
	flag.StringVar(&f.load, "pg-load", "", "-pg-recall: first write this corpus (JSONL documents with vectors, ragd-vectors make) into the table and build its HNSW index, so the measure needs no running ragd")
	flag.BoolVar(&f.tenantAll, "tenant-every-ef", false, "-pg-recall: measure the tenant-filtered search at every -ef value, not only the shipped one")
	flag.IntVar(&f.buildMB, "pg-build-mem-mb", 3072, "-pg-load: maintenance_work_mem of the index build (pgvector builds in memory while the graph fits, about 2 KiB a 384-d row, much slower after)")
	flag.IntVar(&f.m, "pg-m", 0, "-pg-load: the HNSW index's m (default the store's)")
	flag.IntVar(&f.efc, "pg-ef-construction", 0, "-pg-load: the HNSW index's ef_construction (default the store's)")
	flag.IntVar(&f.embed, "embed-dim", 0, "-pg-recall: embed query texts without a vector with the built-in hashing embedder of this dimension (as ragd does for a store it filled)")
}

// recallRow is one ef_search value's outcome.
type recallRow struct {
	label    string
	recall   float64
	p50, p99 time.Duration
}

// run measures and prints the table. exactFile, when set, holds the exact
// answers (ragd-vectors make -exact, line i for query i); otherwise
// PostgreSQL computes them with a sequential scan.
func (f *recallFlags) run(ctx context.Context, w io.Writer, texts []string, vecs [][]float32, exactFile string) error {
	if f.embed > 0 {
		e, err := hashing.New(hashing.Config{Dimension: f.embed})
		if err != nil {
			return err
		}
		for i, v := range vecs {
			if v == nil && texts[i] != "" {
				out, err := e.Embed(ctx, []string{texts[i]})
				if err != nil {
					return err
				}
				vecs[i] = out[0]
			}
		}
	}
	var qs [][]float32
	for _, v := range vecs {
		if v != nil && len(qs) < f.n {
			qs = append(qs, v)
		}
	}
	if len(qs) == 0 {
		return fmt.Errorf("-pg-recall: no query has a vector")
	}
	if f.load != "" {
		if err := f.loadCorpus(ctx, w, len(qs[0])); err != nil {
			return err
		}
	}
	var efs []int
	for _, s := range strings.Split(f.efs, ",") {
		ef, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || ef < 1 {
			return fmt.Errorf("-ef %q: want positive integers", f.efs)
		}
		efs = append(efs, ef)
	}
	var lines []exactLine
	if exactFile != "" {
		var err error
		if lines, err = readExact(exactFile); err != nil {
			return err
		}
		if len(lines) < len(qs) {
			return fmt.Errorf("-exact: %d exact answers for %d queries", len(lines), len(qs))
		}
	}
	exactOf := func(tenant string) ([][]string, error) {
		if lines == nil {
			return f.exact(ctx, qs, tenant)
		}
		ti, err := tenantIndex(tenant)
		if err != nil {
			return nil, err
		}
		out := make([][]string, len(qs))
		for i := range qs {
			if out[i], err = lines[i].ids(ti, f.k); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	exact, err := exactOf("")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| search | recall@%d | p50 / p99 ms (1 client, in-process Retrieve) |\n|---|---|---|\n", f.k)
	reached := 0
	for _, ef := range efs {
		r, err := f.measure(ctx, qs, exact, ef, "")
		if err != nil {
			return err
		}
		r.label = fmt.Sprintf("ef_search %d", ef)
		if ef == f.shipped {
			r.label += " (shipped)"
		}
		printRecall(w, r)
		if reached == 0 && r.recall >= 0.95 {
			reached = ef
		}
	}
	if f.tenant != "" {
		ex, err := exactOf(f.tenant)
		if err != nil {
			return err
		}
		tefs := []int{f.shipped}
		if f.tenantAll {
			tefs = efs
		}
		for _, ef := range tefs {
			r, err := f.measure(ctx, qs, ex, ef, f.tenant)
			if err != nil {
				return err
			}
			r.label = fmt.Sprintf("tenant %q only, ef_search %d (a filtered query searches with twice it), iterative scan (relaxed_order)", f.tenant, ef)
			printRecall(w, r)
		}
	}
	if reached > 0 {
		fmt.Fprintf(w, "\nrecall@%d >= 0.95 from ef_search %d (of %s), over %d queries\n", f.k, reached, f.efs, len(qs))
	} else {
		fmt.Fprintf(w, "\nrecall@%d stays below 0.95 up to ef_search %d, over %d queries\n", f.k, efs[len(efs)-1], len(qs))
	}
	return nil
}

func printRecall(w io.Writer, r recallRow) {
	fmt.Fprintf(w, "| %s | %.3f | %.1f / %.1f |\n", r.label, r.recall,
		float64(r.p50.Microseconds())/1000, float64(r.p99.Microseconds())/1000)
}

// exact returns each query's true top k by a sequential scan (no index).
func (f *recallFlags) exact(ctx context.Context, qs [][]float32, tenant string) ([][]string, error) {
	conn, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `SET enable_indexscan = off; SET enable_bitmapscan = off; SET max_parallel_workers_per_gather = 0`); err != nil {
		return nil, err
	}
	q := fmt.Sprintf(`SELECT id FROM %s WHERE ($2 = '' OR tenant = $2) ORDER BY embedding <=> $1, id LIMIT $3`, pgx.Identifier(strings.Split(f.table, ".")).Sanitize())
	out := make([][]string, len(qs))
	for i, v := range qs {
		rows, err := conn.Query(ctx, q, pgvector.NewVector(v), tenant, f.k)
		if err != nil {
			return nil, err
		}
		if out[i], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// measure searches every query through the store at ef and returns the
// mean recall against exact and the latency percentiles.
func (f *recallFlags) measure(ctx context.Context, qs [][]float32, exact [][]string, ef int, tenant string) (recallRow, error) {
	b, err := vector.Open(ctx, vector.Config{DSN: f.dsn, Dimension: len(qs[0]), Table: f.table, HNSW: vector.HNSW{EfSearch: ef, M: f.m, EfConstruction: f.efc}, MaxConns: 2})
	if err != nil {
		return recallRow{}, err
	}
	defer b.Close()
	// Warm the plan and the pages once.
	if _, err := b.Retrieve(ctx, spi.VectorRequest{Vector: qs[0], K: f.k, Tenant: tenant}); err != nil {
		return recallRow{}, err
	}
	var hits, total int
	lat := make([]time.Duration, 0, len(qs))
	for i, v := range qs {
		start := time.Now()
		refs, err := b.Retrieve(ctx, spi.VectorRequest{Vector: v, K: f.k, Tenant: tenant})
		if err != nil {
			return recallRow{}, err
		}
		lat = append(lat, time.Since(start))
		total += len(exact[i])
		for _, r := range refs {
			if slices.Contains(exact[i], r.ID) {
				hits++
			}
		}
	}
	slices.Sort(lat)
	r := recallRow{p50: lat[len(lat)/2], p99: lat[min(len(lat)-1, len(lat)*99/100)]}
	if total > 0 {
		r.recall = float64(hits) / float64(total)
	}
	return r, nil
}

// loadCorpus writes the -pg-load corpus into the table through the store
// (batches of 1,000) and bulk-builds its HNSW index, and says how long
// each took.
func (f *recallFlags) loadCorpus(ctx context.Context, w io.Writer, dim int) error {
	b, err := vector.Open(ctx, vector.Config{DSN: f.dsn, Dimension: dim, Table: f.table,
		HNSW: vector.HNSW{M: f.m, EfConstruction: f.efc}, Index: vector.IndexConfig{BuildMemoryMB: f.buildMB}, MaxConns: 2})
	if err != nil {
		return err
	}
	defer b.Close()
	start := time.Now()
	var batch []spi.Document
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := b.Upsert(ctx, batch)
		n += len(batch)
		batch = batch[:0]
		return err
	}
	err = eachLine(f.load, func(line []byte) error {
		var d spi.Document
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		batch = append(batch, d)
		if len(batch) == 1000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	loaded := time.Since(start)
	start = time.Now()
	for {
		r, err := b.IndexStep(ctx)
		if err != nil {
			return err
		}
		if r.Deferred {
			// The build waits for the log to stand still (Index.Quiet).
			time.Sleep(vector.DefaultIndexQuiet / 4)
			continue
		}
		if r.Tail == 0 || (!r.Rebuilt && r.Absorbed == 0 && !r.Skipped) {
			break
		}
	}
	fmt.Fprintf(w, "loaded %d documents in %.0f s, HNSW index built in %.0f s\n\n", n, loaded.Seconds(), time.Since(start).Seconds())
	return nil
}
