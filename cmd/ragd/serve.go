package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	ragdapp "github.com/ragd/ragd/app"
)

func newServeCmd(a *app) *cobra.Command {
	var (
		cfgPath *string
		demo    bool
		listen  string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the ragd HTTP service",
		Long: "serve opens the stores configured in rag.yaml, wires a circuit breaker per\n" +
			"backend and answers the HTTP API until SIGINT or SIGTERM, then stops\n" +
			"accepting, finishes in-flight requests within server.shutdown_grace_s and\n" +
			"closes the stores.\n\n" +
			"With --demo, the bundled sample corpus (two dozen documents about resilient\n" +
			"retrieval) is loaded first, once per data directory: a file demo-seeded in\n" +
			"data_dir records it, so later starts keep your edits and deletions of the\n" +
			"sample documents (remove the file to load the corpus again).",
		Example: "  ragd serve --demo\n  ragd serve -c deploy/rag.servers.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := loadConfig(cmd, *cfgPath, false)
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.Server.Listen = listen
			}
			ml := ragdapp.SetMemoryLimit(cfg, os.Getenv)
			logger := ragdapp.NewLogger(a.stderr, cfg.Log.Level)
			if lg := ragdapp.NewLimitGuard(ml, logger, nil, nil); lg != nil {
				gctx, stop := context.WithCancel(ctx)
				defer stop()
				go lg.Run(gctx, limitGuardEvery)
			}
			inst, err := ragdapp.New(ctx, cfg, ragdapp.Options{Logger: logger, Version: version,
				KeepState: true, ModelFallback: true, PullProgress: a.rawStderr})
			if err != nil {
				return err
			}
			defer inst.Close()
			if demo {
				n, err := inst.LoadDemo(ctx)
				if err != nil {
					return err
				}
				if n > 0 {
					fmt.Fprintf(a.stderr, "ragd: loaded %d sample documents\n", n)
				}
			}
			ln, err := ragdapp.Listen(cfg)
			if err != nil {
				return err
			}
			if fb := inst.EmbedderFallback; fb != nil {
				fmt.Fprintf(a.stderr, "ragd: WARNING: no semantic search: the built-in model %s is unavailable (%s), so the hashing embedder stands in.\n"+
					"ragd: fix: %s\n", fb.Model, fb.Reason, fb.Fix)
			}
			fmt.Fprintf(a.stderr, "ragd: serving on http://%s (data in %s; Go memory limit %s)\n", ln.Addr(), cfg.DataDir, ml)
			return inst.Serve(ctx, ln)
		},
	}
	cfgPath = addConfigFlag(cmd)
	cmd.Flags().BoolVar(&demo, "demo", false, "load the bundled sample corpus before serving")
	cmd.Flags().StringVar(&listen, "listen", "", "override server.listen (host:port)")
	return cmd
}

// limitGuardEvery is how often ragd serve compares the live heap with
// the soft memory limit (app.LimitGuard): a collection a few seconds
// apart at most while the limit binds.
const limitGuardEvery = 5 * time.Second

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"
