// Package graph is ragd's Neo4j graph backend: an adapter over
// github.com/neo4j/neo4j-go-driver/v5 implementing spi.GraphRetrievalBackend
// and spi.Indexer.
//
// Data model:
//
//	(:Document {id, tenant, title, text, updated_at, `meta.<key>`})
//	(:Entity {name, terms, `ragd_deg:<tenant>`})   the last: mentions by that tenant's documents
//	(:Document)-[:MENTIONS]->(:Entity)
//	(:Document)-[:LINKS_TO]->(:Document)
//
// Entity names are normalised with graphspec.Normalize and shared across
// tenants; terms holds graphspec.Tokens(name) joined by spaces and carries a
// whitespace-analysed FULLTEXT index, so Lucene sees exactly the terms the
// embedded store sees. A link to a document that does not exist yet creates
// a stub (:Document {id, stub: true}) that no read returns; upserting the
// document fills it in. Open creates, idempotently, unique constraints on
// Document.id and Entity.name and the full-text index.
//
// Expand and MatchEntities rank by the rule documented in package graphspec,
// identical to the embedded store (package graph/embedded); the shared
// contract suite spi/spitest.RunGraph holds both to it. Query runs
// parameterised Cypher in a READ access-mode session, so writes are rejected
// by the server.
//
// Errors: a server that cannot be reached (connection refused, pool
// acquisition timeout, lost connection, transient server errors) wraps
// spi.ErrUnavailable and fails within Config.ConnectTimeout; Cypher and
// full-text syntax errors and writes through Query wrap spi.ErrInvalidQuery.
package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/ragd/ragd/spi"
)

// Schema object names created by Open.
const (
	ConstraintDocumentID = "ragd_document_id"
	ConstraintEntityName = "ragd_entity_name"
	FulltextEntityTerms  = "ragd_entity_terms"
	// The change-log applier's versions and checkpoints (apply.go).
	ConstraintVersionKey    = "ragd_version_key"
	ConstraintCheckpointLog = "ragd_checkpoint_log"
)

// Backend is the Neo4j graph backend. Its methods are safe for concurrent use.
type Backend struct {
	driver neo4j.DriverWithContext
	cfg    Config
	log    *slog.Logger
	closed atomic.Bool
}

var (
	_ spi.GraphRetrievalBackend = (*Backend)(nil)
	_ spi.Indexer               = (*Backend)(nil)
	_ spi.Closer                = (*Backend)(nil)
)

// Open connects to Neo4j, verifies connectivity and creates the schema. An
// unreachable server wraps spi.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	auth := neo4j.NoAuth()
	if cfg.User != "" {
		auth = neo4j.BasicAuth(cfg.User, cfg.Password, "")
	}
	drv, err := neo4j.NewDriverWithContext(cfg.URI, auth, func(c *config.Config) {
		c.SocketConnectTimeout = cfg.ConnectTimeout
		c.ConnectionAcquisitionTimeout = cfg.ConnectTimeout
		c.MaxTransactionRetryTime = cfg.RetryTime
		c.MaxConnectionPoolSize = cfg.MaxPoolSize
	})
	if err != nil {
		return nil, fmt.Errorf("graph: open: %w", err)
	}
	b := &Backend{driver: drv, cfg: cfg, log: cfg.Logger}
	if err := drv.VerifyConnectivity(ctx); err != nil {
		drv.Close(context.WithoutCancel(ctx))
		return nil, b.wrap(ctx, "open", err)
	}
	if err := b.ensureSchema(ctx); err != nil {
		drv.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	b.warmUp(ctx)
	b.log.Info("graph backend opened", "uri", redactURI(cfg.URI), "database", cfg.Database)
	return b, nil
}

// warmUp runs the retrieval queries once with inputs that match nothing, so
// the server has planned them before the first real query arrives: a cold
// plan can cost hundreds of milliseconds, more than a query's graph budget.
// Failures are ignored; the real calls report their own errors.
func (b *Backend) warmUp(ctx context.Context) {
	const none = "ragd:warm-up:no-such-tenant"
	_, _ = b.MatchEntities(ctx, spi.KeywordRequest{Text: "warm", K: 1, Tenant: none})
	for _, hops := range []int{1, 2} {
		_, _ = b.Expand(ctx, []string{none}, spi.ExpandOptions{Hops: hops, Limit: 1, Tenant: none})
	}
}

