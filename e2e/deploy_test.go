package e2e_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/testenv"
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
	root, err := testenv.ModuleRoot()
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
	if e := cfg.Embedder; e.Kind != config.KindBuiltin || e.PullTimeoutS == 0 {
		t.Errorf("embedder %+v: want the built-in model, pulled when missing (the server deployment is semantic)", e)
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
	root, err := testenv.ModuleRoot()
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

// composeService is the part of a docker-compose.yml service the replica
// rules read.
type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// TestComposeReplicas checks docker-compose.yml's ragd replicas against
// what README "Replicas" requires of them: one record and graph for all,
// each its own data volume (a keyword index is one process's) and host
// port, one image built once, a readiness check, and a replica that starts
// after the first is healthy.
func TestComposeReplicas(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("docker-compose.yml not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]composeService `yaml:"services"`
		Volumes  map[string]any            `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, s := range file.Services {
		if s.Image == "${RAGD_IMAGE:-ragd:local}" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) < 2 {
		t.Fatalf("ragd services %v; want at least two (the replicas example)", names)
	}
	first := file.Services[names[0]]
	ports, dataVolumes := map[string]string{}, map[string]string{}
	builds := 0
	for _, name := range names {
		s := file.Services[name]
		if s.Build != nil {
			builds++
		}
		for _, k := range []string{"RAGD_PG_DSN", "RAGD_NEO4J_URI", "RAGD_DATA_DIR"} {
			if s.Environment[k] == "" || s.Environment[k] != first.Environment[k] {
				t.Errorf("%s: %s = %q, %s has %q; every replica names the same", name, k, s.Environment[k], names[0], first.Environment[k])
			}
		}
		if s.Healthcheck == nil || !slices.Contains(s.Healthcheck.Test, "status") {
			t.Errorf("%s: no `ragd status` readiness check", name)
		}
		for _, p := range s.Ports {
			host := p[:strings.LastIndex(p, ":")]
			if other, ok := ports[host]; ok {
				t.Errorf("%s and %s both publish %s", name, other, host)
			}
			ports[host] = name
		}
		var data string
		for _, v := range s.Volumes {
			if vol, dir, ok := strings.Cut(v, ":"); ok && dir == s.Environment["RAGD_DATA_DIR"] {
				data = vol
			}
		}
		switch other, ok := dataVolumes[data]; {
		case data == "":
			t.Errorf("%s: no volume at its data directory %q", name, s.Environment["RAGD_DATA_DIR"])
		case ok:
			t.Errorf("%s and %s share the data volume %s (each replica keeps its own keyword index)", name, other, data)
		case !slices.Contains(slices.Collect(maps.Keys(file.Volumes)), data):
			t.Errorf("%s: data volume %s is not declared", name, data)
		}
		dataVolumes[data] = name
		if name != names[0] && s.DependsOn[names[0]].Condition != "service_healthy" {
			t.Errorf("%s does not wait for %s to be healthy (the image built, the schema made)", name, names[0])
		}
	}
	if builds != 1 {
		t.Errorf("%d ragd services build the image; want one", builds)
	}
}
