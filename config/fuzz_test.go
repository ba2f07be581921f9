package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragd/ragd/config"
)

// FuzzParse feeds arbitrary rag.yaml bytes to config.Parse: it never
// panics or hangs, a rejected file is an *config.Error matching
// config.ErrInvalid with a key and a message, and an accepted one
// validates. The seeds are the files in testdata and the bad inputs of
// past reviews; scripts/test.sh fuzzes briefly, run it longer with
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 60s ./config
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, seed := range []string{
		"breakers:\n  failure_threshold: 1.9\n",
		"breakers:\n  failure_threshold: 0.5\n",
		"breakers:\n  failure_threshold: 1e308\n",
		"retriever:\n  sources:\n    keyword: {weight: 1e308}\n    vector: {weight: .inf}\n",
		"retriever:\n  sources:\n    keyword: {weight: .nan}\n",
		"server:\n  max_in_flight: -1\n",
		"auth:\n  enabled: true\n  keys:\n    - {name: a, key: 0123456789abcdef0123456789abcdef, role: query, tenant: \"%zz\"}\n",
		"auth:\n  keys:\n    - {name: a, key: x, role: admin, tenant: \"\\0\"}\n",
		"data_dir: ${NOPE}\n",
		"data_dir: ${HOME:-/tmp}\nserver: {listen: \"${LISTEN:-127.0.0.1:8080}\"}\n",
		"server: ~\n", "null\n", "[]\n", "- a\n", "a: &x [*x]\n", "{\n", "\t", "",
	} {
		f.Add([]byte(seed))
	}
	lookup := func(k string) (string, bool) {
		if k == "HOME" {
			return "/home/ragd", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := config.Parse(b, lookup)
		if err != nil {
			var ce *config.Error
			if !errors.Is(err, config.ErrInvalid) || !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) error %v is not a *config.Error matching ErrInvalid", b, err)
			}
			if ce.Key == "" || ce.Message == "" {
				t.Fatalf("Parse(%q) error %#v has no key or message", b, ce)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted a config that does not validate: %v", b, err)
		}
	})
}
