package api

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ragd/ragd/spi"
)

// maxQueryDepth bounds the nesting of a query body. The deepest a valid
// query goes is 3 (sources → vector → weight, filter → key → values).
const maxQueryDepth = 8

// errQueryShape stops the walk at input decodeBody will refuse anyway
// (malformed JSON, a wrong type): its messages say what is wrong.
var errQueryShape = errors.New("api: leave it to the decoder")

// checkQueryBounds walks a query body's tokens once, before it is decoded,
// and refuses it at the first token past a bound: the nesting, the
// filter's keys, values and string sizes (spi.MaxFilter*) and the number
// of per-source options. Decoding would otherwise build the whole value
// first (a 525,694-key filter cost 2.6 s and 155 MB of allocations before
// validation refused it). The walk allocates only the strings of the
// bounded parts it reads and skips the rest; anything else wrong with the
// body is left to decodeBody, which reports it (nil here).
func checkQueryBounds(body []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	err := walkQuery(d)
	if errors.Is(err, errQueryShape) {
		return nil
	}
	return err
}

func walkQuery(d *jsontext.Decoder) error {
	if d.PeekKind() != '{' {
		return errQueryShape
	}
	if _, err := d.ReadToken(); err != nil {
		return errQueryShape
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return errQueryShape
		}
		switch name.String() {
		case "filter":
			err = walkFilter(d)
		case "sources":
			err = walkSources(d)
		default:
			err = skipValue(d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// walkFilter bounds an object of arrays of strings.
func walkFilter(d *jsontext.Decoder) error {
	if d.PeekKind() != '{' {
		return skipValue(d)
	}
	if _, err := d.ReadToken(); err != nil {
		return errQueryShape
	}
	for keys := 1; d.PeekKind() == '"'; keys++ {
		off := d.InputOffset()
		key, err := d.ReadToken()
		if err != nil {
			return errQueryShape
		}
		if keys > spi.MaxFilterKeys {
			return boundError("invalid_filter", "filter", off, "more than %d keys", spi.MaxFilterKeys)
		}
		if n := len(key.String()); n > spi.MaxFilterKeyBytes {
			return boundError("invalid_filter", "filter", off, "a key of %d bytes, at most %d allowed", n, spi.MaxFilterKeyBytes)
		}
		if d.PeekKind() != '[' {
			if err := skipValue(d); err != nil {
				return err
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return errQueryShape
		}
		for values := 1; d.PeekKind() != ']'; values++ {
			off := d.InputOffset()
			if values > spi.MaxFilterValues {
				return boundError("invalid_filter", "filter", off, "a key with more than %d values", spi.MaxFilterValues)
			}
			if d.PeekKind() != '"' {
				if err := skipValue(d); err != nil {
					return err
				}
				continue
			}
			v, err := d.ReadToken()
			if err != nil {
				return errQueryShape
			}
			if n := len(v.String()); n > spi.MaxFilterValueBytes {
				return boundError("invalid_filter", "filter", off, "a value of %d bytes, at most %d allowed", n, spi.MaxFilterValueBytes)
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return errQueryShape
		}
	}
	return skipValue(d) // the closing brace, or whatever the decoder will refuse
}

// walkSources bounds the number of per-source options: one per source.
func walkSources(d *jsontext.Decoder) error {
	if d.PeekKind() != '{' {
		return skipValue(d)
	}
	if _, err := d.ReadToken(); err != nil {
		return errQueryShape
	}
	for n := 1; d.PeekKind() == '"'; n++ {
		off := d.InputOffset()
		if _, err := d.ReadToken(); err != nil {
			return errQueryShape
		}
		if max := len(spi.QuerySources()); n > max {
			return boundError("invalid_sources", "sources", off, "options for more than %d sources", max)
		}
		if err := skipValue(d); err != nil {
			return err
		}
	}
	return skipValue(d)
}

// skipValue reads the next value (or, inside a container, the closing
// token) without keeping it, refusing nesting deeper than maxQueryDepth.
func skipValue(d *jsontext.Decoder) error {
	base := d.StackDepth()
	for {
		off := d.InputOffset()
		tok, err := d.ReadToken()
		if err != nil {
			return errQueryShape
		}
		if d.StackDepth() > maxQueryDepth {
			e := newError(http.StatusBadRequest, CodeInvalidBody, "the body nests deeper than %d levels at byte %d", maxQueryDepth, off)
			e.Detail.Offset = &off
			return e
		}
		if k := tok.Kind(); d.StackDepth() <= base && k != '{' && k != '[' {
			return nil
		}
	}
}

// boundError is a 400 for a bound passed at byte off.
func boundError(code, field string, off int64, format string, args ...any) *apiError {
	e := fieldError(code, field, field+": "+format+" (at byte %d)", append(args, off)...)
	e.Detail.Offset = &off
	return e
}
