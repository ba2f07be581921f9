package folder

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/ragd/ragd/ingest/chunk"
	"github.com/ragd/ragd/spi"
)

// Metadata keys of a chunk document. The positions (KeyChunk, KeyLine,
// KeyPage) are integers, so that a filter can ask for a range
// ({"chunk": {"$gte": 3}}); the others are strings.
const (
	// KeySource names the folder ingest that made the chunk (Chunker.Source):
	// the scope of its deletes, and a filter for queries.
	KeySource = "source"
	// KeyFile is the file's path relative to the folder, with "/".
	KeyFile = "file"
	// KeyHeading is the heading path, headings joined by " > "; absent
	// before a file's first heading.
	KeyHeading = "heading"
	// KeyChunk is the chunk's position in its file, from 0, an integer.
	KeyChunk = "chunk"
	// KeyLine is the line of the file the chunk starts on, from 1, an
	// integer (Markdown and text; HTML and PDF chunks are of the extracted
	// text).
	KeyLine = "line"
	// KeyPage is the page of a PDF the chunk lies on, from 1, an integer
	// (a filter can ask for {"page": {"$gte": 3}}).
	KeyPage = "page"
	// KeyFormat is markdown, text, html or pdf.
	KeyFormat = "format"
)

// maxMetaValue bounds a metadata value, as the write path does (4 KiB).
const maxMetaValue = 4 << 10

// Errors of ReadFile, per file.
var (
	ErrBinary   = errors.New("binary file (it holds NUL bytes)")
	ErrNotUTF8  = errors.New("not UTF-8 text")
	ErrTooLarge = errors.New("file too large")
	ErrNotPDF   = errors.New("not a PDF (no %PDF- header in its first 1024 bytes)")
)

// ReadFile reads f, at most max bytes (0: no bound), and returns its
// content and SHA-256 in hex. Markdown and text must be UTF-8 (a UTF-8
// byte order mark is dropped) and, like HTML, hold no NUL byte in their
// first 8,000 bytes (git's test for a binary file); a PDF must have its
// header in its first 1024 bytes (where PDF readers look for it).
func ReadFile(f File, max int64) ([]byte, string, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, "", err
	}
	defer fh.Close()
	r := io.Reader(fh)
	if max > 0 {
		r = io.LimitReader(fh, max+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, "", err
	}
	if max > 0 && int64(len(b)) > max {
		return nil, "", fmt.Errorf("%w: over %d bytes (--max-file-bytes)", ErrTooLarge, max)
	}
	sum := sha256.Sum256(b)
	if f.Format == PDF {
		if !bytes.Contains(b[:min(len(b), 1024)], []byte("%PDF-")) {
			return nil, "", ErrNotPDF
		}
		return b, hex.EncodeToString(sum[:]), nil
	}
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return nil, "", ErrBinary
	}
	if f.Format != HTML {
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		if !utf8.Valid(b) {
			return nil, "", ErrNotUTF8
		}
	}
	return b, hex.EncodeToString(sum[:]), nil
}

// Chunker makes the chunk documents of files.
type Chunker struct {
	// Source names this folder ingest: it prefixes every id and is the
	// KeySource of every chunk.
	Source string
	// Tenant is set on every document ("" leaves it to the server).
	Tenant  string
	Options chunk.Options
	// CounterName names the Options.Counter in Fingerprint, so that a
	// change of tokenizer makes every file be chunked again.
	CounterName string
}

// Fingerprint names what decides the chunks besides a file's content: a
// file whose content and fingerprint are those of an earlier run has the
// same chunks. chunker=2: the positions became integers (they were
// strings), so a file chunked by chunker=1 is chunked again once and its
// chunks sent again, with the same ids, to replace their metadata.
func (c *Chunker) Fingerprint() string {
	return fmt.Sprintf("chunker=2 max_tokens=%d overlap=%d counter=%s tenant=%q", c.Options.MaxTokens, c.Options.Overlap, c.CounterName, c.Tenant)
}

// ValidateSource checks a source name: a valid document id prefix of at
// most 64 bytes without ':'.
func ValidateSource(s string) error {
	if err := spi.ValidateName(s, 64); err != nil {
		return fmt.Errorf("source %w", err)
	}
	if strings.Contains(s, ":") {
		return fmt.Errorf("source %q: must not hold ':'", s)
	}
	return nil
}

