// Package modelcache keeps the models of the built-in embedder on disk:
// one directory per model in the sentence-transformers layout, filled by
// Pull (a pinned revision from Hugging Face, every file checked against its
// SHA-256) or by Import (a directory or zip the user already has).
//
// A model directory appears only complete: files are written into a
// staging directory inside the cache and the directory is renamed into
// place once every file is verified, with a marker file (.ragd-model.json)
// that records where the files came from, the revision and each file's
// size and SHA-256. Pulls and imports of one model take a lock file, so
// two processes pulling the same model do not corrupt each other; the
// second finds the first one's result.
//
// Layout of the cache directory:
//
//	<dir>/sentence-transformers--all-MiniLM-L6-v2/   one model ("/" becomes "--")
//	<dir>/.tmp/                                      staging (resumable pulls, imports)
//	<dir>/.locks/                                    one lock file per model
package modelcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ragd/ragd/internal/atomicfile"
)

// Environment variables.
const (
	// EnvCache names the cache directory.
	EnvCache = "RAGD_MODEL_CACHE"
	// EnvBaseURL names the server Pull downloads from (a mirror, or a test
	// server); HF_ENDPOINT, the variable of Hugging Face's own tools, is
	// read when it is unset.
	EnvBaseURL    = "RAGD_MODEL_BASE_URL"
	EnvHFEndpoint = "HF_ENDPOINT"
	// DefaultBaseURL is Hugging Face.
	DefaultBaseURL = "https://huggingface.co"
	// DefaultMaxImportBytes bounds what one Import copies or unpacks.
	DefaultMaxImportBytes = 4 << 30
)

// markerFile is written last into every model directory.
const markerFile = ".ragd-model.json"

// Source says how a model came into the cache.
type Source string

const (
	SourcePulled   Source = "pulled"
	SourceImported Source = "imported"
)

// Cache is a model cache directory. The zero value of every field but Dir
// is usable; New fills Dir and BaseURL from the environment.
type Cache struct {
	// Dir is the cache directory; it is created when needed.
	Dir string
	// HTTPClient downloads; nil means a client with connect and
	// response-header timeouts but no overall timeout (pass a ctx to Pull
	// to bound it).
	HTTPClient *http.Client
	// BaseURL is the server Pull downloads from; "" means DefaultBaseURLFromEnv().
	BaseURL string
	// Progress receives a progress bar (bytes, rate, time left) during
	// Pull; nil shows none.
	Progress io.Writer
	// PlainProgress writes one line per file to Progress instead of a bar,
	// for logs and terminals that do not redraw.
	PlainProgress bool
	// Models are the models Pull may download and that Import verifies
	// against; nil means KnownModels(). Names and aliases here are also
	// what the Cache's methods accept besides the built-in ones.
	Models []Model
	// MaxImportBytes bounds the bytes one Import copies or unpacks (zip
	// bombs); 0 means DefaultMaxImportBytes.
	MaxImportBytes int64

	// Test hooks (see export_test.go).
	lockWait   func(name string)                        // called once when the lock is held by another
	wrapWriter func(path string, w io.Writer) io.Writer // wraps each file being written
	freeSpace  func(dir string) (int64, bool)           // bytes available; false: unknown
}

// DefaultDir returns $RAGD_MODEL_CACHE, else the "ragd/models" directory
// under the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME or
// ~/.cache on Linux, ~/Library/Caches on macOS, %LocalAppData% on Windows).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("modelcache: no cache directory (set %s): %w", EnvCache, err)
	}
	return filepath.Join(base, "ragd", "models"), nil
}

// DefaultBaseURLFromEnv returns $RAGD_MODEL_BASE_URL, else $HF_ENDPOINT,
// else DefaultBaseURL.
func DefaultBaseURLFromEnv() string {
	for _, v := range []string{EnvBaseURL, EnvHFEndpoint} {
		if u := os.Getenv(v); u != "" {
			return strings.TrimRight(u, "/")
		}
	}
	return DefaultBaseURL
}

// New returns a Cache on DefaultDir() downloading from DefaultBaseURLFromEnv().
func New() (*Cache, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return &Cache{Dir: dir, BaseURL: DefaultBaseURLFromEnv()}, nil
}

// Canonical returns the cache name of a model: a known model's alias
// becomes its full name ("all-MiniLM-L6-v2" ->
// "sentence-transformers/all-MiniLM-L6-v2", in any case), other names are
// kept as given after validation. A valid name is "name" or "org/name",
// each part at most 96 characters of letters, digits, '.', '_' and '-',
// not starting with '.' or '-' and without "--" (no absolute paths, no
// "..", no backslashes). Invalid names wrap ErrInvalidName.
func Canonical(name string) (string, error) {
	return canonical(knownModels, name)
}

