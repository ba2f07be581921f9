package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragd/ragd/internal/atomicfile"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, want := range []string{"first\n", "second, longer\n", ""} {
		if err := atomicfile.WriteBytes(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("after writing %q: %q, %v", want, got, err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	assertOnly(t, dir, "state.json")
}

// A failing writer leaves the old content and no temporary file.
func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := atomicfile.WriteBytes(path, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.Write(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half of the new"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want %v", err, boom)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("after a failed write: %q, want the old content", got)
	}
	assertOnly(t, dir, "state.json")
}

func TestWriteMissingDirectory(t *testing.T) {
	if err := atomicfile.WriteBytes(filepath.Join(t.TempDir(), "no", "such"), nil); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("directory holds %v, want %v", got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("directory holds %v, want %v", got, names)
		}
	}
}

// WriteFile gives the file the permissions asked for (a model cache's
// record must be readable by the service's user as well as the owner's).
func TestWriteFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	for _, perm := range []os.FileMode{0o644, 0o600, 0o640} {
		if err := atomicfile.WriteFile(path, []byte("x\n"), perm); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != perm {
			t.Fatalf("mode %v, %v; want %v", fi.Mode().Perm(), err, perm)
		}
	}
}

// A Pending replacement is invisible until Commit, which puts it in place;
// Abort leaves the old content; neither leaves a temporary file.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vectors")
	if err := atomicfile.WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	p, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p, "first part, "); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p, "then the rest"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("before Commit: %q, want the old content", got)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first part, then the rest" {
		t.Fatalf("after Commit: %q", got)
	}
	assertOnly(t, dir, "vectors")

	p, err = atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p, "dropped"); err != nil {
		t.Fatal(err)
	}
	p.Abort()
	if got, _ := os.ReadFile(path); string(got) != "first part, then the rest" {
		t.Fatalf("after Abort: %q, want the committed content", got)
	}
	assertOnly(t, dir, "vectors")
}
