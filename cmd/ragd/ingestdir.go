package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/chunk"
	"github.com/ragd/ragd/ingest/folder"
	"github.com/ragd/ragd/ingest/pdf"
	"github.com/ragd/ragd/spi"
)

// formatFiles is --format's value for a folder of files.
const formatFiles = "files"

const (
	defaultChunkTokens   = 256
	maxDefaultChunkToken = 512
	defaultOverlapTokens = 32
	defaultMaxFileBytes  = 32 << 20
	defaultMaxPDFPages   = 2000
	defaultPDFTimeout    = 2 * time.Minute
	// maxDoneFiles bounds the files waiting for their deletes and their
	// state entry.
	maxDoneFiles = 256
)

// folderFlags are the flags of `ragd ingest DIR` for a folder of files.
type folderFlags struct {
	source       string
	include      []string
	exclude      []string
	chunkTokens  int
	overlap      int
	tokenizer    string
	state        string
	resend       bool
	maxFileBytes int64
	maxPDFPages  int
	pdfTimeout   time.Duration
}

func addFolderFlags(fl *pflag.FlagSet, f *folderFlags) {
	fl.StringVar(&f.source, "source", "", "folder of files: the name of this ingest, prefixing every chunk id and set as metadata \"source\" (default the folder's name)")
	fl.StringArrayVar(&f.include, "include", nil, "folder of files: read only files matching this glob (repeat; \"*.md\", \"guides/**\")")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "folder of files: leave out files and directories matching this glob (repeat)")
	fl.IntVar(&f.chunkTokens, "chunk-tokens", 0, "folder of files: most tokens of a chunk, title included (default: what the server's model takes, at most 512; 256 when unknown)")
	fl.IntVar(&f.overlap, "overlap-tokens", defaultOverlapTokens, "folder of files: tokens at the end of a chunk repeated at the start of the next")
	fl.StringVar(&f.tokenizer, "tokenizer", "auto", "folder of files: how tokens are counted: auto (the server's built-in model from the local model cache, else approx), approx, or a model directory")
	fl.StringVar(&f.state, "state", "", "folder of files: the file remembering what earlier runs sent (default under the user's cache directory, one per server, tenant and source)")
	fl.BoolVar(&f.resend, "resend", false, "folder of files: send every chunk, also those an earlier run sent unchanged (the server still embeds only what changed)")
	fl.Int64Var(&f.maxFileBytes, "max-file-bytes", defaultMaxFileBytes, "folder of files: larger files, and PDFs with more text than this, are skipped with an error")
	fl.IntVar(&f.maxPDFPages, "max-pdf-pages", defaultMaxPDFPages, "folder of files: PDFs with more pages are skipped with an error")
	fl.DurationVar(&f.pdfTimeout, "pdf-timeout", defaultPDFTimeout, "folder of files: the most time to read one PDF; a slower one is stopped and skipped with an error")
}

// folderOnlyFlags may only be given with a folder of files.
var folderOnlyFlags = []string{"source", "include", "exclude", "chunk-tokens", "overlap-tokens", "tokenizer", "state", "resend", "max-file-bytes",
	"max-pdf-pages", "pdf-timeout"}

// folderInput reports whether arg is a folder of files: a directory read
// with --format files, or with auto when it holds no corpus.jsonl (a BEIR
// dataset).
func folderInput(arg, format string) (bool, error) {
	st, err := os.Stat(arg)
	if err != nil || !st.IsDir() {
		if format == formatFiles {
			return false, usageError{fmt.Errorf("--format files reads a directory; %s is not one", arg)}
		}
		return false, nil
	}
	switch format {
	case formatFiles:
		return true, nil
	case "", "auto":
		_, err := os.Stat(filepath.Join(arg, "corpus.jsonl"))
		return errors.Is(err, os.ErrNotExist), nil
	}
	return false, nil
}

// dirStats counts a folder run.
type dirStats struct {
	files, newFiles, changed, unchanged, deletedFiles, failedFiles int
	skipped                                                        int
	chunks, notSent                                                int
	sent, ok, serverUnchanged, failed                              int
	deleted, requests                                              int
	bytesDone, bytesTotal                                          int64
	filesTotal                                                     int
	failures                                                       []string
}

