package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	ragdapp "github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/vcache"
	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/spi"
)

func newEvalCmd(a *app) *cobra.Command {
	var (
		cfgPath  *string
		modes    string
		split    string
		half     string
		dataDir  string
		limit    int
		runsOut  string
		logLevel string
		vcDir    string
	)
	cmd := &cobra.Command{
		Use:   "eval DATASET_DIR",
		Short: "Measure retrieval quality on a BEIR-layout test collection",
		Long: "eval ingests DATASET_DIR/corpus.jsonl into the stores configured in rag.yaml,\n" +
			"runs every judged query of DATASET_DIR/queries.jsonl in each mode and prints\n" +
			"nDCG@10, Recall@100 and MRR@10 (linear gains, as pytrec_eval) and latency\n" +
			"percentiles as a markdown table, then, for every hybrid mode, its paired\n" +
			"randomization test against each single-source mode (the best one first).\n\n" +
			"--half tune|test evaluates one fixed half of the queries (eval.QueryHalf):\n" +
			"tune settings on one half, report the other.\n\n" +
			"Embedded stores are created in a fresh temporary directory (removed afterwards)\n" +
			"unless --data-dir is given; server stores (pgvector, neo4j) receive the corpus.\n\n" +
			"Nothing is embedded twice: a document already stored with the same text keeps its\n" +
			"vector (--data-dir), and every vector is kept in the vector cache, which outlives\n" +
			"the temporary directory (--vector-cache). Query texts are embedded once, before\n" +
			"the modes, without the server's query-embedding deadline: a measurement must not\n" +
			"depend on how busy the machine is.",
		Example: "  ragd eval ../shared/data/cranfield\n  ragd eval --modes keyword,hybrid ./scifact\n" +
			"  ragd eval --half tune --modes 'keyword,vector,hybrid(fusion=dbsf vector=0.5 graph=0 expand=0)' ../shared/data/cranfield",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("eval takes one DATASET_DIR, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ms, err := eval.ParseModes(modes)
			if err != nil {
				return usageError{err}
			}
			h, err := eval.ParseHalf(half)
			if err != nil {
				return usageError{err}
			}
			cfg, err := loadConfig(cmd, *cfgPath, true)
			if err != nil {
				return err
			}
			temporary := dataDir == ""
			if temporary {
				tmp, err := os.MkdirTemp("", "ragd-eval-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dataDir = tmp
			}
			cfg.DataDir = dataDir
			if err := evalVectorCache(cfg, vcDir, temporary); err != nil {
				return err
			}
			ds, err := eval.LoadBEIR(args[0], split)
			if err != nil {
				return err
			}
			inst, err := ragdapp.New(ctx, cfg, ragdapp.Options{Logger: ragdapp.NewLogger(a.stderr, logLevel), PullProgress: a.rawStderr})
			if err != nil {
				return err
			}
			defer inst.Close()

			if modesReadGraph(ms) {
				// The embedded graph is built only once something reads it:
				// build it with the corpus.
				if err := inst.WakeGraph(ctx); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stderr, "eval: ingesting %d documents...\n", len(ds.Corpus))
			progress := newCountProgress(a.stderr, "eval: ingest", "documents", nil)
			st, err := eval.Ingest(ctx, ds, inst.Pipeline, eval.IngestOptions{Progress: progress.update})
			if err != nil {
				return fmt.Errorf("eval: ingest: %w (first error: %s)", err, st.FirstError)
			}
			fmt.Fprintf(a.stderr, "eval: ingested %d documents in %s (%d skipped as empty); %s\n",
				st.OK, st.Took.Round(time.Millisecond), st.Skipped, embedSummary(inst))

			if cfg.Backends.Graph.Kind == config.KindNone && !cmd.Flags().Changed("modes") {
				ms = dropMode(ms, "graph")
			}
			qe := inst.QueryEmbedder
			if inst.VectorCache != nil && qe != nil {
				qe = inst.VectorCache.Wrap(qe, inst.EmbedderIdentity, vcache.RoleQuery)
			}
			rep, err := eval.Run(ctx, ds.Split(h), inst.Retriever, ms, eval.Options{Limit: limit, KeepRuns: runsOut != "", QueryEmbedder: qe})
			if err != nil {
				return err
			}
			if err := rep.WriteTable(a.stdout); err != nil {
				return err
			}
			if runsOut != "" {
				return writeRuns(runsOut, rep)
			}
			return nil
		},
	}
	cfgPath = addConfigFlag(cmd)
	cmd.Flags().StringVar(&modes, "modes", "keyword,vector,graph,hybrid", "comma-separated modes: keyword, vector, graph, hybrid, hybrid(SETTINGS) (see docs/eval.md)")
	cmd.Flags().StringVar(&half, "half", "all", "queries to evaluate: all, tune or test (a fixed split by query id)")
	cmd.Flags().StringVar(&split, "split", "test", "qrels split: reads DATASET_DIR/qrels/SPLIT.tsv")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory for embedded stores (default: a temporary directory)")
	cmd.Flags().IntVar(&limit, "limit", 100, "hits per query (Recall@100 needs 100)")
	cmd.Flags().StringVar(&runsOut, "runs", "", "write every mode's ranking as TREC run files with this path prefix")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level for the stores and retriever")
	cmd.Flags().StringVar(&vcDir, "vector-cache", "", "directory of the vector cache, or off (default: embedder.cache.dir under --data-dir; without --data-dir, "+
		"ragd/vectors in the user's cache directory, so that re-runs reuse the vectors)")
	return cmd
}

// evalVectorCache points the vector cache at dir ("off": none). Without a
// directory, a run on a temporary data directory keeps its vectors in the
// user's cache directory, unless rag.yaml names an absolute one.
func evalVectorCache(cfg *config.Config, dir string, temporary bool) error {
	switch {
	case dir == "off":
		cfg.Embedder.Cache.MaxMB = 0
	case dir != "":
		cfg.Embedder.Cache.Dir = dir
	case temporary && !filepath.IsAbs(cfg.Embedder.Cache.Dir):
		base, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("eval: no user cache directory for the vector cache (%v): pass --vector-cache DIR or off", err)
		}
		cfg.Embedder.Cache.Dir = filepath.Join(base, "ragd", "vectors")
	}
	return nil
}

