package e2e_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/testenv"
)

// deploy/rag.opensearch.yaml parses with the servers' variables plus the
// node's URL, puts the keyword index on it, and needs that URL.
func TestDeployOpenSearchConfig(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "rag.opensearch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := deployEnv()
	if _, err := config.Parse(b, lookupIn(env)); err == nil || !strings.Contains(err.Error(), "RAGD_OPENSEARCH_URL") {
		t.Fatalf("without RAGD_OPENSEARCH_URL: %v, want an error naming it", err)
	}
	env["RAGD_OPENSEARCH_URL"] = "https://search:9200"
	env["RAGD_OPENSEARCH_PASSWORD"] = "os-secret"
	cfg, err := config.Parse(b, lookupIn(env))
	if err != nil {
		t.Fatalf("deploy/rag.opensearch.yaml with every variable set: %v", err)
	}
	k := cfg.Backends.Keyword
	if k.Kind != config.KindOpenSearch || !slices.Equal(k.Hosts, []string{"https://search:9200"}) || k.IndexPrefix != "ragd" ||
		k.Password != "os-secret" || k.Username != "" || k.Replicas != 0 {
		t.Errorf("keyword: %+v; want opensearch at RAGD_OPENSEARCH_URL, prefix ragd", k)
	}
	if cfg.Backends.Vector.Kind != config.KindPgvector || cfg.Backends.Graph.Kind != config.KindNeo4j {
		t.Errorf("vector %q, graph %q; want pgvector and neo4j", cfg.Backends.Vector.Kind, cfg.Backends.Graph.Kind)
	}
	// Semantic like every shipped deployment: the embedder section is
	// deploy/rag.servers.yaml's.
	servers, err := config.Parse(readDeploy(t), lookupIn(deployEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Embedder, servers.Embedder) || cfg.Embedder.Kind != config.KindBuiltin {
		t.Errorf("embedder %+v; want deploy/rag.servers.yaml's, the built-in model: %+v", cfg.Embedder, servers.Embedder)
	}
}