func canonical(models []Model, name string) (string, error) {
	if err := validName(name); err != nil {
		return "", err
	}
	if full, ok := aliasOf(models, name); ok {
		return full, nil
	}
	if full, ok := aliasOf(knownModels, name); ok {
		return full, nil
	}
	return name, nil
}

func validName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidName, name, why) }
	if name == "" {
		return bad("empty")
	}
	parts := strings.Split(name, "/")
	if len(parts) > 2 {
		return bad(`want "name" or "org/name"`)
	}
	for _, p := range parts {
		switch {
		case p == "":
			return bad("empty part (absolute path or double slash)")
		case p == "." || p == "..":
			return bad("'.' and '..' are not names")
		case len(p) > 96:
			return bad("a part is longer than 96 characters")
		case p[0] == '.' || p[0] == '-':
			return bad("a part starts with '.' or '-'")
		case strings.Contains(p, "--"):
			return bad(`"--" is reserved`)
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return bad(fmt.Sprintf("character %q is not allowed (letters, digits, '.', '_', '-')", r))
			}
		}
	}
	return nil
}

// models returns the pinned models this Cache knows.
func (c *Cache) models() []Model {
	if c.Models != nil {
		return c.Models
	}
	return knownModels
}

// canonical is Canonical with the Cache's own models.
func (c *Cache) canonical(name string) (string, error) {
	return canonical(c.models(), name)
}

// modelDir is where a model with canonical name lives.
func (c *Cache) modelDir(name string) string {
	return filepath.Join(c.Dir, strings.ReplaceAll(name, "/", "--"))
}

func (c *Cache) tmpDir() string  { return filepath.Join(c.Dir, ".tmp") }
func (c *Cache) lockDir() string { return filepath.Join(c.Dir, ".locks") }

// marker is the content of .ragd-model.json.
type marker struct {
	Name        string    `json:"name"`
	Source      Source    `json:"source"`
	Verified    bool      `json:"verified"`
	Revision    string    `json:"revision,omitempty"`
	Origin      string    `json:"origin"`
	InstalledAt time.Time `json:"installed_at"`
	Files       []File    `json:"files"`
}

// readMarker reads and checks dir's marker. A marker that is there but
// is not a record ragd writes (not JSON, an invalid name, a file path
// that leaves dir, a bad size or hash) is an error wrapping errMalformed.
func readMarker(dir string) (*marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return nil, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w %s: %v", errMalformed, markerFile, err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%w %s: %v", errMalformed, markerFile, err)
	}
	return &m, nil
}

// errMalformed: a marker that ragd did not write as it is.
var errMalformed = errors.New("malformed")

// check makes sure m is a record ragd writes. Every file it lists is
// confined to the model's directory: a relative, clean, slash-separated
// path that does not climb out (so that reading the marker never makes
// ragd look at "../../../../etc/passwd").
func (m *marker) check() error {
	if err := validName(m.Name); err != nil {
		return err
	}
	if m.Source != SourcePulled && m.Source != SourceImported {
		return fmt.Errorf("source %q is neither %q nor %q", m.Source, SourcePulled, SourceImported)
	}
	if len(m.Files) == 0 {
		return errors.New("no files")
	}
	seen := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if !localSlashPath(f.Path) || path.Clean(f.Path) != f.Path || f.Path == markerFile {
			return fmt.Errorf("file %q leaves the model's directory", f.Path)
		}
		if seen[f.Path] {
			return fmt.Errorf("file %q is listed twice", f.Path)
		}
		seen[f.Path] = true
		if f.Size < 0 {
			return fmt.Errorf("file %q: size %d", f.Path, f.Size)
		}
		if len(f.SHA256) != 64 || strings.Trim(f.SHA256, "0123456789abcdef") != "" {
			return fmt.Errorf("file %q: sha256 %q is not 64 lower-case hex digits", f.Path, f.SHA256)
		}
	}
	return nil
}

func writeMarker(dir string, m *marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, markerFile), append(b, '\n'), 0o644)
}

