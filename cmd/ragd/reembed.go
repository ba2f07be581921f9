package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	ragdapp "github.com/ragd/ragd/app"
)

func newReembedCmd(a *app) *cobra.Command {
	var (
		cfgPath  *string
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "reembed",
		Short: "Rebuild every stored vector with the configured embedder",
		Long: "reembed reads every document from the vector store (the system of record),\n" +
			"embeds its title and text with the embedder configured in rag.yaml and writes\n" +
			"the new vectors back, then records that embedder with the store. Run it after\n" +
			"changing the embedder (kind, model or prefixes): until then ragd refuses to\n" +
			"start on vectors made by another embedder. Stop the server first when the\n" +
			"stores are embedded ones. An interrupted run can simply be run again.\n\n" +
			"The dimension cannot change this way: a store of another dimension needs a\n" +
			"new directory (or table) and a fresh ingest.\n\n" +
			"The vectors made are kept in the vector cache (embedder.cache), so a run that was\n" +
			"interrupted, run again, embeds only the documents the first run had not done.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := loadConfig(cmd, *cfgPath, true)
			if err != nil {
				return err
			}
			inst, err := ragdapp.New(ctx, cfg, ragdapp.Options{Logger: ragdapp.NewLogger(a.stderr, logLevel), Reembed: true, PullProgress: a.rawStderr})
			if err != nil {
				return err
			}
			defer inst.Close()
			start := time.Now()
			n, err := inst.Reembed(ctx, newCountProgress(a.stderr, "reembed", "documents", nil).update)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "reembed: %d documents re-embedded in %s with [%s]\n", n, time.Since(start).Round(time.Millisecond), inst.EmbedderIdentity)
			return nil
		},
	}
	cfgPath = addConfigFlag(cmd)
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level for the stores")
	return cmd
}
