// Package corpus reads input files for ingestion: JSONL of spi.Document
// objects and BEIR corpus.jsonl, one document per line, with line numbers
// and byte offsets (errors name the line), and keeps a Checkpoint so that
// `ragd ingest` can resume after a crash or Ctrl-C.
package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/ragd/ragd/internal/strictjson"
	"github.com/ragd/ragd/spi"
)

// Format names an input file layout.
type Format string

// Input formats.
const (
	// FormatAuto decides from the first non-blank line: an object with an
	// "_id" key is BEIR, anything else JSONL.
	FormatAuto Format = ""
	// FormatJSONL is one spi.Document JSON object per line ("id", "tenant",
	// "title", "text", "metadata" (typed values), "vector", "entities",
	// "links", "updated_at"), read as POST /v1/documents reads one. Unknown
	// keys are an error, so a typo such as "txt" is caught instead of
	// ingesting empty documents.
	FormatJSONL Format = "jsonl"
	// FormatBEIR is a BEIR corpus.jsonl line: {"_id", "title", "text",
	// "metadata"}. Other keys are ignored; metadata values are typed by the
	// JSONL rule (checkMetadata): a line holding a value no store keeps
	// fails.
	FormatBEIR Format = "beir"
)

// ParseFormat accepts "", "auto", "jsonl" and "beir".
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return FormatAuto, nil
	case "jsonl":
		return FormatJSONL, nil
	case "beir":
		return FormatBEIR, nil
	}
	return "", fmt.Errorf("%w: unknown format %q (want auto, jsonl or beir)", ErrBadInput, s)
}

// ErrBadInput is wrapped by every input parsing error.
var ErrBadInput = errors.New("corpus: bad input")

// DefaultMaxLineBytes bounds one input line (a document with a large text
// or vector). Longer lines are reported as errors and skipped.
const DefaultMaxLineBytes = 16 << 20

// Position is how far a reader got: Line lines consumed, ending at byte
// Offset. The zero Position is the start of the input.
type Position struct {
	Line   int   `json:"line"`
	Offset int64 `json:"offset"`
}

// Line is one parsed input line.
type Line struct {
	// Number is the 1-based line number in the whole input.
	Number int
	// Offset is the byte offset of the line's start, End the offset just
	// after its newline.
	Offset, End int64
	Doc         spi.Document
}

// Next is the Position after this line: what a checkpoint stores once the
// line's document is committed.
func (l Line) Next() Position { return Position{Line: l.Number, Offset: l.End} }

// LineError is a parse error of one input line. It unwraps to ErrBadInput.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("corpus: line %d: %v", e.Line, e.Err) }

// Unwrap returns ErrBadInput and the underlying error.
func (e *LineError) Unwrap() []error { return []error{ErrBadInput, e.Err} }

// ReadOptions configures Read.
type ReadOptions struct {
	Format Format
	// Start is where r is positioned (after SeekTo): line numbers and
	// offsets continue from it.
	Start Position
	// MaxLineBytes bounds one line; default DefaultMaxLineBytes.
	MaxLineBytes int
}

// ReadDocuments reads JSONL or BEIR documents from r; see Read.
func ReadDocuments(r io.Reader, format Format) iter.Seq2[Line, error] {
	return Read(r, ReadOptions{Format: format})
}

