// Package opensearch is ragd's keyword backend on an OpenSearch cluster:
// an adapter over github.com/opensearch-project/opensearch-go/v4
// implementing spi.KeywordRetrievalBackend, spi.ChangeApplier and
// spi.DocCounter.
//
// It answers what the bleve backend (package keyword) answers where it
// matters: BM25 with Lucene's parameters, the same analysis (schema.go),
// the title boosted at query time and summed with the text as
// multi_match most_fields, tenant and metadata filters. The one difference
// in scoring: Lucene weighs each field with that field's own document
// frequency, where the bleve backend uses a document's (docs/keyword.md
// measures what that changes). A tenant's index holds only its documents,
// so its scores never depend on another tenant's.
//
// The index is derived from the system of record through the change log
// (apply.go): writes arrive only through ApplyChanges, with the log's
// versions as OpenSearch's external versions, so a replayed or reordered
// apply never overwrites a newer state, and several ragd replicas may
// apply to one cluster.
//
// Errors: a node that cannot be reached, hangs past the call's deadline
// or answers 5xx wraps spi.ErrUnavailable; 429 (rejected execution, the
// cluster's circuit breakers) wraps spi.ErrOverloaded too, so a busy
// cluster sheds load without tripping ragd's breaker; a query the cluster
// cannot parse (Syntax) wraps spi.ErrInvalidQuery.
package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/analysis"

	"github.com/ragd/ragd/spi"
)

var (
	_ spi.KeywordRetrievalBackend = (*Backend)(nil)
	_ spi.ChangeApplier           = (*Backend)(nil)
	_ spi.DocCounter              = (*Backend)(nil)
	_ spi.Closer                  = (*Backend)(nil)
)

// ErrIncompatible means an index under the prefix was made with another
// analyzer, other BM25 parameters or another layout than the
// configuration asks for. Open refuses it: delete the prefix's indexes
// (the store refills from the record) or choose another prefix.
var ErrIncompatible = errors.New("keyword/opensearch: index incompatible with config")

// Backend is the OpenSearch keyword backend. It is safe for concurrent use.
type Backend struct {
	cfg   Config
	n     names
	c     *client
	local analysis.Analyzer

	mu     sync.Mutex
	epochs map[string]uint64    // log -> its epoch (apply.go)
	pruned map[string]time.Time // log -> when tombstones were last pruned
	closed bool
}

// Open connects to the cluster, checks that the indexes under the prefix
// fit the configuration, and makes the template and the bookkeeping
// indexes when missing. A cluster that cannot be reached wraps
// spi.ErrUnavailable (ragd then opens it later); refused credentials wrap
// ErrAuth and a mismatched index ErrIncompatible.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	local, err := localAnalyzer(cfg.Analyzer)
	if err != nil {
		return nil, fmt.Errorf("keyword/opensearch: analyzer %s: %w", cfg.Analyzer, err)
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, n: names{cfg.IndexPrefix}, c: c, local: local,
		epochs: map[string]uint64{}, pruned: map[string]time.Time{}}
	if err := b.ensureSchema(ctx); err != nil {
		return nil, fmt.Errorf("keyword/opensearch: open: %w", err)
	}
	cfg.Logger.Info("keyword/opensearch: opened", "hosts", redactHosts(cfg.Hosts), "prefix", cfg.IndexPrefix)
	return b, nil
}

func (b *Backend) ensureSchema(ctx context.Context) error {
	if err := b.checkIndexes(ctx); err != nil {
		return err
	}
	r, err := b.c.do(ctx, http.MethodPut, "/_index_template/"+b.n.template(), nil, b.cfg.tenantTemplate(b.n))
	if err != nil {
		return err
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("index template: %w", failure(r))
	}
	for name, body := range map[string]any{b.n.ids(): b.cfg.idsIndex(), b.n.meta(): b.cfg.metaIndex()} {
		r, err := b.c.do(ctx, http.MethodPut, "/"+name, nil, body)
		if err != nil {
			return err
		}
		if r.status != http.StatusOK && errorType(r.body) != "resource_already_exists_exception" {
			return fmt.Errorf("create %s: %w", name, failure(r))
		}
	}
	return nil
}