// pendingFile is a file whose chunks are being sent.
type pendingFile struct {
	rel     string
	entry   folder.FileEntry // the entry to write once done
	stale   []string         // ids of the earlier entry to delete once sent
	waiting int              // chunks not answered yet
	failed  bool
}

// queuedDoc is a chunk waiting in the batch, with its file.
type queuedDoc struct {
	doc  spi.Document
	file *pendingFile
}

// dirIngester runs one `ragd ingest DIR` of a folder of files.
type dirIngester struct {
	app     *app
	client  *client.Client
	flags   ingestFlags
	root    string
	chunker folder.Chunker
	// pdf reads PDFs; it starts PDFium at the first PDF that needs
	// reading and stops it when the walk is over.
	pdf          *pdf.Engine
	pdfAnnounced bool
	state        *folder.State
	filter       folder.Filter
	resend       bool
	seen         map[string]bool
	// unread are the directories (with a trailing "/") the walk could
	// not read: the sweep keeps the chunks of the files under them.
	unread []string
	batch  []queuedDoc
	split  *splitter[queuedDoc]
	done   []*pendingFile
	stats  dirStats
	began  time.Time
	prog   dirProgress
}

func runIngestDir(ctx context.Context, a *app, cf *clientFlags, f ingestFlags, root string) error {
	ff := f.folder
	in := &dirIngester{app: a, flags: f, root: root, seen: map[string]bool{},
		filter: folder.Filter{Include: ff.include, Exclude: ff.exclude}, resend: ff.resend}
	in.split = &splitter[queuedDoc]{max: f.batch, stderr: a.stderr, clear: func() { in.prog.clear() }, post: in.post,
		id: func(d queuedDoc) string { return d.doc.ID }, done: in.answered}
	if err := in.filter.Validate(); err != nil {
		return usageError{err}
	}
	c, err := cf.client(func(cfg *client.Config) {
		cfg.MaxRetries = f.retries
		if f.retries == 0 {
			cfg.MaxRetries = -1
		}
		cfg.MinBackoff, cfg.MaxBackoff = f.retryWait, max(f.retryWait, maxRetryWait)
		cfg.OnRetry = func(err error, retry int, wait time.Duration) {
			in.prog.clear()
			fmt.Fprintf(a.stderr, "ingest: %v; retry %d of %d in %s\n", explain(err), retry, f.retries, wait)
		}
	})
	if err != nil {
		return err
	}
	in.client = c
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	source := ff.source
	if source == "" {
		source = filepath.Base(abs)
	}
	if err := folder.ValidateSource(source); err != nil {
		return usageError{fmt.Errorf("--source: %w (name the ingest with --source)", err)}
	}
	tok, err := chooseCounter(ctx, c, ff.tokenizer)
	if err != nil {
		return err
	}
	opts, err := chunkOptions(ff, tok)
	if err != nil {
		return err
	}
	in.chunker = folder.Chunker{Source: source, Tenant: f.tenant, Options: opts, CounterName: tok.name}
	statePath := ff.state
	key := folder.StateKey{Server: c.BaseURL(), Tenant: f.tenant, Source: source}
	if statePath == "" {
		if statePath, err = folder.DefaultStatePath(key); err != nil {
			return err
		}
	}
	if in.state, err = folder.OpenState(statePath, key); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer in.state.Close()
	prevRoot, err := in.state.Root()
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if prevRoot != "" && prevRoot != abs && ff.source == "" {
		// Two folders of one name would share ids and delete each
		// other's chunks.
		return usageError{fmt.Errorf("source %q was ingested from %s, not %s: name this folder's ingest with --source NAME, "+
			"or pass --source %s to make this folder replace that one", source, prevRoot, abs, source)}
	}
	if err := in.state.SetRoot(abs); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}

	fmt.Fprintf(a.stderr, "ingest: reading folder %s as source %q into %s; chunks of at most %d tokens (%s), overlap %d\n",
		root, source, c.BaseURL(), opts.MaxTokens, tok.describe, opts.Overlap)
	if !in.resend {
		if err := in.probe(ctx); err != nil {
			return err
		}
	}
	in.stats.filesTotal, in.stats.bytesTotal = in.count()
	in.began = time.Now()
	in.prog = newDirProgress(a.rawStderr, f.progress, in.stats.bytesTotal)
	in.pdf = pdf.New(pdf.Options{MaxPages: ff.maxPDFPages, MaxTextBytes: ff.maxFileBytes, Timeout: ff.pdfTimeout,
		CacheDir: pdf.DefaultCacheDir()})
	defer in.pdf.Close()
	runErr := in.walk(ctx)
	in.prog.finish()
	in.printSummary(a.stdout, runErr == nil, source)
	switch {
	case runErr != nil:
		if errors.Is(runErr, context.Canceled) {
			return errors.New("ingest: interrupted; rerun the same command to go on (files already sent are skipped)")
		}
		return fmt.Errorf("ingest: stopped: %w; rerun the same command to go on (files already sent are skipped)", explain(runErr))
	case in.stats.failedFiles > 0:
		return fmt.Errorf("ingest: %d of %d files failed; a rerun tries them again", in.stats.failedFiles, in.stats.files)
	}
	return nil
}

