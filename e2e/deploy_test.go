package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragd/ragd/config"
)

// deployEnv is a complete environment for deploy/rag.servers.yaml.
func deployEnv() map[string]string {
	return map[string]string{
		"RAGD_PG_DSN":         "postgres://ragd:pw@db:5432/ragd?sslmode=disable",
		"RAGD_NEO4J_URI":      "bolt://neo4j:7687",
		"RAGD_NEO4J_PASSWORD": "neo4j-secret",
		"RAGD_ADMIN_KEY":      "admin-key-0123456789abcdef",
	}
}

func readDeploy(t *testing.T) []byte {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "rag.servers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lookupIn(env map[string]string) config.LookupEnv {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestDeployConfig(t *testing.T) {
	b := readDeploy(t)
	env := deployEnv()
	cfg, err := config.Parse(b, lookupIn(env))
	if err != nil {
		t.Fatalf("deploy/rag.servers.yaml with every variable set: %v", err)
	}
	if v := cfg.Backends.Vector; v.Kind != config.KindPgvector || v.DSN != env["RAGD_PG_DSN"] {
		t.Errorf("vector: %+v; want pgvector at RAGD_PG_DSN", v)
	}
	if g := cfg.Backends.Graph; g.Kind != config.KindNeo4j || g.URI != env["RAGD_NEO4J_URI"] || g.User != "neo4j" || g.Password != env["RAGD_NEO4J_PASSWORD"] {
		t.Errorf("graph: %+v; want neo4j at RAGD_NEO4J_URI, user neo4j by default", g)
	}
	if !cfg.AuthEnabled() || len(cfg.Auth.Keys) != 1 || cfg.Auth.Keys[0].Key != env["RAGD_ADMIN_KEY"] || cfg.Auth.Keys[0].Role != config.RoleAdmin {
		t.Errorf("auth: %+v; want on, with RAGD_ADMIN_KEY as the admin key", cfg.Auth)
	}
	if cfg.Server.Listen != "127.0.0.1:8080" || cfg.DataDir != "data" {
		t.Errorf("defaults: listen %q, data_dir %q", cfg.Server.Listen, cfg.DataDir)
	}
	if !cfg.Breakers.Enabled {
		t.Error("breakers are off")
	}

	env["RAGD_NEO4J_USER"] = "reader"
	env["RAGD_LISTEN"] = "0.0.0.0:9000"
	env["RAGD_DATA_DIR"] = "/var/lib/ragd"
	cfg, err = config.Parse(b, lookupIn(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backends.Graph.User != "reader" || cfg.Server.Listen != "0.0.0.0:9000" || cfg.DataDir != "/var/lib/ragd" {
		t.Errorf("overrides not applied: user %q listen %q data_dir %q", cfg.Backends.Graph.User, cfg.Server.Listen, cfg.DataDir)
	}
}

func TestDeployConfigRequiresEnv(t *testing.T) {
	b := readDeploy(t)
	for _, name := range []string{"RAGD_PG_DSN", "RAGD_NEO4J_URI", "RAGD_NEO4J_PASSWORD", "RAGD_ADMIN_KEY"} {
		t.Run(name, func(t *testing.T) {
			env := deployEnv()
			delete(env, name)
			_, err := config.Parse(b, lookupIn(env))
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "${"+name+"}") {
				t.Errorf("without %s: %v; want a config error naming it", name, err)
			}
		})
	}
	env := deployEnv()
	env["RAGD_ADMIN_KEY"] = "short"
	if _, err := config.Parse(b, lookupIn(env)); err == nil || !strings.Contains(err.Error(), "auth.keys[0].key") {
		t.Errorf("with a 5-character admin key: %v; want auth.keys[0].key rejected", err)
	}
}

// TestDeployEnvNamesAligned checks that the variables the deploy file
// reads are the ones scripts/services.sh exports and docker-compose.yml
// passes to ragd.
func TestDeployEnvNamesAligned(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`RAGD_[A-Z0-9_]+`)
	names := func(b []byte) []string {
		out := ref.FindAllString(string(b), -1)
		slices.Sort(out)
		return slices.Compact(out)
	}
	deploy := names(readDeploy(t))
	backing := []string{"RAGD_NEO4J_PASSWORD", "RAGD_NEO4J_URI", "RAGD_NEO4J_USER", "RAGD_PG_DSN"}
	for _, n := range backing {
		if !slices.Contains(deploy, n) {
			t.Errorf("deploy/rag.servers.yaml does not read %s", n)
		}
	}
	for _, f := range []string{"scripts/services.sh", "docker-compose.yml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("%s not present; not compared", f)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		have := names(b)
		for _, n := range backing {
			if !slices.Contains(have, n) {
				t.Errorf("%s does not name %s, which deploy/rag.servers.yaml reads", f, n)
			}
		}
	}
}
