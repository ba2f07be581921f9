package main

import (
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
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// querySources are the names --sources accepts, in display order.
var querySources = spi.QuerySources()

const titleWidth = 60

type queryFlags struct {
	limit, offset int
	minSources    int
	explain       bool
	tenant        string
	sources       []string
	fusion        string
	filters       []string
	asJSON        bool
}

func newQueryCmd(a *app) *cobra.Command {
	var f queryFlags
	var cf *clientFlags
	cmd := &cobra.Command{
		Use:   "query TEXT",
		Short: "Ask a running ragd server a retrieval query",
		Long: "query sends TEXT to POST /v1/query and prints the ranked hits (rank, id,\n" +
			"fused score, title), then what each source did (status, time, hits\n" +
			"returned, error), whether the answer is partial or degraded, and the time\n" +
			"the server took. --explain adds each source's rank, raw score and\n" +
			"contribution under every hit; --json prints the server's answer as is.\n\n" +
			"A partial or degraded answer is still an answer (exit 0, with a warning).\n" +
			"When fewer sources answered than the query's min_sources, the server\n" +
			"answers 503 not_enough_sources: each source's status is printed and the\n" +
			"exit code is 1.",
		Example: "  ragd query \"boundary layer transition\"\n" +
			"  ragd query \"heat transfer\" --limit 5 --explain\n" +
			"  ragd query \"wing flutter\" --sources keyword,vector --fusion dbsf\n" +
			"  ragd query \"shock waves\" --filter lang=en --filter year=1961 --filter year=1962 --json",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("query takes one TEXT argument (quote it), got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := f.query(args[0])
			if err != nil {
				return err
			}
			c, err := cf.client(nil)
			if err != nil {
				return err
			}
			res, err := c.Query(cmd.Context(), q)
			if err != nil {
				var e *client.Error
				if errors.As(err, &e) && e.Detail.Code == api.CodeNotEnoughSources {
					printNotEnoughSources(a.stdout, e)
				}
				return err
			}
			if f.asJSON {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			printResult(a.stdout, res, f.explain)
			if res.Partial || res.Degraded {
				fmt.Fprintf(a.stderr, "ragd: warning: the answer is %s; see the sources above\n", flagWords(res))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.limit, "limit", "n", 10, "hits per page")
	fl.IntVar(&f.offset, "offset", 0, "page start within the fused ranking")
	fl.IntVar(&f.minSources, "min-sources", 0, "sources that must answer (default: the server's retriever.min_sources)")
	fl.BoolVar(&f.explain, "explain", false, "show each source's rank, raw score and contribution per hit")
	fl.StringVar(&f.tenant, "tenant", "", "query this tenant's documents (a tenant-bound key sets it)")
	fl.StringSliceVar(&f.sources, "sources", nil, "sources to use, of "+strings.Join(querySources, ", ")+" (default: the server's)")
	fl.StringVar(&f.fusion, "fusion", "", "fusion: rrf, score or dbsf (default: the server's)")
	fl.StringArrayVar(&f.filters, "filter", nil, "metadata filter key=value, or a JSON filter ({\"page\": {\"$gte\": 3}}, docs/api.md); repeat for more (same key: any value, different keys and JSON filters: all)")
	fl.BoolVar(&f.asJSON, "json", false, "print the server's JSON answer")
	cf = addClientFlags(cmd)
	return cmd
}

// query builds the request, rejecting bad flags as usage errors.
func (f *queryFlags) query(text string) (retriever.Query, error) {
	q := retriever.Query{Text: text, Limit: f.limit, Offset: f.offset, Explain: f.explain, Tenant: f.tenant, MinSources: f.minSources}
	if strings.TrimSpace(text) == "" {
		return q, usageError{errors.New("the query TEXT is empty")}
	}
	if f.limit < 1 {
		return q, usageError{fmt.Errorf("--limit must be at least 1, got %d", f.limit)}
	}
	if f.offset < 0 || f.minSources < 0 {
		return q, usageError{errors.New("--offset and --min-sources must not be negative")}
	}
	if len(f.sources) > 0 {
		for _, s := range f.sources {
			if !slices.Contains(querySources, s) {
				return q, usageError{fmt.Errorf("--sources: unknown source %q (want %s)", s, strings.Join(querySources, ", "))}
			}
		}
		q.Sources = retriever.Only(f.sources...)
	}
	switch f.fusion {
	case "", retriever.FusionRRF, retriever.FusionScore, retriever.FusionDBSF:
		q.Fusion.Mode = f.fusion
	default:
		return q, usageError{fmt.Errorf("--fusion must be rrf, score or dbsf, got %q", f.fusion)}
	}
	strs := map[string][]string{}
	var parts []spi.Filter
	for _, kv := range f.filters {
		if strings.HasPrefix(strings.TrimSpace(kv), "{") {
			jf, err := spi.ParseFilter([]byte(kv))
			if err != nil {
				return q, usageError{fmt.Errorf("--filter: %w", err)}
			}
			parts = append(parts, jf)
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return q, usageError{fmt.Errorf("--filter %q is neither key=value nor a JSON filter", kv)}
		}
		if !slices.Contains(strs[k], v) {
			strs[k] = append(strs[k], v)
		}
	}
	q.Filter = spi.And(append([]spi.Filter{spi.StringFilter(strs)}, parts...)...)
	return q, nil
}

func printResult(w io.Writer, res *retriever.Result, explain bool) {
	if len(res.Hits) == 0 {
		fmt.Fprintln(w, "no hits")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RANK\tID\tSCORE\tTITLE")
		for _, h := range res.Hits {
			title := ""
			if h.Document != nil {
				title = oneLine(h.Document.Title)
				if title == "" {
					title = oneLine(h.Document.Text)
				}
			} else {
				title = "(not hydrated)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%.5f\t%s\n", h.Rank, h.ID, h.Score, truncateRunes(title, titleWidth))
			if explain {
				for _, name := range sourceOrder(h.Explain) {
					c := h.Explain[name]
					if c == nil {
						fmt.Fprintf(tw, "\t\t\t  %s: not returned\n", name)
						continue
					}
					fmt.Fprintf(tw, "\t\t\t  %s: rank %d, raw score %.4f, contribution %.5f\n", name, c.Rank, c.RawScore, c.Contribution)
				}
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	printSources(w, "sources", res.Sources)
	if len(res.Hydration) > 0 {
		printSources(w, "hydration", res.Hydration)
	}
	if len(res.Missing) > 0 {
		fmt.Fprintf(w, "missing documents: %s\n", strings.Join(res.Missing, ", "))
	}
	flags := flagWords(res)
	fmt.Fprintf(w, "%d hits of %d (offset %d), fusion %s, took %.1f ms, %s\n",
		len(res.Hits), res.Total, res.Offset, res.Fusion.Mode, res.TookMS, flags)
}

// flagWords says whether res is partial or degraded.
func flagWords(res *retriever.Result) string {
	switch {
	case res.Partial && res.Degraded:
		return "partial and degraded"
	case res.Partial:
		return "partial"
	case res.Degraded:
		return "degraded"
	}
	return "complete"
}

// printSources writes one line per source, known sources first.
func printSources(w io.Writer, heading string, sources map[string]retriever.SourceStatus) {
	fmt.Fprintf(w, "%s:\n", heading)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range sourceOrder(sources) {
		s := sources[name]
		extra := ""
		if s.RetryInMS > 0 {
			extra = "retry in " + (time.Duration(s.RetryInMS) * time.Millisecond).String()
		}
		if s.Error != "" {
			if extra != "" {
				extra += ", "
			}
			extra += "error: " + s.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.1f ms\t%d returned\t%s\n", name, s.Status, s.TookMS, s.Returned, extra)
	}
	tw.Flush()
}

func printNotEnoughSources(w io.Writer, he *client.Error) {
	healthy := 0
	if he.Detail.Healthy != nil {
		healthy = *he.Detail.Healthy
	}
	fmt.Fprintf(w, "not enough sources: %d answered, %d required\n", healthy, he.Detail.Required)
	if len(he.Detail.Sources) > 0 {
		printSources(w, "sources", he.Detail.Sources)
	}
}

// sourceOrder lists the known sources first, then any others sorted.
func sourceOrder[V any](m map[string]V) []string {
	var out []string
	for _, s := range querySources {
		if _, ok := m[s]; ok {
			out = append(out, s)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(querySources, k) {
			out = append(out, k)
		}
	}
	return out
}

// oneLine collapses whitespace so a title fits one table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