// chunkOptions turns the flags and the counter into chunk.Options.
func chunkOptions(ff folderFlags, tok counterChoice) (chunk.Options, error) {
	maxTokens := ff.chunkTokens
	if maxTokens == 0 {
		maxTokens = defaultChunkTokens
		if tok.budget > 0 {
			maxTokens = min(tok.budget, maxDefaultChunkToken)
		}
	}
	o := chunk.Options{MaxTokens: maxTokens, Overlap: ff.overlap, Counter: tok.counter}
	if err := o.Validate(); err != nil {
		return o, usageError{fmt.Errorf("--chunk-tokens %d, --overlap-tokens %d: %w", maxTokens, ff.overlap, err)}
	}
	return o, nil
}

// probe checks that the server still holds a chunk the state says an
// earlier run sent; when it does not (a new or restored server), every
// chunk is sent again.
func (in *dirIngester) probe(ctx context.Context) error {
	var id, hash string
	err := in.state.Files(func(_ string, e folder.FileEntry) bool {
		if len(e.Chunks) == 0 {
			return true
		}
		id, hash = e.Chunks[0].ID, e.Chunks[0].Hash
		return false
	})
	if err != nil || id == "" {
		return err
	}
	d, err := in.client.Document(ctx, id)
	switch {
	case errors.Is(err, client.ErrNotFound):
	case err != nil:
		return fmt.Errorf("ingest: %w", explain(err))
	default:
		// The fields a chunk sends; the server adds entities and times.
		sent := spi.Document{ID: d.ID, Tenant: in.chunker.Tenant, Title: d.Title, Text: d.Text, Metadata: d.Metadata}
		if folder.Hash(sent) == hash {
			return nil
		}
	}
	fmt.Fprintf(in.app.stderr, "ingest: the server does not hold chunk %q as an earlier run sent it (a new or restored server?): sending every chunk again\n", id)
	in.resend = true
	return nil
}

// count walks the folder once for the progress display's totals.
func (in *dirIngester) count() (files int, bytes int64) {
	_ = folder.Walk(in.root, in.filter, func(f folder.File, err error) error {
		if err == nil {
			files++
			bytes += f.Size
		}
		return nil
	})
	return files, bytes
}

// walk reads, chunks and sends every file, then deletes the chunks of the
// files the state knows and the walk did not find.
func (in *dirIngester) walk(ctx context.Context) error {
	err := folder.Walk(in.root, in.filter, func(f folder.File, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case errors.Is(err, folder.ErrSymlink):
			in.stats.skipped++
			in.prog.clear()
			fmt.Fprintf(in.app.stderr, "ingest: %s: skipped: %v\n", f.Rel, err)
			return nil
		case err != nil && f.IsDir:
			// Its files' chunks stay: the sweep leaves them alone.
			in.unread = append(in.unread, f.Rel+"/")
			in.fileError(f.Rel+"/", err)
			return nil
		case err != nil:
			in.seen[f.Rel] = true
			in.fileError(f.Rel, err)
			return nil
		}
		return in.file(ctx, f)
	})
	// The PDFs are read: stop PDFium (its memory goes with it).
	_ = in.pdf.Close()
	if err == nil {
		err = in.flush(ctx)
	}
	if err == nil {
		err = in.flushDone(ctx)
	}
	if err == nil {
		err = in.sweep(ctx)
	}
	return err
}