// Read iterates over the documents in r, one JSON object per line. Blank
// lines are skipped. A line that does not parse yields a *LineError and the
// iteration goes on with the next line (break to stop at the first error);
// a read error from r is yielded once and ends the iteration.
//
// Read does not validate documents beyond their JSON shape: the Pipeline does.
func Read(r io.Reader, opts ReadOptions) iter.Seq2[Line, error] {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	return func(yield func(Line, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		format := opts.Format
		num, off := opts.Start.Line, opts.Start.Offset
		var buf []byte
		for {
			buf = buf[:0]
			tooLong := false
			var n int64
			var err error
			for {
				var frag []byte
				frag, err = br.ReadSlice('\n')
				n += int64(len(frag))
				if !tooLong {
					if len(buf)+len(frag) > maxLine+1 {
						tooLong, buf = true, buf[:0]
					} else {
						buf = append(buf, frag...)
					}
				}
				if err != bufio.ErrBufferFull {
					break
				}
			}
			if n == 0 && err != nil {
				if err != io.EOF {
					yield(Line{Number: num + 1, Offset: off, End: off}, fmt.Errorf("corpus: read after line %d: %w", num, err))
				}
				return
			}
			num++
			line := Line{Number: num, Offset: off, End: off + n}
			off += n
			if tooLong {
				if !yield(line, &LineError{Line: num, Err: fmt.Errorf("line longer than %d bytes", maxLine)}) {
					return
				}
			} else if trimmed := bytes.TrimSpace(buf); len(trimmed) > 0 {
				if format == FormatAuto {
					format = detect(trimmed)
				}
				doc, perr := parseLine(trimmed, format)
				if perr != nil {
					if !yield(line, &LineError{Line: num, Err: perr}) {
						return
					}
				} else {
					line.Doc = doc
					if !yield(line, nil) {
						return
					}
				}
			}
			if err != nil {
				if err != io.EOF {
					yield(Line{Number: num + 1, Offset: off, End: off}, fmt.Errorf("corpus: read after line %d: %w", num, err))
				}
				return
			}
		}
	}
}

// detect picks BEIR when the object has an "_id" key.
func detect(line []byte) Format {
	var probe map[string]json.RawMessage
	if json.Unmarshal(line, &probe) == nil {
		if _, ok := probe["_id"]; ok {
			return FormatBEIR
		}
	}
	return FormatJSONL
}

type beirDoc struct {
	ID       json.RawMessage `json:"_id"`
	Title    string          `json:"title"`
	Text     string          `json:"text"`
	Metadata spi.Metadata    `json:"metadata"`
}

// parseLine reads one line by the API's rule (internal/strictjson): a
// JSONL line exactly as POST /v1/documents reads a document (no unknown
// or miscased key, no key twice, valid UTF-8 without a lone surrogate),
// a BEIR line leniently (other keys ignored) but never ambiguously.
func parseLine(line []byte, format Format) (spi.Document, error) {
	switch format {
	case FormatBEIR:
		if e := strictjson.Unambiguous(line, "line"); e != nil {
			return spi.Document{}, e
		}
		var b beirDoc
		if err := json.Unmarshal(line, &b); err != nil {
			return spi.Document{}, jsonError(err)
		}
		id, err := beirID(b.ID)
		if err != nil {
			return spi.Document{}, err
		}
		if err := checkMetadata(b.Metadata); err != nil {
			return spi.Document{}, err
		}
		doc := spi.Document{ID: id, Title: b.Title, Text: b.Text}
		if len(b.Metadata) > 0 {
			doc.Metadata = b.Metadata
		}
		return doc, nil
	default:
		// The fast decoder first (strictjson.TryDecode); a line it does not
		// take is read again by Decode, whose error names the member.
		var d spi.Document
		if !strictjson.TryDecode(line, &d) {
			d = spi.Document{}
			if e := strictjson.Decode(line, &d, "line"); e != nil {
				return spi.Document{}, e
			}
		}
		// A time no store keeps (the year 10000 in UTC) could not even be
		// sent: it fails its line, as the server would fail its document.
		if err := spi.ValidateUpdatedAt(d.UpdatedAt); err != nil {
			return spi.Document{}, errors.New(strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
		}
		if err := checkMetadata(d.Metadata); err != nil {
			return spi.Document{}, err
		}
		return d, nil
	}
}

// beirID accepts a string or a number: some BEIR exports write numeric ids.
func beirID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", errors.New(`missing "_id"`)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), nil
	}
	return "", errors.New(`"_id" must be a string or a number`)
}

// checkMetadata is the one rule of both formats for the metadata a line
// decoded into typed values (string, integer, float, boolean,
// {"$time": …}, a list of those): a value no store keeps (a nested list,
// null, an integer past 64 bits, another object) fails its line, since
// the server would fail that document alone (invalid_metadata) and the
// client could not encode the batch holding it.
func checkMetadata(md spi.Metadata) error {
	if err := md.Validate(); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), spi.ErrInvalidMetadata.Error()+": "))
	}
	return nil
}

// jsonError says what is wrong with a line in the input's words, not Go's
// ("cannot unmarshal number into Go struct field jsonlDoc.metadata of
// type string"). encoding/json's errors never contain field values beyond
// the offending token.
func jsonError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := ""
		if te.Field != "" {
			where = fmt.Sprintf("%q: ", te.Field)
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok {
			return fmt.Errorf("%sthe number %s is out of range", where, n)
		}
		return fmt.Errorf("%sa JSON %s where %s is wanted", where, te.Value, jsonKind(te.Type))
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: "); ok { // unknown field "x"
		return errors.New(msg)
	}
	return err
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a number"
	}
}

// ResolveInput maps a command-line argument to the file to read and its
// format: a directory is a BEIR dataset (DIR/corpus.jsonl, FormatBEIR); a
// file keeps the given format.
func ResolveInput(path string, format Format) (file string, f Format, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("corpus: input: %w", err)
	}
	if !st.IsDir() {
		return path, format, nil
	}
	file = filepath.Join(path, "corpus.jsonl")
	if _, err := os.Stat(file); err != nil {
		return "", "", fmt.Errorf("corpus: input: %s is a directory without corpus.jsonl: %w", path, err)
	}
	if format == FormatAuto {
		format = FormatBEIR
	}
	return file, format, nil
}

// SeekTo positions rs at pos.Offset for a resumed Read with Start: pos. It
// checks that the offset lies on a line boundary (the byte before it is a
// newline) so a checkpoint from a different or rewritten file is caught.
func SeekTo(rs io.ReadSeeker, pos Position) error {
	if pos.Offset < 0 || pos.Line < 0 {
		return fmt.Errorf("%w: negative checkpoint position", ErrCheckpoint)
	}
	if pos.Offset == 0 {
		_, err := rs.Seek(0, io.SeekStart)
		return err
	}
	if _, err := rs.Seek(pos.Offset-1, io.SeekStart); err != nil {
		return fmt.Errorf("corpus: seek: %w", err)
	}
	var b [1]byte
	if _, err := io.ReadFull(rs, b[:]); err != nil {
		return fmt.Errorf("%w: offset %d is beyond the input (%v)", ErrCheckpoint, pos.Offset, err)
	}
	if b[0] != '\n' {
		return fmt.Errorf("%w: offset %d (line %s) is not at a line boundary; the input changed", ErrCheckpoint, pos.Offset, strconv.Itoa(pos.Line))
	}
	return nil
}