// check reads dir's marker and makes sure every file it lists is there
// with its recorded size. It does not re-hash the files.
func check(dir, name string) (*marker, error) {
	m, err := readMarker(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("%w: %s (looked in %s)", ErrNotCached, name, dir)
		}
		return nil, fmt.Errorf("%w: %s: %s has no %s (not installed by ragd, or damaged)", ErrNotCached, name, dir, markerFile)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotCached, name, err)
	}
	if !strings.EqualFold(m.Name, name) {
		return nil, fmt.Errorf("%w: %s: %s holds %q", ErrNotCached, name, dir, m.Name)
	}
	// Every file is looked at through dir as a root: a link is not
	// followed, neither the file's own nor a directory's on the way
	// ("evil/passwd" with evil a link to /etc leaves dir as surely as
	// "../passwd" does).
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotCached, name, err)
	}
	defer root.Close()
	for _, f := range m.Files {
		st, err := root.Lstat(filepath.FromSlash(f.Path))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotCached, name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s leaves the model's directory or cannot be read (%v: damaged, pull or import it again)",
				ErrNotCached, name, f.Path, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s: %s is not a regular file (damaged: pull or import it again)", ErrNotCached, name, f.Path)
		}
		if st.Size() != f.Size {
			return nil, fmt.Errorf("%w: %s: %s is %d bytes, %s says %d (damaged: pull or import it again)",
				ErrNotCached, name, f.Path, st.Size(), markerFile, f.Size)
		}
	}
	return m, nil
}

// Path returns the directory of the model called name when the cache holds
// it complete (every file its marker lists, at the recorded size; hashes
// were checked when it was installed). Otherwise the error wraps
// ErrNotCached and says what is missing.
func (c *Cache) Path(name string) (string, error) {
	n, err := c.canonical(name)
	if err != nil {
		return "", err
	}
	dir := c.modelDir(n)
	if _, err := check(dir, n); err != nil {
		return "", err
	}
	return dir, nil
}

// Entry describes a cached model.
type Entry struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	Size int64  `json:"size"`
	// Source is "pulled" or "imported".
	Source Source `json:"source"`
	// Verified: every file of the pinned revision is there with its
	// pinned SHA-256 (always true for a pulled model). An imported model
	// of unknown name, or whose files differ from the pin, is not.
	Verified bool `json:"verified"`
	// Revision is the pinned revision the files match; "" when not verified.
	Revision string `json:"revision,omitempty"`
	// Origin is the URL pulled from or the path imported from.
	Origin      string    `json:"origin"`
	InstalledAt time.Time `json:"installed_at"`
	Files       []File    `json:"files"`
	// Problem says why the directory is not usable ("" when it is).
	Problem string `json:"problem,omitempty"`
}

// List returns the models in the cache, sorted by name. A directory that
// is damaged (a file missing, of the wrong size or not a regular file, or
// a malformed .ragd-model.json) is listed with Problem set, under the
// name its directory says when the marker cannot be trusted; directories
// without a marker (not installed by ragd) are left out. A missing cache
// directory is an empty list.
func (c *Cache) List() ([]Entry, error) {
	des, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("modelcache: list: %w", err)
	}
	var out []Entry
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		dir := filepath.Join(c.Dir, de.Name())
		m, err := readMarker(dir)
		if errors.Is(err, errMalformed) {
			out = append(out, Entry{Name: strings.ReplaceAll(de.Name(), "--", "/"), Dir: dir, Problem: err.Error()})
			continue
		}
		if err != nil {
			continue
		}
		e := Entry{Name: m.Name, Dir: dir, Source: m.Source, Verified: m.Verified, Revision: m.Revision,
			Origin: m.Origin, InstalledAt: m.InstalledAt, Files: m.Files}
		for _, f := range m.Files {
			e.Size += f.Size
		}
		if dir != c.modelDir(m.Name) {
			e.Problem = fmt.Sprintf("directory %s does not match the name %q", de.Name(), m.Name)
		} else if _, err := check(dir, m.Name); err != nil {
			e.Problem = strings.TrimPrefix(err.Error(), ErrNotCached.Error()+": ")
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// install moves the complete, verified staging directory stage into place
// as the model name, replacing what was there. The caller holds the
// model's lock. Readers see either the old directory, none (for the
// moment between two renames), or the new one, never a partial one.
func (c *Cache) install(stage, name string) (string, error) {
	dest := c.modelDir(name)
	atomicfile.SyncDir(stage)
	var old string
	if _, err := os.Lstat(dest); err == nil {
		o, err := os.MkdirTemp(c.tmpDir(), "old-")
		if err != nil {
			return "", fmt.Errorf("modelcache: install %s: %w", name, err)
		}
		old = filepath.Join(o, "model")
		if err := os.Rename(dest, old); err != nil {
			os.Remove(o)
			return "", fmt.Errorf("modelcache: install %s: move the old copy aside: %w", name, err)
		}
		defer os.RemoveAll(o)
	}
	if err := os.Rename(stage, dest); err != nil {
		if old != "" {
			_ = os.Rename(old, dest)
		}
		return "", fmt.Errorf("modelcache: install %s: %w", name, err)
	}
	atomicfile.SyncDir(c.Dir)
	return dest, nil
}
