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
// filter's bounds (spi.MaxFilter*, read by spi.ReadFilter) and the number
// of per-source options. Decoding would otherwise build the whole value
// first (a 525,694-key filter cost 2.6 s and 155 MB of allocations before
// validation refused it). The walk allocates only the strings of the
// bounded parts it reads and skips the rest; anything else wrong with the
// body is left to decodeBody, which reports it (nil here).
func checkQueryBounds(body []byte) error {
	w := newBoundsWalk(body, maxQueryDepth)
	err := w.query()
	if errors.Is(err, errQueryShape) {
		return nil
	}
	return err
}

// boundsWalk reads a body's tokens once, refusing it at the first token
// past a bound (see checkQueryBounds). maxDepth bounds the nesting.
type boundsWalk struct {
	d        *jsontext.Decoder
	maxDepth int
	// tokens, when not nil, counts down the tokens skipValue may read:
	// the bound on an MCP message's parameters outside its arguments.
	tokens *int
}

func newBoundsWalk(body []byte, maxDepth int) *boundsWalk {
	d := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return &boundsWalk{d: d, maxDepth: maxDepth}
}

// query walks a query object up to (not including) its closing brace.
func (w *boundsWalk) query() error {
	d := w.d
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
			err = w.filter()
		case "sources":
			err = w.sources()
		default:
			err = w.skipValue()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// filter reads the filter with spi.ReadFilter, which refuses it at the
// first token past one of its bounds (depth, conditions, values, key and
// string sizes) or against the language, with the place. Malformed JSON
// is left to the decoder.
func (w *boundsWalk) filter() error {
	_, err := spi.ReadFilter(w.d)
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
	if fe.Offset < 0 {
		return fieldError("invalid_filter", field, "%s", fe.Error())
	}
	return boundError("invalid_filter", field, fe.Offset, "%s", fe.Msg)
}

// sources bounds the number of per-source options: one per source.
func (w *boundsWalk) sources() error {
	d := w.d
	if d.PeekKind() != '{' {
		return w.skipValue()
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
		if err := w.skipValue(); err != nil {
			return err
		}
	}
	return w.skipValue()
}

// skipValue reads the next value (or, inside a container, the closing
// token) without keeping it, refusing nesting deeper than w.maxDepth.
func (w *boundsWalk) skipValue() error {
	d := w.d
	base := d.StackDepth()
	for {
		off := d.InputOffset()
		tok, err := d.ReadToken()
		if err != nil {
			return errQueryShape
		}
		if w.tokens != nil {
			if *w.tokens--; *w.tokens < 0 {
				return paramsTooLarge(off)
			}
		}
		if d.StackDepth() > w.maxDepth {
			e := newError(http.StatusBadRequest, CodeInvalidBody, "the body nests deeper than %d levels at byte %d", w.maxDepth, off)
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

// mcpArgsDepth is how much deeper an MCP tool's arguments sit than a
// query body does: {"params":{"arguments":{...}}}. A tool call gets the
// query's nesting bound below it.
const mcpArgsDepth = 2

// mcpPeek is what checkMCPBounds learned of a JSON-RPC message before it
// is decoded.
type mcpPeek struct {
	// id is the message's raw id when it is a string or a number.
	id []byte
	// method is the message's method when it is a string.
	method string
	// argsErr is the first query bound params.arguments passes: a tool's
	// input error, answered as the tool's error.
	argsErr error
}

// checkMCPBounds walks one JSON-RPC message's tokens before it is decoded,
// with the query's bounds on params.arguments (a tool call's input) and
// the query's nesting bound below them. It returns an error for nesting
// too deep; a bound the arguments pass is peek.argsErr, and the walk goes
// on (skipping the rest of the arguments) to find the id and the method.
// Anything else wrong is left to the decoder.
func checkMCPBounds(body []byte) (peek mcpPeek, _ error) {
	w := newBoundsWalk(body, maxQueryDepth+mcpArgsDepth)
	err := w.message(&peek)
	if errors.Is(err, errQueryShape) || errors.Is(err, errPeeked) {
		return peek, nil
	}
	return peek, err
}

// errPeeked stops the walk once an argument passed a bound and the id and
// the method are known: nothing after them changes the answer.
var errPeeked = errors.New("api: the message is peeked")

func (w *boundsWalk) message(peek *mcpPeek) error {
	d := w.d
	if d.PeekKind() != '{' {
		return errQueryShape
	}
	if _, err := d.ReadToken(); err != nil {
		return errQueryShape
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return errQueryShape
		}
		name := tok.String() // valid until the next read only
		switch k := d.PeekKind(); {
		case name == "id" && (k == '"' || k == '0'):
			v, err := d.ReadValue()
			if err != nil {
				return errQueryShape
			}
			peek.id = bytes.Clone(v)
		case name == "method" && k == '"':
			v, err := d.ReadToken()
			if err != nil {
				return errQueryShape
			}
			peek.method = v.String()
		case name == "params" && k == '{':
			err = w.params(peek)
		default:
			err = w.skipValue()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxMCPParamsTokens bounds the JSON tokens (names, scalars, brackets) of
// an MCP message's params outside a tool call's arguments, which the
// query's bounds cover: the SDK decodes the rest (_meta, capabilities,
// clientInfo; a dozen tokens in practice) into maps and slices, and
// 256 KiB of them (a 17,000-key _meta) cost 19-39 MB of allocations and
// 30-60 ms before the answer.
const maxMCPParamsTokens = 1024

// paramsTooLarge is the 400 of params past maxMCPParamsTokens at byte off.
func paramsTooLarge(off int64) *apiError {
	e := newError(http.StatusBadRequest, CodeInvalidBody,
		"params holds more than %d JSON tokens besides the arguments (at byte %d): an MCP message's parameters are small", maxMCPParamsTokens, off)
	e.Detail.Field, e.Detail.Offset = "params", &off
	return e
}

// params walks the params object, bounding its arguments (the query's
// bounds) and the rest (maxMCPParamsTokens), through its closing brace.
func (w *boundsWalk) params(peek *mcpPeek) error {
	d := w.d
	if _, err := d.ReadToken(); err != nil {
		return errQueryShape
	}
	left := maxMCPParamsTokens
	depth := d.StackDepth()
	for d.PeekKind() == '"' {
		if left--; left < 0 {
			return paramsTooLarge(d.InputOffset())
		}
		tok, err := d.ReadToken()
		if err != nil {
			return errQueryShape
		}
		if tok.String() != "arguments" || d.PeekKind() != '{' || peek.argsErr != nil {
			w.tokens = &left
			err := w.skipValue()
			w.tokens = nil
			if err != nil {
				return err
			}
			continue
		}
		err = w.query()
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Detail.Code == CodeInvalidBody: // nesting: the whole body
			return err
		case err != nil && !errors.Is(err, errQueryShape):
			peek.argsErr = err
			if peek.id != nil && peek.method != "" {
				return errPeeked
			}
		}
		// The rest of the arguments, through their closing brace.
		for d.StackDepth() > depth {
			if err := w.skipValue(); err != nil {
				return err
			}
		}
	}
	return w.skipValue() // the closing brace
}
