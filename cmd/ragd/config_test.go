package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeWithoutConfigFileSaysSo is issue 12 item 11: in a directory
// without rag.yaml, serve says that no config file was found and which
// defaults apply, instead of only "auth is enabled but no keys".
func TestServeWithoutConfigFileSaysSo(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, stderr := runRagd(t, "serve")
	if code == 0 {
		t.Fatal("serve started without a config file and without keys")
	}
	for _, want := range []string{"no rag.yaml", "defaults", "auth", "-c"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not mention %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat("data"); err == nil {
		t.Error("serve created a data directory although it did not start")
	}
}

// TestDataDirIsRelativeToTheConfigFile: a relative data_dir is resolved
// against the directory of the file that sets it, wherever ragd is run
// from.
func TestDataDirIsRelativeToTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "conf", "rag.yaml")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte("data_dir: state\nauth: {enabled: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // somewhere else
	cmd := newRootCmd(&app{stdout: os.Stdout, stderr: os.Stderr})
	serve, _, err := cmd.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Flags().Set("config", cfgPath); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(serve, cfgPath, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "conf", "state"); c.DataDir != want {
		t.Fatalf("data_dir %q, want %q", c.DataDir, want)
	}
}
