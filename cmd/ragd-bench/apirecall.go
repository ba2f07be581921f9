package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/ragd/ragd/internal/loadgen"
)

// apiRecallFlags select the recall of a running ragd's answers against
// exact answers computed beforehand (ragd-vectors make -exact): instead of
// a load run, the first -recall-queries queries are sent one at a time,
// vector only, with -body (the sources to switch off), and each answer's
// hits are compared with the query's exact top k.
type apiRecallFlags struct {
	exact string
}

func (f *apiRecallFlags) register() {
	flag.StringVar(&f.exact, "exact", "", "measure recall@k of the answers against this file of exact answers (ragd-vectors make -exact; line i answers query i) instead of a load run; uses -recall-queries, -k and -tenant (a tenant t<i> is compared with the exact answer of tenant i)")
}

type exactLine struct {
	All     []exactHit   `json:"all"`
	Tenants [][]exactHit `json:"tenants"`
}

type exactHit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// readExact reads the exact answers, one line per query.
func readExact(path string) ([]exactLine, error) {
	var out []exactLine
	err := eachLine(path, func(b []byte) error {
		var l exactLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		out = append(out, l)
		return nil
	})
	return out, err
}

// exactIDs returns query i's exact top k ids overall (tenant < 0) or in
// tenant index t.
func (l exactLine) ids(tenant, k int) ([]string, error) {
	hits := l.All
	if tenant >= 0 {
		if tenant >= len(l.Tenants) {
			return nil, fmt.Errorf("the exact answers have %d tenants, not tenant %d", len(l.Tenants), tenant)
		}
		hits = l.Tenants[tenant]
	}
	var ids []string
	for _, h := range hits[:min(k, len(hits))] {
		ids = append(ids, h.ID)
	}
	return ids, nil
}

// tenantIndex maps a tenant name of scripts/bench.sh ("t1") to its index
// in the exact answers; -1 for none.
func tenantIndex(name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	var i int
	if _, err := fmt.Sscanf(name, "t%d", &i); err != nil || fmt.Sprintf("t%d", i) != name {
		return 0, fmt.Errorf("-tenant %q: the exact answers know tenants named t0, t1 and so on", name)
	}
	return i, nil
}

// run measures and prints one markdown row: the label, recall@k, p50 /
// p99 latency of the (serial) queries.
func (f *apiRecallFlags) run(ctx context.Context, w io.Writer, cfg loadgen.Config, rf recallFlags, label string) error {
	exact, err := readExact(f.exact)
	if err != nil {
		return err
	}
	ti, err := tenantIndex(rf.tenant)
	if err != nil {
		return err
	}
	n := min(rf.n, len(exact), len(cfg.Vectors))
	if n == 0 {
		return fmt.Errorf("-exact: no query with a vector and an exact answer")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	var hits, total int
	lat := make([]time.Duration, 0, n)
	for i := range n {
		want, err := exact[i].ids(ti, rf.k)
		if err != nil {
			return err
		}
		body := map[string]any{}
		for k, v := range cfg.Body {
			body[k] = v
		}
		body["vector"], body["limit"] = cfg.Vectors[i], rf.k
		if rf.tenant != "" {
			body["tenant"] = rf.tenant
		}
		raw, _ := json.Marshal(body) // maps of JSON values
		start := time.Now()
		got, err := queryIDs(ctx, client, cfg, raw)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		lat = append(lat, time.Since(start))
		total += len(want)
		for _, id := range got {
			if slices.Contains(want, id) {
				hits++
			}
		}
	}
	slices.Sort(lat)
	recall := 0.0
	if total > 0 {
		recall = float64(hits) / float64(total)
	}
	fmt.Fprintf(w, "| %s | %.3f | %.1f / %.1f |\n", label, recall,
		float64(lat[len(lat)/2].Microseconds())/1000, float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000)
	return nil
}

// queryIDs sends one query and returns its hits' ids.
func queryIDs(ctx context.Context, client *http.Client, cfg loadgen.Config, body []byte) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Server+"/v1/query", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	var ans struct {
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
		Partial bool `json:"partial"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, err
	}
	if ans.Partial {
		return nil, fmt.Errorf("a partial answer: %.300s", b)
	}
	ids := make([]string, len(ans.Hits))
	for i, h := range ans.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}