func (b *Backend) ensureSchema(ctx context.Context) error {
	stmts := []string{
		"CREATE CONSTRAINT " + ConstraintDocumentID + " IF NOT EXISTS FOR (d:Document) REQUIRE d.id IS UNIQUE",
		"CREATE CONSTRAINT " + ConstraintEntityName + " IF NOT EXISTS FOR (e:Entity) REQUIRE e.name IS UNIQUE",
		"CREATE CONSTRAINT " + ConstraintVersionKey + " IF NOT EXISTS FOR (v:RagdVersion) REQUIRE v.key IS UNIQUE",
		"CREATE CONSTRAINT " + ConstraintCheckpointLog + " IF NOT EXISTS FOR (c:RagdCheckpoint) REQUIRE c.log IS UNIQUE",
		"CREATE FULLTEXT INDEX " + FulltextEntityTerms + " IF NOT EXISTS FOR (e:Entity) ON EACH [e.terms] " +
			"OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}",
	}
	sess := b.session(ctx, neo4j.AccessModeWrite)
	defer sess.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := run(ctx, sessionRunner{sess}, s, nil); err != nil && !schemaExists(err) {
			return b.wrap(ctx, "create schema", err)
		}
	}
	if _, err := run(ctx, sessionRunner{sess}, "CALL db.awaitIndexes(60)", nil); err != nil {
		return b.wrap(ctx, "await indexes", err)
	}
	return b.backfillDegrees(ctx, sess)
}

// degreesMarker names the RagdMeta node that records that every entity
// carries its per-tenant degrees (see degKey).
const degreesMarker = "entity_degrees"

// backfillDegreesCypher gives the entities written before degrees were
// kept per tenant theirs, counted from their mentions.
const backfillDegreesCypher = `
MATCH (e:Entity) WHERE NOT any(k IN keys(e) WHERE k STARTS WITH $degPrefix)
CALL (e) {
  MATCH (e)<-[:MENTIONS]-(d:Document)
  WITH e, $degPrefix + coalesce(d.tenant, '') AS key, count(*) AS n
  SET e[key] = n
} IN TRANSACTIONS OF 1000 ROWS`

// backfillDegrees runs backfillDegreesCypher once per database (a graph
// written by an older ragd), before this process writes. Replicas of the
// older version writing at the same time could leave a count off; ragd
// check does not see it (stop them for the upgrade).
func (b *Backend) backfillDegrees(ctx context.Context, sess neo4j.SessionWithContext) error {
	r := sessionRunner{sess}
	recs, err := run(ctx, r, `MATCH (m:RagdMeta {key: $key}) RETURN count(m)`, map[string]any{"key": degreesMarker})
	if err != nil {
		return b.wrap(ctx, "backfill degrees", err)
	}
	if n, _ := recs[0].Values[0].(int64); n > 0 {
		return nil
	}
	start := b.cfg.Now()
	if _, err := run(ctx, r, backfillDegreesCypher, map[string]any{"degPrefix": degPrefix}); err != nil {
		return b.wrap(ctx, "backfill degrees", err)
	}
	if _, err := run(ctx, r, `MERGE (:RagdMeta {key: $key})`, map[string]any{"key": degreesMarker}); err != nil {
		return b.wrap(ctx, "backfill degrees", err)
	}
	b.log.Info("graph: entity degrees per tenant ready", "elapsed", b.cfg.Now().Sub(start))
	return nil
}

// schemaExists reports the error a concurrent Open gets when another one
// created the same constraint or index first.
func schemaExists(err error) bool {
	var ne *neo4j.Neo4jError
	return errors.As(err, &ne) && strings.HasPrefix(ne.Code, "Neo.ClientError.Schema.") &&
		(strings.Contains(ne.Code, "AlreadyExists") || strings.Contains(ne.Code, "Equivalent"))
}

// Close closes the driver. Calls after Close wrap spi.ErrUnavailable.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	if err := b.driver.Close(context.Background()); err != nil {
		return fmt.Errorf("graph: close: %w", err)
	}
	return nil
}

