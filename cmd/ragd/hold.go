package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/breaker"
)

func newHoldCmd(a *app) *cobra.Command {
	var (
		reason string
		cf     *clientFlags
	)
	cmd := &cobra.Command{
		Use:   "hold NAME",
		Short: "Hold a circuit breaker open for maintenance, until ragd release",
		Long: "hold opens the named circuit breaker of a running ragd (vector, keyword,\n" +
			"graph, embedder) and keeps it open until `ragd release NAME`: queries skip\n" +
			"the backend (circuit_open), no cooldown ends the hold, no trial call is\n" +
			"admitted and no background probe runs, so the backend can be taken down\n" +
			"for maintenance. The hold names your API key, the time and --reason; the\n" +
			"console, `ragd status` and the timeline show them, and it survives a\n" +
			"restart of ragd. Needs an admin key not bound to a tenant.",
		Example: "  ragd hold graph --reason \"neo4j 5.27 upgrade\"\n  ragd release graph",
		Args:    exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(nil)
			if err != nil {
				return err
			}
			r, err := c.Hold(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, describeBreaker(r.Breaker))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", fmt.Sprintf("why, for the others who see the hold (at most %d characters)", api.MaxHoldReason))
	cf = addClientFlags(cmd)
	return cmd
}

func newReleaseCmd(a *app) *cobra.Command {
	var cf *clientFlags
	cmd := &cobra.Command{
		Use:   "release NAME",
		Short: "Close a circuit breaker now, ending a maintenance hold",
		Long: "release force-closes the named circuit breaker of a running ragd: it ends\n" +
			"a maintenance hold (ragd hold) or a forced or tripped open state at once,\n" +
			"and queries use the backend again; the next failures count from zero.\n" +
			"Needs an admin key not bound to a tenant.",
		Example: "  ragd release graph",
		Args:    exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(nil)
			if err != nil {
				return err
			}
			r, err := c.ForceClose(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, describeBreaker(r.Breaker))
			return nil
		},
	}
	cf = addClientFlags(cmd)
	return cmd
}

// exactlyOneName accepts one breaker name.
func exactlyOneName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return usageError{fmt.Errorf("%s takes one breaker name (vector, keyword, graph, embedder), got %q", cmd.CommandPath(), args)}
	}
	return nil
}

// describeBreaker is one line about a breaker's state and hold.
func describeBreaker(s breaker.Snapshot) string {
	line := s.Name + " breaker: " + strings.ReplaceAll(s.State.String(), "_", "-")
	if h := s.Hold; h != nil {
		line += ", " + holdText(*h)
	}
	return line
}

// holdText says who holds a breaker, since when and why.
func holdText(h breaker.Hold) string {
	s := "held by " + h.By + " since " + h.Since.Local().Format(time.DateTime+" MST")
	if h.Reason != "" {
		s += " (" + oneLine(h.Reason) + ")"
	}
	return s
}
