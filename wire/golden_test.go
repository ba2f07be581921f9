package wire_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ragd/ragd/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current types")

// goldenBodies are the API bodies whose encoding the golden files pin, by
// file name. The files were first written by the same filler from the
// types' former homes (api, retriever, ingest, sourcestats, guard) before they
// moved here, so they prove the move left the JSON byte for byte alone.
var goldenBodies = map[string]func() any{
	"query":           func() any { return new(wire.Query) },
	"result":          func() any { return new(wire.Result) },
	"error":           func() any { return new(wire.ErrorResponse) },
	"upsert_request":  func() any { return new(wire.UpsertRequest) },
	"delete_request":  func() any { return new(wire.DeleteRequest) },
	"batch_response":  func() any { return new(wire.BatchResponse) },
	"check_report":    func() any { return new(wire.CheckReport) },
	"breakers":        func() any { return new(wire.BreakersResponse) },
	"force_close":     func() any { return new(wire.ForceCloseResponse) },
	"force_open":      func() any { return new(wire.ForceOpenResponse) },
	"hold_request":    func() any { return new(wire.HoldRequest) },
	"hold_response":   func() any { return new(wire.HoldResponse) },
	"health_response": func() any { return new(wire.HealthResponse) },
	"ready_response":  func() any { return new(wire.ReadyResponse) },
	"live_response":   func() any { return new(wire.LiveResponse) },
	"sources":         func() any { return new(wire.SourcesResponse) },
	"server_response": func() any { return new(wire.ServerResponse) },
}

// TestGoldenJSON encodes every body with every field set (fill), and with
// none, and compares the bytes with its golden files, then decodes each
// golden file and encodes it again: a renamed, retagged, dropped or added
// field, or one that gained or lost omitempty, fails.
// Run with -update after an intended change of the wire format, and say so
// in docs/api.md.
func TestGoldenJSON(t *testing.T) {
	for name, newBody := range goldenBodies {
		// Every field set, and none: omitempty shows in the second.
		for _, full := range []bool{true, false} {
			file := name + ".json"
			if !full {
				file = name + ".zero.json"
			}
			t.Run(file, func(t *testing.T) {
				v := newBody()
				if full {
					fill(reflect.ValueOf(v).Elem())
				}
				checkGolden(t, v, newBody, filepath.Join("testdata", "golden", file))
			})
		}
	}
}

func checkGolden(t *testing.T, v any, newBody func() any, path string) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%T encodes as\n%s\nwant (%s)\n%s", v, got, path, want)
	}
	back := newBody()
	if err := json.Unmarshal(want, back); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	again, err := json.MarshalIndent(back, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if again = append(again, '\n'); !bytes.Equal(again, want) {
		t.Errorf("%s does not survive a round trip through %T:\n%s", path, back, again)
	}
}

// fill sets every field of v to a fixed non-zero value, so that no
// omitempty field is left out. Structs, maps and slices of types declared
// outside the wire bodies (spi.Document, breaker.Snapshot, time.Time) stay
// zero: their encoding is their own package's, pinned there.
func fill(v reflect.Value) {
	t := v.Type()
	if t.Name() != "" && !own(t) && t.Kind() != reflect.String && t.Kind() != reflect.Bool && !numeric(t.Kind()) {
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if skipped(t.Elem()) {
			return
		}
		p := reflect.New(t.Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		if skipped(t.Elem()) {
			return
		}
		s := reflect.MakeSlice(t, 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		if skipped(t.Elem()) {
			return
		}
		m := reflect.MakeMap(t)
		k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

func numeric(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Uint64) || k == reflect.Float32 || k == reflect.Float64
}

// own reports whether t is one of the wire bodies (or, when the golden
// files were first written, of their former packages).
func own(t reflect.Type) bool {
	for _, p := range []string{"/wire", "/api", "/retriever", "/ingest", "/internal/sourcestats", "/guard"} {
		if strings.HasSuffix(t.PkgPath(), p) {
			return true
		}
	}
	return false
}

// skipped: a composite of a type fill leaves alone stays nil.
func skipped(t reflect.Type) bool {
	k := t.Kind()
	return t.Name() != "" && !own(t) && (k == reflect.Struct || k == reflect.Map || k == reflect.Slice)
}
