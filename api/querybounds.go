package api

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ragd/ragd/spi"
)

// maxQueryDepth bounds the nesting of a query body outside the filter
// (which spi.ReadFilter bounds). The deepest a valid query goes there is
// 3 (sources → vector → weight).
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

// walkFilter reads the filter with spi.ReadFilter, which refuses it at
// the first token past one of its bounds (depth, conditions, values, key
// and string sizes) or against the language, with the place. Malformed
// JSON is left to the decoder.
func walkFilter(d *jsontext.Decoder) error {
	_, err := spi.ReadFilter(d)
	var fe *spi.FilterError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return filterError(fe)
	}
	return errQueryShape
}

// filterError is the 400 of a filter that breaks the language or a bound.
func filterError(fe *spi.FilterError) *apiError {
	field := "filter"
	if fe.Path != "" {
		field += "." + fe.Path
	}
	e := fieldError("invalid_filter", field, "%s", fe.Error())
	if fe.Offset >= 0 {
		off := fe.Offset
		e.Detail.Offset = &off
	}
	return e
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
