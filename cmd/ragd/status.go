package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

func newStatusCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		strict bool
		cf     *clientFlags
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the health and circuit breakers of a running ragd server",
		Long: "status reads GET /v1/status/health and GET /v1/status/breakers and prints\n" +
			"the overall status, each component's health (vector, keyword, graph,\n" +
			"embedder) and each circuit breaker: state, failures against the threshold,\n" +
			"how often it opened and, while open, when it admits a trial call, and\n" +
			"how far each derived store (keyword, graph) is behind the change log\n" +
			"(entries and the age of the oldest one not applied).\n\n" +
			"Overall status: up (every component up), degraded (queries are answered,\n" +
			"possibly partially: some component is down or a breaker is not closed),\n" +
			"down (no retrieval source is usable).\n\n" +
			"Exit codes: 0 when up; 0 with a warning on stderr when degraded, or 1 with\n" +
			"--strict; 1 when down or when the server cannot be asked.",
		Example: "  ragd status\n  ragd status --strict && echo all healthy\n  ragd status --json | jq .breakers",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(nil)
			if err != nil {
				return err
			}
			rep, err := fetchStatus(cmd.Context(), c)
			if err != nil {
				return err
			}
			if asJSON {
				b, err := json.MarshalIndent(struct {
					Health   *api.HealthResponse   `json:"health"`
					Breakers *api.BreakersResponse `json:"breakers"`
				}{rep.health, rep.breakers}, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s\n", b)
			} else {
				printStatus(a.stdout, c.BaseURL(), rep)
			}
			switch rep.health.Status {
			case spi.StatusUp:
				return nil
			case spi.StatusDegraded:
				msg := "ragd is degraded: queries are answered, possibly partially (" + notUp(*rep.health) + ")"
				if strict {
					return errors.New(msg + "; failing because of --strict")
				}
				fmt.Fprintf(a.stderr, "ragd: warning: %s\n", msg)
				return nil
			}
			return fmt.Errorf("ragd is %s: no retrieval source is usable (%s)", rep.health.Status, notUp(*rep.health))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"health": ..., "breakers": ...} as the server answered them`)
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when the status is degraded, not only when down")
	cf = addClientFlags(cmd)
	return cmd
}

type statusReport struct {
	health   *api.HealthResponse
	breakers *api.BreakersResponse
}

// fetchStatus reads both endpoints. The health endpoint answers 503 with
// its report when the server is down; that is a report, not an error.
func fetchStatus(ctx context.Context, c *client.Client) (*statusReport, error) {
	h, err := c.Health(ctx)
	if err != nil {
		return nil, err
	}
	if h.Status == "" {
		return nil, fmt.Errorf("the answer to GET /v1/status/health has no status")
	}
	b, err := c.Breakers(ctx)
	if err != nil {
		return nil, err
	}
	return &statusReport{health: h, breakers: b}, nil
}

func printStatus(w io.Writer, server string, rep *statusReport) {
	usable := "none"
	if len(rep.health.Usable) > 0 {
		usable = strings.Join(rep.health.Usable, ", ")
	}
	fmt.Fprintf(w, "ragd at %s: %s (usable sources: %s)\n\n", server, rep.health.Status, usable)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSTATUS\tLATENCY\tDETAIL")
	for _, name := range sourceOrder(rep.health.Components) {
		if strings.HasPrefix(name, "breaker:") {
			continue // in the breakers table
		}
		c := rep.health.Components[name]
		lat := "-"
		if c.LatencyMS != nil {
			lat = fmt.Sprintf("%.1f ms", *c.LatencyMS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, c.Status, lat, oneLine(c.Detail))
	}
	tw.Flush()
	fmt.Fprintln(w)
	printLag(w, rep.health.Log)

	if len(rep.breakers.Breakers) == 0 {
		fmt.Fprintln(w, "circuit breakers: none (disabled on this server)")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BREAKER\tSTATE\tFAILURES\tOPENED\tRETRY IN")
	for _, b := range rep.breakers.Breakers {
		retry := "-"
		switch {
		case b.Hold != nil:
			retry = "never: " + holdText(*b.Hold)
		case b.RetryIn > 0:
			retry = b.RetryIn.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\n", b.Name, b.State, b.FailureCount, b.FailureThreshold, b.OpenedTotal, retry)
	}
	tw.Flush()
}

// printLag prints how far each derived store is behind the change log.
func printLag(w io.Writer, log *ingest.LogStatus) {
	if log == nil {
		return
	}
	fmt.Fprintf(w, "change log: head %d\n", log.Head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DERIVED STORE\tAPPLIED\tBEHIND\tLAG\tERROR")
	for _, l := range log.Stores {
		lag := "-"
		if l.Behind > 0 {
			lag = (time.Duration(l.LagSeconds*1000) * time.Millisecond).Round(100 * time.Millisecond).String()
		}
		errText := "-"
		if l.Error != "" {
			errText = oneLine(l.Error)
		}
		if l.Dormant {
			lag, errText = "dormant", "not kept: nothing reads it; a query that asks for it builds it"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", l.Store, l.Applied, l.Behind, lag, errText)
	}
	tw.Flush()
	if e := log.Embedding; e != nil {
		fmt.Fprintf(w, "embedding: %d texts pending", e.Pending)
		if e.Pending > 0 && e.ETASeconds > 0 {
			fmt.Fprintf(w, " (%.1f/s, ETA %s)", e.RatePerSecond, (time.Duration(e.ETASeconds*1000) * time.Millisecond).Round(time.Second))
		}
		fmt.Fprintf(w, "; %d embedded, %d kept their stored vector since start\n", e.Embedded, e.Reused)
	}
	fmt.Fprintln(w)
}

// notUp names the components that are not up.
func notUp(h api.HealthResponse) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(h.Components)) {
		if c := h.Components[name]; c.Status != spi.StatusUp {
			parts = append(parts, name+" "+string(c.Status))
		}
	}
	if len(parts) == 0 {
		return "no component reported"
	}
	return strings.Join(parts, ", ")
}