// checkIndexes refuses tenant indexes made with another analyzer, other
// BM25 parameters or another schema.
func (b *Backend) checkIndexes(ctx context.Context) error {
	r, err := b.c.do(ctx, http.MethodGet, "/"+b.n.tenantPattern()+"/_mapping", nil, nil)
	if err != nil {
		return err
	}
	if r.status == http.StatusNotFound {
		return nil
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("read mappings: %w", failure(r))
	}
	var m map[string]struct {
		Mappings struct {
			Meta map[string]any `json:"_meta"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil {
		return fmt.Errorf("%w: read mappings: %v", spi.ErrUnavailable, err)
	}
	want, _ := json.Marshal(b.cfg.schemaMeta())
	idx := make([]string, 0, len(m))
	for name := range m {
		idx = append(idx, name)
	}
	sort.Strings(idx)
	for _, name := range idx {
		got, _ := json.Marshal(m[name].Mappings.Meta)
		if !jsonEqual(got, want) {
			return fmt.Errorf("%w: index %s was made with %s, the configuration asks for %s; delete the indexes %s*"+
				" (the store refills from the record) or set another index prefix", ErrIncompatible, name, got, want, b.cfg.IndexPrefix+"-")
		}
	}
	return nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// Close releases the client. Later calls fail with spi.ErrUnavailable.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.c.os.Close()
}

// errClosed is returned by calls on a closed Backend.
var errClosed = fmt.Errorf("%w: keyword/opensearch: backend closed", spi.ErrUnavailable)

func (b *Backend) live() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed
	}
	return nil
}

// Health reports the cluster's health for the prefix's indexes: green is
// up, yellow (replicas unassigned) degraded, red or no answer down. The
// detail names the status, the nodes and the documents.
func (b *Backend) Health(ctx context.Context) spi.Health {
	start := b.cfg.Now()
	if err := b.live(); err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "closed"}
	}
	r, err := b.c.do(ctx, http.MethodGet, "/_cluster/health/"+b.cfg.IndexPrefix+"-*", nil, nil)
	lat := b.cfg.Now().Sub(start)
	if err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "cluster health: " + err.Error(), Latency: lat}
	}
	if r.status != http.StatusOK {
		return spi.Health{Status: spi.StatusDown, Detail: "cluster health: " + failure(r).Error(), Latency: lat}
	}
	var h struct {
		Cluster  string `json:"cluster_name"`
		Status   string `json:"status"`
		Nodes    int    `json:"number_of_nodes"`
		Shards   int    `json:"active_shards"`
		Unassign int    `json:"unassigned_shards"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		return spi.Health{Status: spi.StatusDown, Detail: "cluster health: unreadable answer", Latency: lat}
	}
	detail := fmt.Sprintf("opensearch %s: %d node(s), %d active shard(s)", h.Status, h.Nodes, h.Shards)
	if h.Unassign > 0 {
		detail += fmt.Sprintf(", %d unassigned", h.Unassign)
	}
	if n, err := b.DocCount(ctx); err == nil {
		detail += fmt.Sprintf(", %d documents", n)
	}
	switch h.Status {
	case "green":
		return spi.Health{Status: spi.StatusUp, Detail: detail, Latency: lat}
	case "yellow":
		return spi.Health{Status: spi.StatusDegraded, Detail: detail, Latency: lat}
	default:
		return spi.Health{Status: spi.StatusDown, Detail: detail, Latency: lat}
	}
}

// DocCount returns the documents of every tenant (spi.DocCounter), as of
// the last refresh.
func (b *Backend) DocCount(ctx context.Context) (int, error) {
	if err := b.live(); err != nil {
		return 0, err
	}
	r, err := b.c.do(ctx, http.MethodGet, "/"+b.n.tenantPattern()+"/_count", searchParams(), nil)
	if err != nil {
		return 0, fmt.Errorf("keyword/opensearch: doc count: %w", err)
	}
	if r.status != http.StatusOK {
		return 0, fmt.Errorf("keyword/opensearch: doc count: %w", failure(r))
	}
	var c struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(r.body, &c); err != nil {
		return 0, fmt.Errorf("keyword/opensearch: doc count: %w: %v", spi.ErrUnavailable, err)
	}
	return c.Count, nil
}

// searchParams are the parameters of every read of the tenant indexes: a
// tenant without an index has nothing, and a partial answer is a failure.
func searchParams() url.Values {
	return url.Values{"ignore_unavailable": {"true"}, "allow_no_indices": {"true"}}
}

// redactHosts drops credentials from host URLs for logs.
func redactHosts(hosts []string) string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		if u, err := url.Parse(h); err == nil {
			u.User = nil
			h = u.String()
		}
		out[i] = h
	}
	return strings.Join(out, ",")
}

// Prefix is the index prefix the backend uses.
func (b *Backend) Prefix() string { return b.cfg.IndexPrefix }
