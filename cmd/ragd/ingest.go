package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
)

const (
	defaultIngestBatch = 256
	maxIngestBatch     = 10000
	// maxRetryWait caps one wait between retries of a batch.
	maxRetryWait = 30 * time.Second
	// plainProgressEvery spaces the progress lines written when stderr is
	// not a terminal.
	plainProgressEvery = 5 * time.Second
	// maxListedFailures is how many failures the summary lists.
	maxListedFailures = 10
	// codeMalformedLine marks an input line that did not parse; it is the
	// CLI's own code, not the server's.
	codeMalformedLine = "malformed_line"
)

type ingestFlags struct {
	format     string
	batch      int
	tenant     string
	checkpoint string
	noResume   bool
	retries    int
	retryWait  time.Duration
	progress   string
	wait       time.Duration
	folder     folderFlags
}

func newIngestCmd(a *app) *cobra.Command {
	var f ingestFlags
	var cf *clientFlags
	cmd := &cobra.Command{
		Use:   "ingest FILE|DIR",
		Short: "Send a folder of Markdown, text, HTML and PDF files, or a JSONL or BEIR corpus, to a running ragd server",
		Long: "ingest reads documents from FILE (one JSON object per line) or from a BEIR\n" +
			"dataset directory DIR (DIR/corpus.jsonl) and sends them in batches to\n" +
			"POST /v1/documents of a running server (an admin key when auth is on).\n\n" +
			"Any other directory is a folder of files (docs/ingest.md, \"Folders of\n" +
			"files\"): its Markdown (.md), text (.txt), HTML (.html) and PDF (.pdf)\n" +
			"files, hidden ones and symbolic links left out, are cut at headings and\n" +
			"paragraphs into chunks of at most --chunk-tokens tokens with\n" +
			"--overlap-tokens of overlap, each with its file, heading path, position and\n" +
			"line (a PDF: its page, an integer) as metadata and an id SOURCE:PATH#HASH\n" +
			"that stays the same while its text does. A rerun sends only the chunks\n" +
			"that changed and deletes those of changed, shrunk and deleted files\n" +
			"(--state remembers what was sent). A file that cannot be read (binary, not\n" +
			"UTF-8, over --max-file-bytes; a PDF broken, encrypted, over --max-pdf-pages\n" +
			"or not read within --pdf-timeout) fails alone with a line saying why; an\n" +
			"interrupted run is finished by running it again.\n\n" +
			"PDFs are read by PDFium compiled to WebAssembly, in-process (no cgo, nothing\n" +
			"to install), started at the first PDF to read: compiling it takes seconds\n" +
			"the first time on a machine, then its code is kept in ~/.cache/ragd/pdfium\n" +
			"($RAGD_PDF_CACHE). Scanned pages without text make no chunk (no OCR).\n\n" +
			"Formats: jsonl lines are ragd documents {\"id\",\"tenant\",\"title\",\"text\",\n" +
			"\"metadata\",\"vector\",\"entities\",\"links\"} (unknown keys are errors);\n" +
			"beir lines are {\"_id\",\"title\",\"text\",\"metadata\"}. auto picks beir when the\n" +
			"first line has an \"_id\" key.\n\n" +
			"Lines that do not parse are counted as failures with their line number and\n" +
			"the run goes on. A batch that fails without an answer, or with 429 or 5xx,\n" +
			"is retried with backoff; after the last retry the run stops, except that a\n" +
			"request the server found too large or could not finish within its deadline\n" +
			"(413, 504 timeout) is split in halves, and no larger one is sent after.\n\n" +
			"A JSONL run is resumable: after every batch the server answered, the position\n" +
			"is saved to the checkpoint file (default FILE.ckpt); rerunning the same\n" +
			"command continues from there, and the file is removed when the input is\n" +
			"done. Documents that failed for a reason that may pass on a retry\n" +
			"(store_unavailable, embedder_unavailable, ...) keep the checkpoint before\n" +
			"them, so a rerun sends them again; re-sending is harmless (upsert by id).\n\n" +
			"The checkpoint never moves past a document the server did not store,\n" +
			"except one it rejected as invalid in itself (listed in the summary).\n\n" +
			"Documents the server refuses as empty (no title, text or vector: Cranfield\n" +
			"has two) are skipped and counted on one summary line; they are not failures.\n" +
			"Exits 1 when any document failed or the run stopped early. Documents\n" +
			"stored but not yet applied by a derived index (keyword, graph) count as\n" +
			"ok: the server applies its change log to them on its own.",
		Example: "  ragd ingest docs/                      # a folder of Markdown, text, HTML and PDF files\n" +
			"  ragd ingest papers/ --max-pdf-pages 500 --pdf-timeout 30s\n" +
			"  ragd ingest docs/ --include '*.md' --exclude 'drafts/**'\n" +
			"  ragd ingest docs.jsonl\n" +
			"  ragd ingest ../shared/data/cranfield --batch 500\n" +
			"  RAGD_API_KEY=... ragd ingest --server https://ragd.example:8080 --tenant acme docs.jsonl\n" +
			"  ragd ingest docs.jsonl --no-resume",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("ingest takes one FILE or DIR, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			isFolder, err := folderInput(args[0], f.format)
			if err != nil {
				return err
			}
			if err := f.validate(cmd, isFolder); err != nil {
				return err
			}
			if isFolder {
				return runIngestDir(cmd.Context(), a, cf, f, args[0])
			}
			return runIngest(cmd.Context(), a, cf, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "auto", "input format: auto, jsonl, beir or files (auto: a directory with corpus.jsonl is beir, any other directory a folder of files)")
	fl.IntVar(&f.batch, "batch", defaultIngestBatch, "documents per request")
	fl.StringVar(&f.tenant, "tenant", "", "tenant set on documents that name none")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint file (default FILE.ckpt next to the input)")
	fl.BoolVar(&f.noResume, "no-resume", false, "start from the first line and keep no checkpoint (an existing default checkpoint is removed)")
	fl.IntVar(&f.retries, "retries", 4, "retries of a batch that got no answer, 429, 502, 503 or 504")
	fl.DurationVar(&f.retryWait, "retry-wait", time.Second, "wait before the first retry; doubles on each retry")
	fl.DurationVar(&f.wait, "wait", 0, "let each batch wait until the server's keyword and graph stores have applied it, at most this long (e.g. 30s; at most 1m): queries right after the run then see everything")
	fl.StringVar(&f.progress, "progress", "auto", "progress display: auto (a bar on a terminal, else a line every 5s), bar, plain or none")
	addFolderFlags(fl, &f.folder)
	cf = addClientFlags(cmd)
	return cmd
}

func (f *ingestFlags) validate(cmd *cobra.Command, isFolder bool) error {
	if f.batch < 1 || f.batch > maxIngestBatch {
		return usageError{fmt.Errorf("--batch must be between 1 and %d, got %d", maxIngestBatch, f.batch)}
	}
	if f.retries < 0 {
		return usageError{fmt.Errorf("--retries must not be negative, got %d", f.retries)}
	}
	if f.retryWait < 0 {
		return usageError{fmt.Errorf("--retry-wait must not be negative, got %s", f.retryWait)}
	}
	if f.wait < 0 || f.wait > api.MaxWait {
		return usageError{fmt.Errorf("--wait must be between 0 and %s, got %s", api.MaxWait, f.wait)}
	}
	if f.noResume && cmd.Flags().Changed("checkpoint") {
		return usageError{errors.New("--checkpoint and --no-resume exclude each other")}
	}
	switch f.progress {
	case "auto", "bar", "plain", "none":
	default:
		return usageError{fmt.Errorf("--progress must be auto, bar, plain or none, got %q", f.progress)}
	}
	if isFolder {
		return f.folder.validate(cmd)
	}
	for _, name := range folderOnlyFlags {
		if cmd.Flags().Changed(name) {
			return usageError{fmt.Errorf("--%s is for a folder of files; %s is a JSONL file or BEIR dataset", name, cmd.Flags().Arg(0))}
		}
	}
	if _, err := corpus.ParseFormat(f.format); err != nil {
		return usageError{fmt.Errorf("--format must be auto, jsonl, beir or files, got %q", f.format)}
	}
	return nil
}

// docFailure is one document (or input line) that did not make it.
type docFailure struct {
	Line    int
	ID      string
	Code    string
	Message string
}

// ingestStats counts one run.
type ingestStats struct {
	sent, ok, failed int
	// unchanged counts ok documents identical to the stored ones: nothing
	// was written and nothing embedded.
	unchanged int
	malformed int // included in failed
	// empty counts documents the server refused as empty (no title, text
	// or vector): there is nothing to index, so they are skipped, not
	// failures.
	empty    int
	batches  int
	failures []docFailure
}

func (s *ingestStats) fail(f docFailure) {
	s.failed++
	if len(s.failures) < maxListedFailures {
		s.failures = append(s.failures, f)
	}
}

// ingester runs one `ragd ingest`.
type ingester struct {
	app    *app
	client *client.Client
	flags  ingestFlags
	file   string
	format corpus.Format
	size   int64

	ckpt     *corpus.Checkpoint // nil: no checkpointing
	frozen   bool               // a retryable document failure pinned the checkpoint
	start    corpus.Position
	consumed corpus.Position // the input read so far
	split    *splitter[corpus.Line]

	stats    ingestStats
	began    time.Time
	progress ingestProgress
	// sendingLine is the first input line of the request being sent, for
	// the retry messages.
	sendingLine int
}

func runIngest(ctx context.Context, a *app, cf *clientFlags, f ingestFlags, arg string) error {
	in := &ingester{app: a, flags: f}
	in.split = &splitter[corpus.Line]{max: f.batch, stderr: a.stderr, clear: func() { in.progress.clear() },
		post: in.post, id: func(l corpus.Line) string { return l.Doc.ID }, done: in.record}
	c, err := cf.client(func(cfg *client.Config) {
		cfg.MaxRetries = f.retries
		if f.retries == 0 {
			cfg.MaxRetries = -1 // 0 means the default to the client
		}
		cfg.MinBackoff, cfg.MaxBackoff = f.retryWait, max(f.retryWait, maxRetryWait)
		cfg.OnRetry = in.retrying
	})
	if err != nil {
		return err
	}
	in.client = c
	format, _ := corpus.ParseFormat(f.format)
	file, format, err := corpus.ResolveInput(arg, format)
	if err != nil {
		return err
	}
	in.file, in.format = file, format
	fh, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	in.size = st.Size()
	if in.format == corpus.FormatAuto {
		// Decide from the first line of the file, not the first line
		// after a checkpoint.
		if in.format, err = sniffFormat(fh); err != nil {
			return fmt.Errorf("ingest: %s: %w", file, err)
		}
	}
	if err := in.openCheckpoint(fh); err != nil {
		return err
	}

	if in.start.Line > 0 {
		fmt.Fprintf(a.stderr, "ingest: resuming %s after line %d (byte %d of %d) from checkpoint %s; --no-resume starts over\n",
			file, in.start.Line, in.start.Offset, in.size, in.ckpt.Path)
	} else {
		fmt.Fprintf(a.stderr, "ingest: reading %s (%s) into %s\n", file, in.format, c.BaseURL())
	}
	in.began = time.Now()
	in.progress = newIngestProgress(a.rawStderr, f.progress, in.size, in.start.Offset)
	in.consumed = in.start
	runErr := in.readAndSend(ctx, fh)
	in.progress.finish()

	complete := runErr == nil
	if complete && in.ckpt != nil && !in.frozen {
		if err := in.ckpt.Remove(); err != nil {
			fmt.Fprintf(a.stderr, "ingest: warning: %v\n", err)
		}
	}
	in.printSummary(a.stdout, complete)
	switch {
	case runErr != nil:
		return in.stoppedError(runErr)
	case in.stats.failed > 0:
		msg := fmt.Sprintf("ingest: %d of %d documents failed", in.stats.failed, in.stats.sent+in.stats.malformed)
		if in.frozen && in.ckpt != nil {
			msg += fmt.Sprintf("; some may pass on a retry: rerun the same command to resend from line %d (checkpoint %s)", in.resumeLine(), in.ckpt.Path)
		}
		return errors.New(msg)
	}
	return nil
}

// openCheckpoint loads the checkpoint and positions fh, or removes a stale
// one under --no-resume.
func (in *ingester) openCheckpoint(fh *os.File) error {
	path := in.flags.checkpoint
	if path == "" {
		path = in.file + ".ckpt"
	}
	abs, err := filepath.Abs(in.file)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	ck := &corpus.Checkpoint{Path: path, Input: abs}
	if in.flags.noResume {
		if err := ck.Remove(); err != nil {
			return err
		}
		_, err := fh.Seek(0, io.SeekStart)
		return err
	}
	pos, err := ck.Load(in.size)
	if err != nil {
		return fmt.Errorf("%w (remove %s or pass --no-resume to start over)", err, path)
	}
	if err := corpus.SeekTo(fh, pos); err != nil {
		return fmt.Errorf("%w (remove %s or pass --no-resume to start over)", err, path)
	}
	in.ckpt, in.start = ck, pos
	return nil
}

// readAndSend reads the input from the current position and sends it in
// batches. It returns nil when the whole input was read and every batch
// got an answer.
func (in *ingester) readAndSend(ctx context.Context, r io.Reader) error {
	var (
		batch []corpus.Line
		ids   = map[string]bool{}
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := in.sendBatch(ctx, batch)
		batch, ids = batch[:0], map[string]bool{}
		return err
	}
	for line, err := range corpus.Read(r, corpus.ReadOptions{Format: in.format, Start: in.start}) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			var le *corpus.LineError
			if !errors.As(err, &le) {
				return fmt.Errorf("ingest: %s: %w", in.file, err)
			}
			in.stats.malformed++
			in.stats.fail(docFailure{Line: le.Line, Code: codeMalformedLine, Message: le.Err.Error()})
			in.consumed = line.Next()
			continue
		}
		if in.flags.tenant != "" && line.Doc.Tenant == "" {
			line.Doc.Tenant = in.flags.tenant
		}
		// The server rejects a whole batch that repeats an id: a repeated
		// id starts a new batch, so the later line wins as in the file.
		if line.Doc.ID != "" && ids[line.Doc.ID] {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, line)
		ids[line.Doc.ID] = true
		in.consumed = line.Next()
		if len(batch) >= in.flags.batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// Malformed lines at the end of the input advance the checkpoint too.
	if in.consumed != in.start {
		in.save()
	}
	return ctx.Err()
}

// sendBatch sends lines (in requests the splitter sizes), records the
// results and advances the checkpoint.
func (in *ingester) sendBatch(ctx context.Context, lines []corpus.Line) error {
	if err := in.split.send(ctx, lines); err != nil {
		return err
	}
	in.save()
	in.progress.update(in.consumed.Offset, in.consumed.Line, &in.stats, time.Since(in.began))
	return nil
}

// splitter sends a batch in requests of at most max documents, and
// halves a request the server finds too large (413, too_many_documents)
// or cannot finish within its deadline (504 timeout: a batch whose
// embedding outlasts the server's request_timeout_s fails whole, every
// time it is sent). After too_many_documents or a timeout, max falls to
// the half for the requests that follow. Both ingesters send through it.
type splitter[T any] struct {
	max    int
	stderr io.Writer
	clear  func() // clears a progress line before a message
	post   func(ctx context.Context, items []T) ([]ingest.Result, error)
	id     func(T) string
	// done records the results of items, a request the server answered.
	done func(ctx context.Context, items []T, results []ingest.Result) error
}

func (s *splitter[T]) send(ctx context.Context, items []T) error {
	return s.sendAtMost(ctx, items, len(items))
}

// sendAtMost sends items in requests of at most most documents, and at
// most max as it is when each request is cut.
func (s *splitter[T]) sendAtMost(ctx context.Context, items []T, most int) error {
	for len(items) > 0 {
		n := min(len(items), s.max, most)
		if err := s.one(ctx, items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// one sends items as one request, halving it as the splitter's doc says.
func (s *splitter[T]) one(ctx context.Context, items []T) error {
	results, err := s.post(ctx, items)
	var he *client.Error
	if errors.As(err, &he) && (tooLarge(he) || timedOut(he)) {
		if len(items) == 1 {
			if timedOut(he) {
				return err // one document the server cannot store in time
			}
			return s.done(ctx, items, []ingest.Result{{ID: s.id(items[0]), Status: ingest.StatusFailed, Code: he.Code(), Error: he.Detail.Message}})
		}
		half := (len(items) + 1) / 2
		if (he.Detail.Code == api.CodeTooManyDocuments || timedOut(he)) && half < s.max {
			s.max = half
			why := "the server accepts fewer documents per request"
			if timedOut(he) {
				why = fmt.Sprintf("the server ran out of its request deadline on %d documents", len(items))
			}
			s.clear()
			fmt.Fprintf(s.stderr, "ingest: %s; sending at most %d\n", why, half)
		}
		return s.sendAtMost(ctx, items, half)
	}
	if err != nil {
		return err
	}
	if len(results) != len(items) {
		return fmt.Errorf("ingest: the server answered %d results for %d documents", len(results), len(items))
	}
	return s.done(ctx, items, results)
}

func tooLarge(he *client.Error) bool {
	return he.StatusCode == http.StatusRequestEntityTooLarge || he.Detail.Code == api.CodeTooManyDocuments
}

// timedOut: ragd's own request deadline ran out (a proxy's 504 carries no
// code).
func timedOut(he *client.Error) bool {
	return he.StatusCode == http.StatusGatewayTimeout && he.Detail.Code == api.CodeTimeout
}

// post sends lines as one request; the client retries what may pass (no
// answer, 429, 502-504) and calls retrying before each wait.
func (in *ingester) post(ctx context.Context, lines []corpus.Line) ([]ingest.Result, error) {
	in.sendingLine = lines[0].Number
	docs := make([]spi.Document, len(lines))
	for i, l := range lines {
		docs[i] = l.Doc
	}
	return upsert(ctx, in.client, in.flags, docs)
}

// upsert sends docs as one request, waiting for the derived stores when
// --wait asks.
func upsert(ctx context.Context, c *client.Client, f ingestFlags, docs []spi.Document) ([]ingest.Result, error) {
	var opts *client.WriteOptions
	if f.wait > 0 {
		opts = &client.WriteOptions{Wait: f.wait}
	}
	resp, err := c.Upsert(ctx, docs, opts)
	if err != nil {
		return nil, err
	}
	return resp.Results, nil
}

// retrying reports a retry of the request being sent.
func (in *ingester) retrying(err error, retry int, wait time.Duration) {
	in.progress.clear()
	fmt.Fprintf(in.app.stderr, "ingest: batch from line %d: %v; retry %d of %d in %s\n",
		in.sendingLine, explain(err), retry, in.flags.retries, wait)
}

// record counts results; a failure that may pass on a retry pins the
// checkpoint so a rerun sends the document again.
func (in *ingester) record(_ context.Context, lines []corpus.Line, results []ingest.Result) error {
	in.stats.batches++
	for i, r := range results {
		in.stats.sent++
		switch r.Status {
		case ingest.StatusOK:
			in.stats.ok++
			if r.Unchanged {
				in.stats.unchanged++
			}
		case ingest.StatusFailed:
			if r.Code == ingest.CodeEmptyDocument {
				in.stats.empty++
				continue
			}
			fallthrough
		default:
			in.stats.fail(docFailure{Line: lines[i].Number, ID: r.ID, Code: r.Code, Message: r.Error})
			if !permanentCode(r.Code) {
				// Keep the checkpoint where it is (before this batch).
				in.frozen = true
			}
		}
	}
	return nil
}

// permanentCode reports whether a per-document failure will fail again if
// the same document is sent again.
func permanentCode(code string) bool {
	switch code {
	case ingest.CodeInvalidID, ingest.CodeDuplicateID, ingest.CodeInvalidTenant, ingest.CodeTooLarge,
		ingest.CodeInvalidText, ingest.CodeEmptyDocument, ingest.CodeInvalidMetadata,
		ingest.CodeInvalidVector, ingest.CodeInvalidEntities, ingest.CodeInvalidLinks, ingest.CodeInvalidUpdated, ingest.CodeEmbedderRejected,
		ingest.CodeStoreRejected, api.DocTenantForbidden, api.DocIDConflict, api.DocUnknownField, api.DocInvalidDocument,
		api.CodeBodyTooLarge:
		return true
	}
	return false
}

// save records the input consumed so far, unless checkpointing is off or
// pinned. A checkpoint that cannot be written turns checkpointing off
// with a warning: the run goes on, but cannot be resumed.
func (in *ingester) save() {
	if in.ckpt == nil || in.frozen {
		return
	}
	if err := in.ckpt.Save(in.consumed); err != nil {
		in.progress.clear()
		fmt.Fprintf(in.app.stderr, "ingest: warning: %v; this run cannot be resumed (choose a writable --checkpoint)\n", err)
		in.ckpt = nil
	}
}

// resumeLine is the first line a rerun would read.
func (in *ingester) resumeLine() int {
	if in.ckpt == nil {
		return 1
	}
	pos, err := in.ckpt.Load(-1)
	if err != nil {
		return 1
	}
	return pos.Line + 1
}

// stoppedError explains a run that did not read the whole input.
func (in *ingester) stoppedError(err error) error {
	how := "this run kept no checkpoint: rerun it with --no-resume after fixing the cause"
	if in.ckpt != nil {
		if line := in.resumeLine(); line > 1 {
			how = fmt.Sprintf("rerun the same command to resume from line %d (checkpoint %s)", line, in.ckpt.Path)
		} else {
			how = "nothing was committed yet: rerun the same command after fixing the cause"
		}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("ingest: interrupted; %s", how)
	}
	return fmt.Errorf("ingest: stopped: %w; %s", err, how)
}

func (in *ingester) printSummary(w io.Writer, complete bool) {
	elapsed := time.Since(in.began)
	s := &in.stats
	state := "done"
	if !complete {
		state = "stopped early"
	}
	fmt.Fprintf(w, "ingest %s: %s (%s) in %s\n", state, in.file, in.format, elapsed.Round(time.Millisecond))
	rate := 0.0
	if sec := elapsed.Seconds(); sec > 0 {
		rate = float64(s.sent) / sec
	}
	fmt.Fprintf(w, "  sent     %d documents in %d %s (%.1f docs/s)\n", s.sent, s.batches, plural(s.batches, "request", "requests"), rate)
	if s.unchanged > 0 {
		fmt.Fprintf(w, "  ok       %d  (%d unchanged: identical to the stored documents, nothing written or embedded)\n", s.ok, s.unchanged)
	} else {
		fmt.Fprintf(w, "  ok       %d\n", s.ok)
	}
	if s.empty > 0 {
		fmt.Fprintf(w, "  skipped  %d  (empty documents: no title, text or vector, so nothing to index; not a failure)\n", s.empty)
	}
	if s.malformed > 0 {
		fmt.Fprintf(w, "  failed   %d  (%d rejected by the server, %d malformed lines)\n", s.failed, s.failed-s.malformed, s.malformed)
	} else {
		fmt.Fprintf(w, "  failed   %d\n", s.failed)
	}
	if len(s.failures) == 0 {
		return
	}
	more := ""
	if s.failed > len(s.failures) {
		more = fmt.Sprintf(" (first %d of %d)", len(s.failures), s.failed)
	}
	fmt.Fprintf(w, "failures%s:\n", more)
	for _, f := range s.failures {
		id := "-"
		if f.ID != "" {
			id = fmt.Sprintf("%q", truncateRunes(f.ID, 40))
		}
		fmt.Fprintf(w, "  line %d  id %s  %s: %s\n", f.Line, id, f.Code, truncateRunes(f.Message, 200))
	}
}

// sniffFormat decides auto format from the first non-blank line of fh and
// rewinds it: an object with an "_id" key is BEIR (corpus.Read's rule).
func sniffFormat(fh *os.File) (corpus.Format, error) {
	defer fh.Seek(0, io.SeekStart)
	br := bufio.NewReaderSize(fh, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var probe map[string]json.RawMessage
			if json.Unmarshal(t, &probe) == nil {
				if _, ok := probe["_id"]; ok {
					return corpus.FormatBEIR, nil
				}
			}
			return corpus.FormatJSONL, nil
		}
		if err == io.EOF {
			return corpus.FormatJSONL, nil
		}
		if err != nil {
			return "", err
		}
	}
}

// ingestProgress shows how far a run got.
type ingestProgress interface {
	update(offset int64, line int, s *ingestStats, elapsed time.Duration)
	// clear makes room for a message line.
	clear()
	finish()
}

func newIngestProgress(w io.Writer, mode string, size, start int64) ingestProgress {
	if mode == "auto" {
		mode = "plain"
		if isTerminal(w) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar":
		bar := progressbar.NewOptions64(size,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("ingest"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(),
		)
		_ = bar.Set64(start)
		return &barProgress{bar: bar}
	case "plain":
		return &plainProgress{w: w, size: size, start: start}
	}
	return noProgress{}
}

type barProgress struct{ bar *progressbar.ProgressBar }

func (p *barProgress) update(offset int64, _ int, s *ingestStats, _ time.Duration) {
	_ = p.bar.Set64(offset)
	p.bar.Describe(fmt.Sprintf("ingest: %d ok (%d unchanged), %d failed", s.ok, s.unchanged, s.failed))
}
func (p *barProgress) clear()  { _ = p.bar.Clear() }
func (p *barProgress) finish() { _ = p.bar.Finish() }

// plainProgress writes a line after the first batch, then at most every
// plainProgressEvery.
type plainProgress struct {
	w       io.Writer
	size    int64
	start   int64 // the offset the run began at (a resumed run)
	printed bool
	last    time.Duration
}

func (p *plainProgress) update(offset int64, line int, s *ingestStats, elapsed time.Duration) {
	if p.printed && elapsed-p.last < plainProgressEvery {
		return
	}
	p.printed, p.last = true, elapsed
	pct := 100.0
	if p.size > 0 {
		pct = 100 * float64(offset) / float64(p.size)
	}
	rate := 0.0
	if sec := elapsed.Seconds(); sec > 0 {
		rate = float64(s.sent) / sec
	}
	// The server embeds each document it did not hold unchanged: the
	// bytes read so far and their time give the ETA of the rest.
	left, ok := eta(float64(offset-p.start), float64(p.size-p.start), elapsed)
	fmt.Fprintf(p.w, "ingest: line %d (%.0f%%): %d sent, %d ok (%d unchanged), %d failed, %.0f docs/s, %s\n",
		line, pct, s.sent, s.ok, s.unchanged, s.failed, rate, formatETA(left, ok))
}
func (p *plainProgress) clear()  {}
func (p *plainProgress) finish() {}

type noProgress struct{}

func (noProgress) update(int64, int, *ingestStats, time.Duration) {}
func (noProgress) clear()                                         {}
func (noProgress) finish()                                        {}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
