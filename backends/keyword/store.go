package keyword

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	berrors "go.etcd.io/bbolt/errors"
)

// Directory layout under Config.Dir:
//
//	CURRENT            name of the live generation, e.g. "index-000003"
//	index-000003/      the live bleve (scorch) index
//	corrupt-index-N/   the last index moved aside by OpenOrRebuild
//
// A rebuild writes a new generation next to the live one and switches
// CURRENT atomically (write a temp file, fsync, rename), so a crash at any
// point leaves either the old or the new generation live, never a mix.
// Generations not named by CURRENT are leftovers and are removed at open.
const (
	currentFile   = "CURRENT"
	genPrefix     = "index-"
	corruptPrefix = "corrupt-"
)

func genName(n int) string { return fmt.Sprintf("%s%06d", genPrefix, n) }

// parseGen returns the generation number of a directory name, or -1.
func parseGen(name string) int {
	s, ok := strings.CutPrefix(name, genPrefix)
	if !ok || len(s) == 0 {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || genName(n) != name {
		return -1
	}
	return n
}

// readCurrent returns the live generation's directory name. ok is false
// when CURRENT does not exist (no committed index). A CURRENT that exists
// but names no valid generation wraps ErrCorrupt.
func readCurrent(dir string) (name string, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", currentFile, err)
	}
	name = strings.TrimSpace(string(b))
	if parseGen(name) < 0 {
		return "", false, fmt.Errorf("%w: %s names no index generation", ErrCorrupt, currentFile)
	}
	return name, true, nil
}

// writeCurrent atomically points CURRENT at generation name.
func writeCurrent(dir, name string) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(name + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, currentFile)); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// nextGen returns a generation number above every index-* directory.
func nextGen(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	next := 1
	for _, e := range entries {
		name := strings.TrimPrefix(e.Name(), corruptPrefix)
		if n := parseGen(name); n >= next {
			next = n + 1
		}
	}
	return next, nil
}

// removeStale deletes generations other than keep (leftovers of an
// interrupted rebuild or creation). keep may be empty.
func removeStale(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() && parseGen(e.Name()) >= 0 && e.Name() != keep {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// moveAside renames the generation name to corrupt-<name>, replacing the
// previous corrupt copy, so at most one broken index is kept for
// inspection. It then removes CURRENT.
func moveAside(dir, name string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), corruptPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return "", err
			}
		}
	}
	var aside string
	if name != "" {
		aside = filepath.Join(dir, corruptPrefix+name)
		err := os.Rename(filepath.Join(dir, name), aside)
		if errors.Is(err, fs.ErrNotExist) {
			aside = ""
		} else if err != nil {
			return "", err
		}
	}
	if err := os.Remove(filepath.Join(dir, currentFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return aside, syncDir(dir)
}

func kvConfig(cfg Config) map[string]any {
	return map[string]any{"bolt_timeout": cfg.LockTimeout.String()}
}

// createIndex makes a new, empty bleve index at path with the configured
// analyzer and records the schema in it.
func createIndex(path string, cfg Config) (bleve.Index, error) {
	idx, err := bleve.NewUsing(path, newMappingLayout(cfg.Analyzer, cfg.Lean), scorch.Name, scorch.Name, kvConfig(cfg))
	if err != nil {
		return nil, err
	}
	if err := idx.SetInternal(schemaKey, schemaOf(cfg).encode()); err != nil {
		_ = idx.Close()
		return nil, err
	}
	return idx, nil
}

// openIndex opens the bleve index at path and checks its schema. Damage
// wraps ErrCorrupt (bleve can panic on some damaged files; that is caught
// and reported the same way), another process's lock wraps ErrLocked, a
// different schema or analyzer wraps ErrIncompatible.
func openIndex(path string, cfg Config) (idx bleve.Index, err error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: live generation %s is missing", ErrCorrupt, filepath.Base(path))
		}
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			idx, err = nil, fmt.Errorf("%w: bleve panicked opening the index: %v", ErrCorrupt, r)
		}
	}()
	idx, err = bleve.OpenUsing(path, kvConfig(cfg))
	if err != nil {
		return nil, classifyOpen(err)
	}
	raw, err := idx.GetInternal(schemaKey)
	if err != nil {
		_ = idx.Close()
		return nil, fmt.Errorf("%w: read schema: %v", ErrCorrupt, err)
	}
	var s schema
	if raw == nil {
		_ = idx.Close()
		return nil, fmt.Errorf("%w: no schema record", ErrIncompatible)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		_ = idx.Close()
		return nil, fmt.Errorf("%w: schema record: %v", ErrCorrupt, err)
	}
	if want := schemaOf(cfg); s != want {
		_ = idx.Close()
		return nil, fmt.Errorf("%w: index has schema %d analyzer %q, config wants schema %d analyzer %q (%d: lean, %d: full)",
			ErrIncompatible, s.Version, s.Analyzer, want.Version, want.Analyzer, leanSchemaVersion, schemaVersion)
	}
	return idx, nil
}

// classifyOpen maps a bleve open/create error: lock timeouts and
// permission problems are environmental, everything else is damage.
func classifyOpen(err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %v", ErrLocked, err)
	case errors.Is(err, fs.ErrPermission):
		return err
	default:
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
}
