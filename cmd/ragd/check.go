package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/ingest"
)

func newCheckCmd(a *app) *cobra.Command {
	var (
		repair bool
		asJSON bool
		cf     *clientFlags
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Compare every derived store with the system of record, and repair it",
		Long: "check asks a running server (POST /v1/status/check, an admin key when auth\n" +
			"is on) to compare each derived store (keyword, graph) with the system of\n" +
			"record, document by document, by id and version, after letting the store\n" +
			"catch up with the change log. It prints, per store, how many documents are\n" +
			"missing, stale (an older version) or extra (not in the record), with up\n" +
			"to 20 examples. With --repair the server rewrites what differs from the\n" +
			"record's current documents and compares again; documents written before\n" +
			"the change log existed are given a version first.\n\n" +
			"The server runs the same check, with repair, at start unless\n" +
			"ingest.check_at_start is false.\n\n" +
			"Exits 0 when every store equals the record (after the repair, with\n" +
			"--repair); 1 when differences remain or a store could not be checked.",
		Example: "  ragd check\n  ragd check --repair\n  ragd check --json | jq '.stores[] | {store, missing, stale, extra}'",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(nil)
			if err != nil {
				return err
			}
			rep, err := c.Check(cmd.Context(), repair)
			if err != nil {
				return err
			}
			if asJSON {
				var pretty strings.Builder
				enc := json.NewEncoder(&pretty)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
				fmt.Fprint(a.stdout, pretty.String())
			} else {
				printCheck(a.stdout, *rep, repair)
			}
			return checkVerdict(*rep, repair)
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "rewrite what differs from the record, then compare again")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's report as JSON")
	cf = addClientFlags(cmd)
	return cmd
}

func printCheck(w io.Writer, rep ingest.CheckReport, repaired bool) {
	fmt.Fprintf(w, "change log head: %d\n", rep.Head)
	if rep.Legacy > 0 {
		verb := "have no version yet (run with --repair to give them one)"
		if repaired {
			verb = "were given a version"
		}
		fmt.Fprintf(w, "record documents written before the change log: %d %s\n", rep.Legacy, verb)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "STORE\tAPPLIED\tRECORD\tSTORE DOCS\tMISSING\tSTALE\tEXTRA"
	if repaired {
		header += "\tREPAIRED\tREMAINING"
	}
	fmt.Fprintln(tw, header+"\tERROR")
	for _, s := range rep.Stores {
		line := fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d", s.Store, s.Applied, s.RecordDocuments, s.Documents, s.Missing, s.Stale, s.Extra)
		if repaired {
			line += fmt.Sprintf("\t%d\t%d", s.Repaired, s.Remaining)
		}
		errText := "-"
		if s.Error != "" {
			errText = oneLine(s.Error)
		}
		if s.Dormant {
			errText = "not checked: dormant (nothing reads it)"
		}
		fmt.Fprintln(tw, line+"\t"+errText)
	}
	tw.Flush()
	for _, s := range rep.Stores {
		if len(s.Examples) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s differs (first %d of %d):\n", s.Store, len(s.Examples), s.Differences())
		for _, d := range s.Examples {
			fmt.Fprintf(w, "  %-8s %q  record v%d  store v%d\n", d.Kind, truncateRunes(d.ID, 60), d.RecordVersion, d.StoreVersion)
		}
	}
}

// checkVerdict fails when a store could not be checked or still differs.
func checkVerdict(rep ingest.CheckReport, repaired bool) error {
	var bad []string
	for _, s := range rep.Stores {
		left := s.Differences()
		if repaired {
			left = s.Remaining
		}
		switch {
		case s.Error != "":
			bad = append(bad, s.Store+" could not be checked")
		case left > 0:
			bad = append(bad, fmt.Sprintf("%s differs from the record in %d documents", s.Store, left))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	msg := strings.Join(bad, "; ")
	if !repaired {
		msg += " (ragd check --repair rewrites them from the record)"
	}
	return errors.New(msg)
}
