package api

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/strictjson"
	"github.com/ragd/ragd/spi"
)

// A batch body is walked once, token by token, before it is decoded
// (nothing is kept but offsets): decoding builds every item first, and
// the bounds on counts were checked only on the decoded value. An 8 MB
// body of 300,000 documents cost 347 MB of allocations and 1.2 s before
// too_many_documents; one document with 600,000 metadata keys 357 MB and
// 1.7 s before its invalid_metadata, with 1,200,000 entities 155 MB, with
// a 600,000-key object under an unknown name 165 MB; 600,000 ids to
// delete 109 MB and 270 ms before too_many_ids. Anything the walk does
// not bound (malformed JSON, a wrong type, a name twice) is left to the
// decoder, which reports it.

// newWalk is a token reader over body that builds nothing: no set of
// names per object (the decoder checks them), and no UTF-8 check (the
// handler checks the whole text first, strictjson.CheckText).
func newWalk(body []byte) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// itemStart is the offset of the next item of an array after the token
// d read last (the decoder's offset is before the separator).
func itemStart(d *jsontext.Decoder, body []byte) int64 {
	off := d.InputOffset()
	for off < int64(len(body)) && bytes.IndexByte([]byte(", \t\r\n"), body[off]) >= 0 {
		off++
	}
	return off
}

// checkBatchSize refuses a batch body whose array member holds more than
// max items, at the first item past max, with its byte.
func checkBatchSize(body []byte, member string, max int, code string) error {
	d := newWalk(body)
	if !openObject(d) {
		return nil
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return nil
		}
		if name.String() != member || d.PeekKind() != '[' {
			if d.SkipValue() != nil {
				return nil
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return nil
		}
		for n := 0; d.PeekKind() != ']' && d.PeekKind() != 0; n++ {
			if n == max {
				return boundError(code, member, itemStart(d, body), "more than %d per request", max)
			}
			if d.SkipValue() != nil {
				return nil
			}
		}
		return nil
	}
	return nil
}

func openObject(d *jsontext.Decoder) bool {
	if d.PeekKind() != '{' {
		return false
	}
	_, err := d.ReadToken()
	return err == nil
}

// oversized is a document of a batch that fails on a count the walk
// found, without being decoded: its bytes, what stands in for it (its id,
// so that duplicate_id still sees it, and any unknown member, so that the
// decoder still words that failure), and its failure.
type oversized struct {
	start, end int64
	stand      []byte
	result     *ingest.Result
}

// documentType is the type a batch's documents decode into.
var documentType = reflect.TypeFor[spi.Document]()

// findOversized walks the documents of a POST /v1/documents body (no
// more than the batch limit: checkBatchSize ran first) and returns, by
// index, those that pass a count of the ingest limits (metadata keys, a
// metadata list's items, entities, links), or hold a member a document
// does not have: decoding them would build the whole value before the
// failure is known. nil when there are none, or when the body is not
// well-formed enough to walk (the decoder then says why).
func findOversized(body []byte, lim ingest.Limits) map[int]*oversized {
	d := newWalk(body)
	if !openObject(d) {
		return nil
	}
	var (
		out     map[int]*oversized
		scratch []byte // a member's name, reused
	)
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return nil
		}
		if name.String() != "documents" || d.PeekKind() != '[' {
			if d.SkipValue() != nil {
				return nil
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return nil
		}
		for i := 0; d.PeekKind() != ']'; i++ {
			if d.PeekKind() != '{' { // not a document: the decoder's to judge
				if d.SkipValue() != nil {
					return nil
				}
				continue
			}
			o, ok := walkDocument(d, body, lim, &scratch)
			if !ok {
				return nil
			}
			if o != nil {
				if out == nil {
					out = map[int]*oversized{}
				}
				out[i] = o
			}
		}
	}
	return out
}