func (in *dirIngester) fileError(rel string, err error) {
	in.stats.failedFiles++
	in.prog.clear()
	fmt.Fprintf(in.app.stderr, "ingest: %s: %v\n", rel, err)
	if len(in.stats.failures) < maxListedFailures {
		in.stats.failures = append(in.stats.failures, fmt.Sprintf("%s: %v", rel, err))
	}
}

// file handles one file of the walk.
func (in *dirIngester) file(ctx context.Context, f folder.File) error {
	in.stats.files++
	in.seen[f.Rel] = true
	defer func() {
		in.stats.bytesDone += f.Size
		in.prog.update(&in.stats, time.Since(in.began))
	}()
	old, had, err := in.state.File(f.Rel)
	if err != nil {
		return err
	}
	content, sum, err := folder.ReadFile(f, in.flags.folder.maxFileBytes)
	if err != nil {
		in.fileError(f.Rel, err) // its earlier chunks stay
		return nil
	}
	fp := in.chunker.Fingerprint()
	if had && !in.resend && old.SHA256 == sum && old.Fingerprint == fp {
		in.stats.unchanged++
		in.stats.chunks += len(old.Chunks)
		in.stats.notSent += len(old.Chunks)
		return nil
	}
	var docs []spi.Document
	if f.Format == folder.PDF {
		docs, err = in.pdfDocuments(ctx, f, content)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	} else {
		docs, err = in.chunker.Documents(f, content)
	}
	if err != nil {
		in.fileError(f.Rel, err)
		return nil
	}
	if had {
		in.stats.changed++
	} else {
		in.stats.newFiles++
	}
	in.stats.chunks += len(docs)
	sent := make(map[string]string, len(old.Chunks))
	for _, c := range old.Chunks {
		sent[c.ID] = c.Hash
	}
	pf := &pendingFile{rel: f.Rel, entry: folder.FileEntry{SHA256: sum, Fingerprint: fp}}
	keep := make(map[string]bool, len(docs))
	for _, d := range docs {
		h := folder.Hash(d)
		pf.entry.Chunks = append(pf.entry.Chunks, folder.ChunkEntry{ID: d.ID, Hash: h})
		keep[d.ID] = true
		if !in.resend && sent[d.ID] == h {
			in.stats.notSent++
			continue
		}
		pf.waiting++
		in.batch = append(in.batch, queuedDoc{doc: d, file: pf})
	}
	for _, c := range old.Chunks {
		if !keep[c.ID] {
			pf.stale = append(pf.stale, c.ID)
		}
	}
	if pf.waiting == 0 {
		if err := in.complete(ctx, pf); err != nil {
			return err
		}
	}
	for len(in.batch) >= in.flags.batch {
		if err := in.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pdfDocuments reads a PDF's text and cuts it into chunks.
func (in *dirIngester) pdfDocuments(ctx context.Context, f folder.File, content []byte) ([]spi.Document, error) {
	if !in.pdfAnnounced {
		in.pdfAnnounced = true
		in.prog.clear()
		fmt.Fprintf(in.app.stderr, "ingest: starting the PDF reader (PDFium in WebAssembly; compiling it takes seconds the first time on a machine)\n")
	}
	text, err := in.pdf.Extract(ctx, content)
	if err != nil {
		return nil, err
	}
	return in.chunker.PageDocuments(f, text.Title, text.Pages)
}

// flush sends the batch through the splitter.
func (in *dirIngester) flush(ctx context.Context) error {
	err := in.split.send(ctx, in.batch)
	in.batch = nil
	return err
}

// post sends chunks as one request.
func (in *dirIngester) post(ctx context.Context, q []queuedDoc) ([]ingest.Result, error) {
	docs := make([]spi.Document, len(q))
	for i, d := range q {
		docs[i] = d.doc
	}
	results, err := upsert(ctx, in.client, in.flags, docs)
	if err == nil {
		in.stats.requests++
	}
	return results, err
}

// answered records the results of sent chunks; a file whose chunks are
// all answered is complete.
func (in *dirIngester) answered(ctx context.Context, q []queuedDoc, results []ingest.Result) error {
	for i, r := range results {
		pf := q[i].file
		in.stats.sent++
		switch {
		case r.Status == ingest.StatusOK:
			in.stats.ok++
			if r.Unchanged {
				in.stats.serverUnchanged++
			}
		case r.Code == ingest.CodeEmptyDocument:
			// Cannot happen (chunks are not empty); nothing to index.
		default:
			in.stats.failed++
			if !pf.failed {
				pf.failed = true
				in.fileError(pf.rel, fmt.Errorf("chunk %s: %s: %s", q[i].doc.Metadata[folder.KeyChunk], r.Code, truncateRunes(r.Error, 200)))
			}
		}
		pf.waiting--
		if pf.waiting == 0 {
			if err := in.complete(ctx, pf); err != nil {
				return err
			}
		}
	}
	return in.flushDoneIfFull(ctx)
}

// complete queues a file whose chunks were all answered for its deletes
// and its state entry; a file with a failed chunk keeps its earlier entry,
// so that a rerun sends it again.
func (in *dirIngester) complete(ctx context.Context, pf *pendingFile) error {
	if pf.failed {
		return nil
	}
	in.done = append(in.done, pf)
	return in.flushDoneIfFull(ctx)
}

func (in *dirIngester) flushDoneIfFull(ctx context.Context) error {
	stale := 0
	for _, pf := range in.done {
		stale += len(pf.stale)
	}
	if stale >= in.flags.batch || len(in.done) >= maxDoneFiles {
		return in.flushDone(ctx)
	}
	return nil
}

// flushDone deletes the stale chunks of the completed files and writes
// their state entries.
func (in *dirIngester) flushDone(ctx context.Context) error {
	if len(in.done) == 0 {
		return nil
	}
	owner := map[string]*pendingFile{}
	var ids []string
	for _, pf := range in.done {
		for _, id := range pf.stale {
			owner[id] = pf
			ids = append(ids, id)
		}
	}
	failed, err := in.delete(ctx, ids)
	if err != nil {
		return err
	}
	put := map[string]folder.FileEntry{}
	for _, pf := range in.done {
		put[pf.rel] = pf.entry
	}
	for id, msg := range failed {
		pf := owner[id]
		if _, ok := put[pf.rel]; ok {
			delete(put, pf.rel)
			in.fileError(pf.rel, fmt.Errorf("deleting its old chunk %q: %s", id, msg))
		}
	}
	in.done = nil
	return in.state.Update(put, nil)
}

// delete deletes ids in requests of at most --batch and returns the ids
// that failed with their messages (missing ids are not failures).
func (in *dirIngester) delete(ctx context.Context, ids []string) (map[string]string, error) {
	failed := map[string]string{}
	for len(ids) > 0 {
		n := min(len(ids), in.flags.batch)
		resp, err := in.client.Delete(ctx, ids[:n], nil)
		if err != nil {
			return nil, err
		}
		in.stats.requests++
		for i, r := range resp.Results {
			switch r.Status {
			case ingest.StatusOK:
				in.stats.deleted++
			case ingest.StatusNotFound:
			default:
				failed[ids[i]] = r.Code + ": " + truncateRunes(r.Error, 200)
			}
		}
		ids = ids[n:]
	}
	return failed, nil
}

// sweep deletes the chunks of files the state knows but the walk did not
// find (deleted, now hidden or excluded), then their entries.
func (in *dirIngester) sweep(ctx context.Context) error {
	var gone []string
	err := in.state.Files(func(rel string, _ folder.FileEntry) bool {
		if !in.seen[rel] && !under(rel, in.unread) {
			gone = append(gone, rel)
		}
		return true
	})
	if err != nil {
		return err
	}
	sort.Strings(gone)
	for len(gone) > 0 {
		var ids, rels []string
		for len(gone) > 0 && len(ids) < in.flags.batch {
			e, ok, err := in.state.File(gone[0])
			if err != nil {
				return err
			}
			if ok {
				for _, c := range e.Chunks {
					ids = append(ids, c.ID)
				}
			}
			rels, gone = append(rels, gone[0]), gone[1:]
		}
		failed, err := in.delete(ctx, ids)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			for id, msg := range failed {
				in.fileError("(deleted file)", fmt.Errorf("chunk %q: %s", id, msg))
			}
			continue // keep their entries: a rerun deletes them again
		}
		in.stats.deletedFiles += len(rels)
		if err := in.state.Update(nil, rels); err != nil {
			return err
		}
	}
	return nil
}

// under reports whether rel lies in one of dirs (each ending in "/").
func under(rel string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}

func (in *dirIngester) printSummary(w io.Writer, complete bool, source string) {
	s := &in.stats
	elapsed := time.Since(in.began)
	state := "done"
	if !complete {
		state = "stopped early"
	}
	fmt.Fprintf(w, "ingest %s: %s (folder, source %q) in %s\n", state, in.root, source, elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  files    %d  (%d new, %d changed, %d unchanged, %d failed; %d deleted since the last run)\n",
		s.files, s.newFiles, s.changed, s.unchanged, s.failedFiles, s.deletedFiles)
	if s.skipped > 0 {
		fmt.Fprintf(w, "  skipped  %d symbolic %s (not followed)\n", s.skipped, plural(s.skipped, "link", "links"))
	}
	fmt.Fprintf(w, "  chunks   %d  (%d not sent: unchanged since the last run)\n", s.chunks, s.notSent)
	rate := 0.0
	if sec := elapsed.Seconds(); sec > 0 {
		rate = float64(s.sent) / sec
	}
	fmt.Fprintf(w, "  sent     %d chunks in %d %s (%.1f chunks/s)\n", s.sent, s.requests, plural(s.requests, "request", "requests"), rate)
	if s.serverUnchanged > 0 {
		fmt.Fprintf(w, "  ok       %d  (%d unchanged: identical to the stored chunks, nothing written or embedded)\n", s.ok, s.serverUnchanged)
	} else {
		fmt.Fprintf(w, "  ok       %d\n", s.ok)
	}
	fmt.Fprintf(w, "  deleted  %d chunks (of changed and deleted files)\n", s.deleted)
	fmt.Fprintf(w, "  failed   %d chunks (the server refused them)\n", s.failed)
	if len(s.failures) > 0 {
		more := ""
		if s.failedFiles > len(s.failures) {
			more = fmt.Sprintf(" (first %d of %d)", len(s.failures), s.failedFiles)
		}
		fmt.Fprintf(w, "failures%s:\n", more)
		for _, f := range s.failures {
			fmt.Fprintf(w, "  %s\n", truncateRunes(f, 300))
		}
	}
}

// dirProgress shows how far a folder run got.
type dirProgress interface {
	update(s *dirStats, elapsed time.Duration)
	clear()
	finish()
}

func newDirProgress(w io.Writer, mode string, total int64) dirProgress {
	if mode == "auto" {
		mode = "plain"
		if isTerminal(w) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar":
		return &dirBar{bar: progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("ingest"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(),
		)}
	case "plain":
		return &dirPlain{w: w}
	}
	return noDirProgress{}
}

type dirBar struct{ bar *progressbar.ProgressBar }

func (p *dirBar) update(s *dirStats, _ time.Duration) {
	_ = p.bar.Set64(s.bytesDone)
	p.bar.Describe(fmt.Sprintf("ingest: %d/%d files, %d chunks sent, %d failed", s.files, s.filesTotal, s.sent, s.failed))
}
func (p *dirBar) clear()  { _ = p.bar.Clear() }
func (p *dirBar) finish() { _ = p.bar.Finish() }

// dirPlain writes a line after the first file, then at most every
// plainProgressEvery.
type dirPlain struct {
	w       io.Writer
	printed bool
	last    time.Duration
}

func (p *dirPlain) update(s *dirStats, elapsed time.Duration) {
	if p.printed && elapsed-p.last < plainProgressEvery {
		return
	}
	p.printed, p.last = true, elapsed
	pct := 100.0
	if s.bytesTotal > 0 {
		pct = 100 * float64(s.bytesDone) / float64(s.bytesTotal)
	}
	left, ok := eta(float64(s.bytesDone), float64(s.bytesTotal), elapsed)
	fmt.Fprintf(p.w, "ingest: %d of %d files (%.0f%%): %d chunks sent, %d ok (%d unchanged), %d failed, %s\n",
		s.files, s.filesTotal, pct, s.sent, s.ok, s.serverUnchanged, s.failed, formatETA(left, ok))
}
func (p *dirPlain) clear()  {}
func (p *dirPlain) finish() {}

type noDirProgress struct{}

func (noDirProgress) update(*dirStats, time.Duration) {}
func (noDirProgress) clear()                          {}
func (noDirProgress) finish()                         {}
