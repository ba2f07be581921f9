package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Fault is one way to make a source sick and well again during a scenario.
type Fault struct {
	// Source is the retrieval source that suffers (vector, keyword, graph)
	// and Breaker the breaker that guards it.
	Source, Breaker string
	// Label names the fault in the table ("Neo4j SIGSTOPped").
	Label string
	// Inject makes the source sick; Heal makes it well (SIGCONT, clearing
	// an injected fault, a restart that returns once the server is ready).
	Inject, Heal func(ctx context.Context) error
}

// Scenario is a sequence of load phases around faults, on one server.
type Scenario struct {
	Base Config // the load of every phase; Duration is a phase's length
	// TripWithin bounds the wait for a breaker to open, RecoverWithin the
	// wait for a healed source to answer again.
	TripWithin, RecoverWithin time.Duration
	// Out receives each row as its phase ends.
	Out io.Writer
}

// Outcome is what a scenario measured beside its rows.
type Outcome struct {
	Healthy *Report
	// Recovery is, per fault label, how long after Heal returned the
	// source answered ok again (negative: not within RecoverWithin).
	Recovery map[string]time.Duration
	// TripAfter is, per fault label, how long after Inject the breaker
	// opened (negative: it did not within TripWithin).
	TripAfter map[string]time.Duration
	Rows      []*Report
}

// Run measures the healthy phase, then for each fault: the load until its
// breaker trips, a phase with the breaker open, and the load from healing
// until the source answers again.
func (s Scenario) Run(ctx context.Context, faults []Fault) (*Outcome, error) {
	out := &Outcome{Recovery: map[string]time.Duration{}, TripAfter: map[string]time.Duration{}}
	Header(s.Out)
	healthy, err := s.phase(ctx, "all sources healthy", s.Base.Duration, nil)
	if err != nil {
		return nil, err
	}
	out.Healthy = healthy
	out.Rows = append(out.Rows, healthy)
	for _, f := range faults {
		if err := f.Inject(ctx); err != nil {
			return out, fmt.Errorf("loadgen: %s: inject: %w", f.Label, err)
		}
		start := time.Now()
		r, err := s.phase(ctx, f.Label+": until its breaker opens", s.TripWithin, func(c context.Context) bool {
			st, err := breakerState(c, s.Base, f.Breaker)
			return err == nil && st == "open"
		})
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, r)
		if open, _ := breakerState(ctx, s.Base, f.Breaker); open == "open" {
			out.TripAfter[f.Label] = time.Since(start)
		} else {
			out.TripAfter[f.Label] = -1
		}
		r, err = s.phase(ctx, f.Label+": breaker open", s.Base.Duration, nil)
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, r)
		if err := f.Heal(ctx); err != nil {
			return out, fmt.Errorf("loadgen: %s: heal: %w", f.Label, err)
		}
		healed := time.Now()
		r, err = s.phase(ctx, f.Label+": healed, until the source answers", s.RecoverWithin, func(c context.Context) bool {
			return sourceOK(c, s.Base, f.Source)
		})
		if err != nil {
			return out, err
		}
		out.Rows = append(out.Rows, r)
		if sourceOK(ctx, s.Base, f.Source) {
			out.Recovery[f.Label] = time.Since(healed)
		} else {
			out.Recovery[f.Label] = -1
		}
	}
	return out, nil
}

// phase runs the load for up to d, ending early once done (polled every
// 50 ms) reports true.
func (s Scenario) phase(ctx context.Context, label string, d time.Duration, done func(context.Context) bool) (*Report, error) {
	cfg := s.Base
	cfg.Duration = d
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if done != nil {
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-t.C:
					if done(pctx) {
						cancel()
						return
					}
				}
			}
		}()
	}
	r, err := Run(pctx, cfg)
	if err != nil {
		return nil, err
	}
	r.Label = label
	Row(s.Out, r)
	return r, nil
}

// breakerState reads one breaker's state from /v1/status/breakers.
func breakerState(ctx context.Context, cfg Config, name string) (string, error) {
	var list struct {
		Breakers []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"breakers"`
	}
	if err := getJSON(ctx, cfg, "/v1/status/breakers", &list); err != nil {
		return "", err
	}
	for _, b := range list.Breakers {
		if b.Name == name {
			return b.State, nil
		}
	}
	return "", fmt.Errorf("loadgen: no breaker %q", name)
}

// sourceOK sends one query and reports whether source answered ok.
func sourceOK(ctx context.Context, cfg Config, source string) bool {
	body, _ := json.Marshal(map[string]any{"text": cfg.Queries[0]})
	resp, err := send(ctx, cfg, http.MethodPost, "/v1/query", body)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var ans struct {
		Sources map[string]struct {
			Status string `json:"status"`
		} `json:"sources"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&ans) == nil && ans.Sources[source].Status == "ok"
}

func getJSON(ctx context.Context, cfg Config, path string, v any) error {
	resp, err := send(ctx, cfg, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadgen: GET %s: HTTP %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// send makes one request to the server with the run's key; a non-nil body
// is sent as JSON.
func send(ctx context.Context, cfg Config, method, path string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, cfg.Server+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return http.DefaultClient.Do(req)
}

// SetFault sets (or with the zero fault, clears) an injected fault through
// /debug/faults (server.debug_faults must be on).
func SetFault(ctx context.Context, cfg Config, source string, fault map[string]any) error {
	method, body := http.MethodPut, []byte("{}")
	if len(fault) == 0 {
		method = http.MethodDelete
	} else {
		body, _ = json.Marshal(fault)
	}
	resp, err := send(ctx, cfg, method, "/debug/faults/"+source, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("loadgen: %s /debug/faults/%s: HTTP %d: %s", method, source, resp.StatusCode, b)
	}
	return nil
}
