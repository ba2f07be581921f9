// Package loadgen drives a running ragd with concurrent query clients over
// loopback and summarises what came back: throughput, latency percentiles,
// the server's CPU time per query, each source's share of answers and the
// breaker transitions seen during the run. It is the engine of
// `scripts/bench.sh load`; nothing in the service imports it.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one bounded load run.
type Config struct {
	// Server is the base URL, e.g. http://127.0.0.1:8080.
	Server string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Queries are the query texts, sent round-robin; an empty text is not
	// sent (a vector-only query).
	Queries []string
	// Vectors, when set, holds each query's vector (Vectors[i] goes with
	// Queries[i]; nil sends none), for a server whose stores hold
	// caller-supplied vectors.
	Vectors [][]float32
	// Body, when set, is merged into every request body (a JSON object,
	// e.g. {"sources":{"graph":{"enabled":false}}}); "text" is set per query.
	Body map[string]any
	// Clients is the number of concurrent clients.
	Clients int
	// Duration bounds the run in time, MaxRequests in requests (0: no bound);
	// the run ends at whichever comes first.
	Duration    time.Duration
	MaxRequests int
	// PID, when non-zero, is the server's process id: its CPU time over the
	// run is read from /proc to report CPU per query.
	PID int
	// Timeout is each request's client-side timeout.
	Timeout time.Duration
	// Rate, when positive, makes the run open-loop: requests arrive at
	// Rate a second on a fixed schedule, whatever the answers do, and
	// Clients bounds the requests outstanding. An arrival that finds every
	// client busy is not sent and is counted in Report.Missed. Latency is
	// measured from the scheduled arrival. Zero is closed-loop: each client
	// sends its next request when the previous one is answered.
	Rate float64
}

// Validate reports a config that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Server == "":
		return errors.New("loadgen: no server")
	case len(c.Queries) == 0:
		return errors.New("loadgen: no queries")
	case c.Vectors != nil && len(c.Vectors) != len(c.Queries):
		return fmt.Errorf("loadgen: %d vectors for %d queries", len(c.Vectors), len(c.Queries))
	case c.Clients < 1:
		return fmt.Errorf("loadgen: clients %d, want >= 1", c.Clients)
	case c.Duration <= 0 && c.MaxRequests <= 0:
		return errors.New("loadgen: unbounded run: set a duration or a request count")
	case c.Rate < 0:
		return fmt.Errorf("loadgen: rate %g, want >= 0", c.Rate)
	}
	return nil
}

// Sample is one request's outcome.
type Sample struct {
	Start   time.Time
	Latency time.Duration
	Status  int // HTTP status; 0 when the request failed without one
	Partial bool
	// Sources maps each source to its status in the answer, Took to the
	// time the server reports it took (took_ms).
	Sources map[string]string
	Took    map[string]time.Duration
}

// Report summarises a run.
type Report struct {
	Label    string
	Requests int
	Non200   int
	Errors   int // transport errors
	Partial  int
	// Missed counts the arrivals of an open-loop run that found every
	// client busy and were not sent.
	Missed      int
	Elapsed     time.Duration
	ReqPerSec   float64
	P50, P99    time.Duration
	Max         time.Duration
	CPUPerQuery time.Duration // 0 when no PID was given
	// SourceOK is, per source, the share of 200 answers in which the source
	// answered ok; SourceStatus counts every status seen per source.
	SourceOK     map[string]float64
	SourceStatus map[string]map[string]int
	// Transitions are the breaker transitions counted by the server during
	// the run, "name from→to" → count; not counted when TransitionsUnknown
	// says why (ragd was restarted or not answering at the run's end, as
	// in a kill -9 drill).
	Transitions        map[string]int
	TransitionsUnknown string
	Samples            []Sample `json:"-"`
}

