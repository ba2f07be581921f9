package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/eval"
	ragdapp "github.com/ragd/ragd/internal/app"
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
	)
	cmd := &cobra.Command{
		Use:   "eval DATASET_DIR",
		Short: "Measure retrieval quality on a BEIR-layout test collection",
		Long: "eval ingests DATASET_DIR/corpus.jsonl into the stores configured in rag.yaml,\n" +
			"runs every judged query of DATASET_DIR/queries.jsonl in each mode and prints\n" +
			"nDCG@10, Recall@100 and MRR@10 (linear gains, as pytrec_eval) and latency\n" +
			"percentiles as a markdown table, then, for every hybrid mode, its paired\n" +
			"randomization test against the best single-source mode.\n\n" +
			"--half tune|test evaluates one fixed half of the queries (eval.QueryHalf):\n" +
			"tune settings on one half, report the other.\n\n" +
			"Embedded stores are created in a fresh temporary directory (removed afterwards)\n" +
			"unless --data-dir is given; server stores (pgvector, neo4j) receive the corpus.",
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
			if dataDir == "" {
				tmp, err := os.MkdirTemp("", "ragd-eval-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dataDir = tmp
			}
			cfg.DataDir = dataDir
			ds, err := eval.LoadBEIR(args[0], split)
			if err != nil {
				return err
			}
			inst, err := ragdapp.New(ctx, cfg, ragdapp.Options{Logger: ragdapp.NewLogger(a.stderr, logLevel)})
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
			st, err := eval.Ingest(ctx, ds, inst.Pipeline, eval.IngestOptions{})
			if err != nil {
				return fmt.Errorf("eval: ingest: %w (first error: %s)", err, st.FirstError)
			}
			fmt.Fprintf(a.stderr, "eval: ingested %d documents in %s (%d skipped as empty)\n", st.OK, st.Took.Round(time.Millisecond), st.Skipped)

			if cfg.Backends.Graph.Kind == config.KindNone && !cmd.Flags().Changed("modes") {
				ms = dropMode(ms, "graph")
			}
			rep, err := eval.Run(ctx, ds.Split(h), inst.Retriever, ms, eval.Options{Limit: limit, KeepRuns: runsOut != ""})
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
	return cmd
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