// Documents cuts a file's content into chunk documents, in order. A PDF is
// read by the caller and chunked by PageDocuments.
//
// A chunk's id is "SOURCE:PATH#HASH", HASH the first 16 hex digits of the
// SHA-256 of the source, the path, the chunk's title and text, and how
// many chunks before it in the file have the same title and text (so two
// equal chunks of one file get two ids). It changes when the chunk's text,
// title (heading path) or file changes, and only then: a paragraph
// inserted early in a file changes the ids of the chunks it falls in and
// those after it in the same section (their boundaries move), not those
// of other sections. A path that would make the id longer than 256 bytes,
// or is not a valid name (spi.ValidateName), is replaced by its own hash.
// Paths are in Unicode NFC.
func (c *Chunker) Documents(f File, content []byte) ([]spi.Document, error) {
	rel := norm.NFC.String(f.Rel)
	if !utf8.ValidString(rel) || strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("the file name is not UTF-8")
	}
	var d chunk.Doc
	switch f.Format {
	case Markdown:
		d = chunk.Markdown(string(content), rel)
	case Text:
		d = chunk.Plain(string(content), rel)
	case HTML:
		var err error
		if d, err = chunk.HTML(bytes.NewReader(content), rel); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown format %q", f.Format)
	}
	return c.documents(f, rel, d), nil
}

// PageDocuments cuts the text of a paged file (a PDF: its pages, the first
// first) into chunk documents, in order, as Documents does, each on one
// page with KeyPage set. The chunks' title is title (the PDF's own) when
// it is not empty, else the file's path.
func (c *Chunker) PageDocuments(f File, title string, pages []string) ([]spi.Document, error) {
	rel := norm.NFC.String(f.Rel)
	if !utf8.ValidString(rel) || strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("the file name is not UTF-8")
	}
	if title == "" {
		title = rel
	}
	return c.documents(f, rel, chunk.Pages(pages, title)), nil
}

// documents makes the chunk documents of d, the Doc of file f.
func (c *Chunker) documents(f File, rel string, d chunk.Doc) []spi.Document {
	chunks := chunk.Split(d, c.Options)
	docs := make([]spi.Document, 0, len(chunks))
	seen := map[[32]byte]int{}
	line, lineAt := 1, 0
	for _, ch := range chunks {
		key := sha256.Sum256([]byte(ch.Title + "\x00" + ch.Text))
		dup := seen[key]
		seen[key]++
		md := spi.Metadata{
			KeySource: spi.String(c.Source),
			KeyFile:   spi.String(truncate(rel)),
			KeyChunk:  spi.Int(int64(ch.Ordinal)),
			KeyFormat: spi.String(string(f.Format)),
		}
		if len(ch.Headings) > 0 {
			md[KeyHeading] = spi.String(truncate(strings.Join(ch.Headings, chunk.TitleSeparator)))
		}
		if f.Format == Markdown || f.Format == Text {
			line += strings.Count(d.Text[lineAt:ch.Start], "\n")
			lineAt = ch.Start
			md[KeyLine] = spi.Int(int64(line))
		}
		if ch.Page > 0 {
			md[KeyPage] = spi.Int(int64(ch.Page))
		}
		docs = append(docs, spi.Document{
			ID:       c.id(rel, ch, dup),
			Tenant:   c.Tenant,
			Title:    ch.Title,
			Text:     ch.Text,
			Metadata: md,
		})
	}
	return docs
}

func (c *Chunker) id(rel string, ch chunk.Chunk, dup int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d", c.Source, rel, ch.Title, ch.Text, dup)
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	id := c.Source + ":" + rel + "#" + sum
	if len(id) > spi.MaxNameBytes || spi.ValidateName(id, spi.MaxNameBytes) != nil {
		p := sha256.Sum256([]byte(rel))
		id = c.Source + ":" + hex.EncodeToString(p[:8]) + "#" + sum
	}
	return id
}

// truncate cuts a metadata value to the write path's bound, at a rune.
func truncate(s string) string {
	if len(s) <= maxMetaValue {
		return s
	}
	cut := maxMetaValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Hash identifies what a document sends: two documents with equal hashes
// write the same thing (id, tenant, title, text, metadata).
func Hash(d spi.Document) string {
	b, err := json.Marshal(d) // map keys in sorted order
	if err != nil {
		panic(err) // a Document always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
