package testenv

import (
	"os"
	"os/exec"
	"testing"

	"github.com/ragd/ragd/internal/integration"
)

// EnvChromium names a Chromium binary for the browser tests; unset, the
// tests look for Debian's chromium package on PATH.
const EnvChromium = "RAG_TEST_CHROMIUM"

// Chromium returns the path of a Chromium binary for headless browser
// tests. Without one it skips tb, or fails it when RAG_REQUIRE_INTEGRATION=1
// (CI installs Debian's chromium package, see .ci/run).
func Chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	integration.SkipOrFail(tb, "Chromium", "install Debian's chromium package (apt-get install chromium) or set "+EnvChromium)
	return ""
}
