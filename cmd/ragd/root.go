package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad flags or arguments
)

// app is what every subcommand may use instead of globals: where to write
// and, later, the shared logger and configuration.
type app struct {
	stdin io.Reader
	// stdout and stderr escape control characters on a terminal
	// (termSafe): everything ragd prints goes through them.
	stdout, stderr io.Writer
	// rawStderr is stderr as given, for progress bars, which draw with
	// control characters of their own and print no stored text.
	rawStderr io.Writer
}

// subcommands lists the constructors of ragd's subcommands, one per file.
// To add a subcommand, write newXxxCmd(*app) *cobra.Command in xxx.go and
// add it here.
func subcommands() []func(*app) *cobra.Command {
	return []func(*app) *cobra.Command{
		newBreakerCmd,
		newCheckCmd,
		newEmbedCmd,
		newEvalCmd,
		newHoldCmd,
		newReembedCmd,
		newReleaseCmd,
		newIngestCmd,
		newModelCmd,
		newQueryCmd,
		newServeCmd,
		newStatusCmd,
	}
}

// run executes ragd with args (without the program name), reading
// os.Stdin, and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWithInput(ctx, args, os.Stdin, stdout, stderr)
}

// runWithInput is run reading stdin from in.
func runWithInput(ctx context.Context, args []string, in io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: in, stdout: termSafe(stdout), stderr: termSafe(stderr), rawStderr: stderr}
	defer flushTerm(a.stdout)
	defer flushTerm(a.stderr)
	root := newRootCmd(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(a.stderr, "ragd: %v\n", explain(err))
	var ue usageError
	if errors.As(err, &ue) {
		// Point at the help of the command that failed.
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitFailure
}

// newRootCmd builds the "ragd" command with every subcommand attached.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "ragd",
		Short: "ragd is a hybrid retrieval service",
		Long: "ragd answers retrieval queries by fusing vector, keyword and graph\n" +
			"search, with every backend behind a circuit breaker.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q", args[0])}
			}
			return cmd.Help()
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, newCmd := range subcommands() {
		root.AddCommand(newCmd(a))
	}
	return root
}

// usageError marks errors in flags or arguments (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}