// Run executes one bounded run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	client := &http.Client{
		Timeout:   cfg.Timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients * 2, MaxConnsPerHost: cfg.Clients * 2},
	}
	bodies := make([][]byte, len(cfg.Queries))
	for i, q := range cfg.Queries {
		m := make(map[string]any, len(cfg.Body)+1)
		for k, v := range cfg.Body {
			m[k] = v
		}
		if q != "" {
			m["text"] = q
		}
		if cfg.Vectors != nil && cfg.Vectors[i] != nil {
			m["vector"] = cfg.Vectors[i]
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("loadgen: body: %w", err)
		}
		bodies[i] = b
	}
	before, err := transitions(ctx, client, cfg)
	if err != nil {
		return nil, err
	}
	cpu0, _ := procCPU(cfg.PID)

	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	var (
		mu      sync.Mutex
		samples []Sample
		missed  int
		wg      sync.WaitGroup
	)
	start := time.Now()
	if cfg.Rate > 0 {
		missed = openLoop(ctx, client, cfg, bodies, start, func(s Sample) {
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		})
	} else {
		var next atomic.Int64
		for range cfg.Clients {
			wg.Go(func() {
				var mine []Sample
				for ctx.Err() == nil {
					n := int(next.Add(1)) - 1
					if cfg.MaxRequests > 0 && n >= cfg.MaxRequests {
						break
					}
					s, ok := one(ctx, client, cfg, bodies[n%len(bodies)], time.Now())
					if !ok {
						break // the run's own deadline cut the request
					}
					mine = append(mine, s)
				}
				mu.Lock()
				samples = append(samples, mine...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, cpuErr := procCPU(cfg.PID)
	r := summarise(samples, elapsed)
	r.Missed = missed
	if cfg.PID != 0 && cpuErr == nil && r.Requests > 0 {
		r.CPUPerQuery = (cpu1 - cpu0) / time.Duration(r.Requests)
	}
	r.Transitions, r.TransitionsUnknown = transitionsDuring(context.Background(), client, cfg, before)
	return r, nil
}

// transitionsDuring is what the server's counters added since before, or
// why that is unknown: /metrics does not answer at the run's end, or a
// counter went back (ragd restarted, its counters from zero).
func transitionsDuring(ctx context.Context, client *http.Client, cfg Config, before map[string]int) (map[string]int, string) {
	after, err := transitions(ctx, client, cfg)
	if err != nil {
		return nil, "metrics not read at the end"
	}
	out := map[string]int{}
	for k, v := range before {
		if after[k] < v {
			return nil, "ragd restarted"
		}
	}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out, ""
}

// openLoop sends requests at cfg.Rate a second from start until ctx ends
// or cfg.MaxRequests were scheduled, each by one of cfg.Clients workers,
// and returns how many arrivals found every worker busy.
func openLoop(ctx context.Context, client *http.Client, cfg Config, bodies [][]byte, start time.Time, keep func(Sample)) int {
	arrivals := make(chan int) // unbuffered: a send succeeds only if a worker is idle
	var wg sync.WaitGroup
	sched := func(n int) time.Time {
		return start.Add(time.Duration(float64(n) / cfg.Rate * float64(time.Second)))
	}
	for range cfg.Clients {
		wg.Go(func() {
			for n := range arrivals {
				if s, ok := one(ctx, client, cfg, bodies[n%len(bodies)], sched(n)); ok {
					keep(s)
				}
			}
		})
	}
	missed := 0
	t := time.NewTimer(0)
	defer t.Stop()
	for n := 0; cfg.MaxRequests <= 0 || n < cfg.MaxRequests; n++ {
		t.Reset(time.Until(sched(n)))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case arrivals <- n:
		default:
			missed++
		}
	}
	close(arrivals)
	wg.Wait()
	return missed
}

// one sends a query scheduled at start (its latency counts from there). ok
// is false when the run's deadline interrupted it.
func one(ctx context.Context, client *http.Client, cfg Config, body []byte, start time.Time) (Sample, bool) {
	s := Sample{Start: start}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Server+"/v1/query", bytes.NewReader(body))
	if err != nil {
		return s, false
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return s, false
		}
		s.Latency = time.Since(s.Start)
		return s, true
	}
	defer resp.Body.Close()
	var ans struct {
		Partial bool `json:"partial"`
		Sources map[string]struct {
			Status string  `json:"status"`
			TookMS float64 `json:"took_ms"`
		} `json:"sources"`
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil && ctx.Err() != nil {
		return s, false
	}
	s.Latency = time.Since(s.Start)
	s.Status = resp.StatusCode
	if resp.StatusCode == http.StatusOK && json.Unmarshal(raw, &ans) == nil {
		s.Partial = ans.Partial
		s.Sources = make(map[string]string, len(ans.Sources))
		s.Took = make(map[string]time.Duration, len(ans.Sources))
		for k, v := range ans.Sources {
			s.Sources[k] = v.Status
			s.Took[k] = time.Duration(v.TookMS * float64(time.Millisecond))
		}
	}
	return s, true
}

func summarise(samples []Sample, elapsed time.Duration) *Report {
	r := &Report{Requests: len(samples), Elapsed: elapsed, Samples: samples,
		SourceOK: map[string]float64{}, SourceStatus: map[string]map[string]int{}}
	lat := make([]time.Duration, 0, len(samples))
	ok := 0
	for _, s := range samples {
		lat = append(lat, s.Latency)
		switch {
		case s.Status == 0:
			r.Errors++
		case s.Status != http.StatusOK:
			r.Non200++
		default:
			ok++
			if s.Partial {
				r.Partial++
			}
			for src, st := range s.Sources {
				if r.SourceStatus[src] == nil {
					r.SourceStatus[src] = map[string]int{}
				}
				r.SourceStatus[src][st]++
			}
		}
	}
	for src, m := range r.SourceStatus {
		if ok > 0 {
			r.SourceOK[src] = float64(m["ok"]) / float64(ok)
		}
	}
	if elapsed > 0 {
		r.ReqPerSec = float64(len(samples)) / elapsed.Seconds()
	}
	r.P50, r.P99, r.Max = Percentile(lat, 0.50), Percentile(lat, 0.99), Percentile(lat, 1)
	return r
}

// Combine summarises runs that went on at the same time (one per replica)
// as one: their answers together over the longest run's time, the CPU per
// query over every server's CPU (none unless every run measured it), the
// transitions added up.
func Combine(label string, rs ...*Report) *Report {
	var (
		samples []Sample
		elapsed time.Duration
		cpu     time.Duration
		missed  int
		noCPU   bool
		unknown string
	)
	tr := map[string]int{}
	for _, r := range rs {
		samples = append(samples, r.Samples...)
		elapsed = max(elapsed, r.Elapsed)
		cpu += r.CPUPerQuery * time.Duration(r.Requests)
		noCPU = noCPU || (r.CPUPerQuery == 0 && r.Requests > 0)
		missed += r.Missed
		if r.TransitionsUnknown != "" {
			unknown = r.TransitionsUnknown
		}
		for k, v := range r.Transitions {
			tr[k] += v
		}
	}
	c := summarise(samples, elapsed)
	c.Label, c.Missed, c.Transitions = label, missed, tr
	if unknown != "" {
		c.Transitions, c.TransitionsUnknown = nil, unknown
	}
	if c.Requests > 0 && !noCPU {
		c.CPUPerQuery = cpu / time.Duration(c.Requests)
	}
	return c
}

// Percentile returns the q-quantile (nearest rank) of ds; ds is sorted in place.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// transitions reads ragd_breaker_transitions_total from /metrics.
func transitions(ctx context.Context, client *http.Client, cfg Config) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Server+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("loadgen: metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadgen: metrics: HTTP %d", resp.StatusCode)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "ragd_breaker_transitions_total{") {
			continue
		}
		labels := line[strings.IndexByte(line, '{')+1 : strings.LastIndexByte(line, '}')]
		val, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, '}')+1:]), 64)
		if err != nil {
			continue
		}
		l := parseLabels(labels)
		out[fmt.Sprintf("%s %s→%s", l["breaker"], l["from"], l["to"])] += int(val)
	}
	return out, sc.Err()
}

func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	return m
}

// procCPU returns the user+system CPU time of process pid (Linux /proc).
func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, errors.New("no pid")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces) start after ") ".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks, nil
}