// embedSummary says how the corpus got its vectors.
func embedSummary(inst *ragdapp.App) string {
	if inst.Pipeline == nil {
		return "no embedding"
	}
	e := inst.Pipeline.EmbedStatus()
	cached := uint64(0)
	if inst.VectorCache != nil {
		cached = inst.VectorCache.Stats().Hits[vcache.RoleDocument]
	}
	return fmt.Sprintf("vectors: %d embedded, %d from the vector cache, %d kept (text unchanged)", e.Embedded-cached, cached, e.Reused)
}

// modesReadGraph reports whether a mode queries the graph source or its
// expansion beyond the server's defaults (which read it, or not, by
// themselves).
func modesReadGraph(ms []eval.Mode) bool {
	for _, m := range ms {
		if m.Single == spi.SourceGraph || (m.Expand.Enabled != nil && *m.Expand.Enabled) {
			return true
		}
		for _, name := range []string{spi.SourceGraph, spi.SourceGraphExpand} {
			o := m.Sources[name]
			if (o.Enabled != nil && *o.Enabled) || (o.Enabled == nil && o.Weight > 0) {
				return true
			}
		}
	}
	return false
}

func dropMode(ms []eval.Mode, name string) []eval.Mode {
	out := ms[:0]
	for _, m := range ms {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}

func writeRuns(prefix string, rep *eval.Report) error {
	for _, m := range rep.Modes {
		f, err := os.Create(prefix + "." + m.Mode + ".run")
		if err != nil {
			return err
		}
		err = eval.WriteRun(f, m.Runs, "ragd-"+m.Mode)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
