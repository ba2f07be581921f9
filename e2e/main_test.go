package e2e_test

import (
	"os"
	"testing"

	"github.com/ragd/ragd/internal/testenv"
)

// Environment variables read by the end-to-end tests (besides testenv's).
const (
	// envCranfield names the BEIR Cranfield directory; default
	// <repo>/../shared/data/cranfield.
	envCranfield = "RAG_CRANFIELD_DIR"
	// envRace, when 1, builds the ragd binary with -race.
	envRace = "RAG_E2E_RACE"
	// envLoad, when 1, runs the 30-second load test.
	envLoad = "RAG_LOAD"
)

// ragd is the ragd binary the tests run, built once per test binary
// (with -race when RAG_E2E_RACE=1); TestMain removes it.
var ragd = testenv.NewBinary("./cmd/ragd", raceFlags()...)

func raceFlags() []string {
	if os.Getenv(envRace) == "1" {
		return []string{"-race"}
	}
	return nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	ragd.Remove()
	os.Exit(code)
}

// startBuild starts building the ragd binary, so that it compiles while
// slow servers start. ragdBinary waits for it.
func startBuild() { ragd.Start() }

// ragdBinary returns the path of the ragd binary built from this
// repository, building it on first use.
func ragdBinary(tb testing.TB) string {
	tb.Helper()
	return ragd.Path(tb)
}