// Health verifies connectivity and reports its latency. An unreachable
// server is StatusDown with a short detail, never an error.
func (b *Backend) Health(ctx context.Context) spi.Health {
	if b.closed.Load() {
		return spi.Health{Status: spi.StatusDown, Detail: "closed"}
	}
	start := b.cfg.Now()
	err := b.driver.VerifyConnectivity(ctx)
	lat := b.cfg.Now().Sub(start)
	if err != nil {
		detail := "connectivity: " + err.Error()
		if len(detail) > 200 {
			detail = detail[:200]
		}
		return spi.Health{Status: spi.StatusDown, Detail: detail, Latency: lat}
	}
	return spi.Health{Status: spi.StatusUp, Latency: lat}
}

func (b *Backend) session(ctx context.Context, mode neo4j.AccessMode) neo4j.SessionWithContext {
	return b.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: mode, DatabaseName: b.cfg.Database})
}

// runner is what both a session (auto-commit) and a managed transaction offer.
type runner interface {
	Run(ctx context.Context, cypher string, params map[string]any) (neo4j.ResultWithContext, error)
}

type sessionRunner struct{ s neo4j.SessionWithContext }

func (r sessionRunner) Run(ctx context.Context, cypher string, params map[string]any) (neo4j.ResultWithContext, error) {
	return r.s.Run(ctx, cypher, params)
}

// run executes one statement and collects all its records; r is a
// session (auto-commit, no retries) or a managed transaction.
func run(ctx context.Context, r runner, cypher string, params map[string]any) ([]*neo4j.Record, error) {
	cypher, params = withFilter(cypher, params)
	res, err := r.Run(ctx, cypher, params)
	if err != nil {
		return nil, err
	}
	return res.Collect(ctx)
}

// read runs fn in a READ access-mode session without retries.
func (b *Backend) read(ctx context.Context, op string, fn func(runner) error) error {
	if err := b.precheck(ctx, op); err != nil {
		return err
	}
	sess := b.session(ctx, neo4j.AccessModeRead)
	defer sess.Close(context.WithoutCancel(ctx))
	return b.wrap(ctx, op, fn(sessionRunner{sess}))
}

// write runs fn as a managed write transaction, retried on transient
// failures for up to Config.RetryTime.
func (b *Backend) write(ctx context.Context, op string, fn func(neo4j.ManagedTransaction) error) error {
	if err := b.precheck(ctx, op); err != nil {
		return err
	}
	sess := b.session(ctx, neo4j.AccessModeWrite)
	defer sess.Close(context.WithoutCancel(ctx))
	_, err := sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) { return nil, fn(tx) })
	return b.wrap(ctx, op, err)
}

func (b *Backend) precheck(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	if b.closed.Load() {
		return fmt.Errorf("graph: %s: %w: backend closed", op, spi.ErrUnavailable)
	}
	return nil
}

// wrap maps driver errors onto the spi sentinels, prefixed with op.
func (b *Backend) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("graph: %s: %w (%v)", op, cerr, err)
	}
	if errors.Is(err, spi.ErrInvalidQuery) || errors.Is(err, spi.ErrUnavailable) {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	if invalidQuery(err) {
		return fmt.Errorf("graph: %s: %w: %v", op, spi.ErrInvalidQuery, err)
	}
	return fmt.Errorf("graph: %s: %w: %v", op, spi.ErrUnavailable, err)
}

// invalidQuery reports errors caused by the request itself: Cypher or
// full-text syntax, semantics, a write in a read session, a parameter of an
// unsupported type. Everything else (connectivity, pool timeouts, transient
// and database errors, authentication, a missing database) is the
// backend's unavailability.
func invalidQuery(err error) bool {
	var ne *neo4j.Neo4jError
	if errors.As(err, &ne) {
		for _, p := range []string{"Neo.ClientError.Statement.", "Neo.ClientError.Procedure.", "Neo.ClientError.Schema.", "Neo.ClientError.Request."} {
			if strings.HasPrefix(ne.Code, p) {
				return true
			}
		}
		return false
	}
	var ue *neo4j.UsageError
	return errors.As(err, &ue) && !strings.Contains(strings.ToLower(ue.Message), "closed")
}

func redactURI(s string) string {
	i := strings.Index(s, "@")
	j := strings.Index(s, "://")
	if i > 0 && j > 0 && j < i {
		return s[:j+3] + "***@" + s[i+1:]
	}
	return s
}