// walkDocument reads the next document (an object) and returns
// it as oversized when a count passes its bound; ok is false for input
// the walk leaves to the decoder.
func walkDocument(d *jsontext.Decoder, body []byte, lim ingest.Limits, scratch *[]byte) (o *oversized, ok bool) {
	start := itemStart(d, body)
	if _, err := d.ReadToken(); err != nil {
		return nil, false
	}
	var (
		id      []byte // the raw id, within body (nothing is copied)
		unknown []byte // the first unknown member, as it stands in
		why     *ingest.Result
	)
	fail := func(code, format string, args ...any) {
		if why == nil {
			why = &ingest.Result{Status: ingest.StatusFailed, Code: code, Error: fmt.Sprintf(format, args...)}
		}
	}
	for d.PeekKind() == '"' {
		// The name as raw bytes: a token's string would cost an
		// allocation per member of every document of every batch.
		raw, err := d.ReadValue()
		if err != nil {
			return nil, false
		}
		// Copied: raw is valid until the next read only.
		name := append((*scratch)[:0], raw[1:len(raw)-1]...)
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(name[:0], raw); err != nil {
				return nil, false
			}
		}
		*scratch = name
		kind := d.PeekKind()
		switch {
		case string(name) == "id" && kind == '"':
			v, err := d.ReadValue()
			if err != nil {
				return nil, false
			}
			end := d.InputOffset()
			id = body[end-int64(len(v)) : end]
			continue
		case string(name) == "metadata" && kind == '{':
			n, list, items, ok := walkMetadata(d, body, lim.MaxMetadataListItems)
			switch {
			case !ok:
				return nil, false
			case n > lim.MaxMetadataKeys:
				fail(ingest.CodeInvalidMetadata, "metadata has %d keys, at most %d allowed", n, lim.MaxMetadataKeys)
			case list != "":
				fail(ingest.CodeInvalidMetadata, "metadata list of key %q has %d items, at most %d allowed", list, items, lim.MaxMetadataListItems)
			}
			continue
		case (string(name) == "entities" || string(name) == "links") && kind == '[':
			n, ok := countMembers(d, '[')
			if !ok {
				return nil, false
			}
			code, max := ingest.CodeInvalidEntities, lim.MaxEntities
			if string(name) == "links" {
				code, max = ingest.CodeInvalidLinks, lim.MaxLinks
			}
			if n > max {
				fail(code, "%d %s, at most %d allowed", n, name, max)
			}
			continue
		case unknown == nil && !strictjson.HasMember(documentType, string(name)): // the decoder names the first one
			fail(DocUnknownField, "")
			unknown, _ = jsontext.AppendQuote(nil, name)
			if bytes.EqualFold(name, []byte("id")) && kind == '"' {
				// {"ID": "f"}: the result still names the document.
				v, err := d.ReadValue()
				if err != nil {
					return nil, false
				}
				unknown = append(append(unknown, ':'), v...)
				continue
			}
			unknown = append(unknown, `:null`...)
		}
		if d.SkipValue() != nil {
			return nil, false
		}
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return nil, false
	}
	if why == nil {
		return nil, true
	}
	// What stands in for the document: its id, and its first unknown
	// member with a null value (a miscased id keeps its string), whose
	// failure the decoder words as it always did (the case-sensitive
	// hint included).
	stand := []byte(`{`)
	if id != nil {
		stand = append(append(stand, `"id":`...), id...)
	}
	if unknown != nil {
		if id != nil {
			stand = append(stand, ',')
		}
		stand = append(stand, unknown...)
		why = nil // the decoder's result
	}
	stand = append(stand, '}')
	if why != nil && id != nil {
		why.ID = probeID(stand)
	}
	return &oversized{start: start, end: d.InputOffset(), stand: stand, result: why}, true
}

// walkMetadata reads the metadata object d is at and returns how many
// keys it holds, and the first key whose list holds more than maxItems
// items, with their number. A key is unquoted only then: nothing is
// built for the others.
func walkMetadata(d *jsontext.Decoder, body []byte, maxItems int) (keys int, list string, items int, ok bool) {
	if _, err := d.ReadToken(); err != nil {
		return 0, "", 0, false
	}
	for d.PeekKind() == '"' {
		start := itemStart(d, body)
		if _, err := d.ReadToken(); err != nil {
			return 0, "", 0, false
		}
		end := d.InputOffset()
		keys++
		if d.PeekKind() != '[' || list != "" {
			if d.SkipValue() != nil {
				return 0, "", 0, false
			}
			continue
		}
		n, ok := countMembers(d, '[')
		if !ok {
			return 0, "", 0, false
		}
		if n > maxItems {
			name, err := jsontext.AppendUnquote(nil, body[start:end])
			if err != nil {
				return 0, "", 0, false
			}
			list, items = string(name), n
		}
	}
	_, err := d.ReadToken() // '}'
	return keys, list, items, err == nil
}

// countMembers reads the object or array d is at and returns how many
// members or items it holds.
func countMembers(d *jsontext.Decoder, open jsontext.Kind) (int, bool) {
	if _, err := d.ReadToken(); err != nil {
		return 0, false
	}
	n := 0
	for k := d.PeekKind(); k != '}' && k != ']'; k = d.PeekKind() {
		if k == 0 {
			return 0, false
		}
		if open == '{' {
			if _, err := d.ReadToken(); err != nil { // the name
				return 0, false
			}
		}
		if d.SkipValue() != nil {
			return 0, false
		}
		n++
	}
	_, err := d.ReadToken()
	return n, err == nil
}

// standIn returns body with each oversized document's bytes replaced by
// what stands in for it.
func standIn(body []byte, over map[int]*oversized) []byte {
	type span struct {
		start, end int64
		stand      []byte
	}
	spans := make([]span, 0, len(over))
	for _, o := range over {
		spans = append(spans, span{o.start, o.end, o.stand})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) }) // in body order
	out := make([]byte, 0, len(body))
	var at int64
	for _, s := range spans {
		out = append(append(out, body[at:s.start]...), s.stand...)
		at = s.end
	}
	return append(out, body[at:]...)
}

// writerLimits is what the write path's Writer may tell of its limits
// (*ingest.Pipeline does).
type writerLimits interface{ Limits() ingest.Limits }

// docLimits are the limits the writer validates documents by: the
// writer's, else ingest's defaults.
func (s *Server) docLimits() ingest.Limits {
	if w, ok := s.cfg.Writer.(writerLimits); ok {
		return w.Limits()
	}
	return ingest.Limits{}.WithDefaults()
}
