package embedded

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/ragd/ragd/spi"
)

// recordVersion is the first byte of a record whose metadata values are
// all strings (the only record of earlier releases); typedRecordVersion
// that of a record with some typed value, whose metadata values are
// written as their JSON (spi.Value).
const (
	recordVersion      = 1
	typedRecordVersion = 2
)

// A record is
//
//	version byte
//	uvarint len, tenant
//	uvarint n, then n × (uvarint len, key, uvarint len, value)   metadata
//	    (version 1: the string; version 2: the value's JSON)
//	dim × float32 little-endian                                   raw vector
//	JSON body: title, text, entities, links, updated_at
//
// The header holds what the in-memory index needs, so Open decodes no JSON.

type body struct {
	Title     string    `json:"title,omitempty"`
	Text      string    `json:"text,omitempty"`
	Entities  []string  `json:"entities,omitempty"`
	Links     []string  `json:"links,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// encodeRecord serialises d, whose vector has been validated.
func encodeRecord(d *spi.Document) ([]byte, error) {
	js, err := json.Marshal(body{Title: d.Title, Text: d.Text, Entities: d.Entities, Links: d.Links, UpdatedAt: d.UpdatedAt})
	if err != nil {
		return nil, err
	}
	version := byte(recordVersion)
	vals := make(map[string]string, len(d.Metadata))
	for _, v := range d.Metadata {
		if v.Kind() != spi.KindString {
			version = typedRecordVersion
		}
	}
	n := 1 + 10 + len(d.Tenant) + 10 + 4*len(d.Vector) + len(js)
	for k, v := range d.Metadata {
		s := v.Str()
		if version == typedRecordVersion {
			raw, err := v.MarshalJSON()
			if err != nil {
				return nil, err
			}
			s = string(raw)
		}
		vals[k] = s
		n += 20 + len(k) + len(s)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, version)
	buf = appendString(buf, d.Tenant)
	buf = binary.AppendUvarint(buf, uint64(len(d.Metadata)))
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		buf = appendString(buf, k)
		buf = appendString(buf, vals[k])
	}
	for _, x := range d.Vector {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
	}
	return append(buf, js...), nil
}

var errShort = errors.New("record truncated")

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errShort
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// header is the part of a record the index keeps in memory.
type header struct {
	tenant   string
	metadata spi.Metadata
	rest     []byte // the JSON body, aliasing the input
}

// decodeHeader parses a record's header, appending its vector to vec.
func decodeHeader(rec []byte, dim int, vec []float32) (header, []float32, error) {
	if len(rec) == 0 || (rec[0] != recordVersion && rec[0] != typedRecordVersion) {
		return header{}, vec, fmt.Errorf("unknown record version")
	}
	typed := rec[0] == typedRecordVersion
	r := &reader{b: rec[1:]}
	var h header
	h.tenant = r.string()
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = errShort
	}
	if r.err == nil && n > 0 {
		h.metadata = make(spi.Metadata, n)
		for range n {
			k, s := r.string(), r.string()
			if !typed {
				h.metadata[k] = spi.String(s)
				continue
			}
			var v spi.Value
			if r.err == nil && (json.Unmarshal([]byte(s), &v) != nil || (spi.Metadata{k: v}).Validate() != nil) {
				r.err = errors.New("record metadata: not a value")
			}
			h.metadata[k] = v
		}
	}
	if r.err != nil {
		return header{}, vec, r.err
	}
	if len(r.b) < 4*dim {
		return header{}, vec, errShort
	}
	for i := range dim {
		vec = append(vec, math.Float32frombits(binary.LittleEndian.Uint32(r.b[4*i:])))
	}
	h.rest = r.b[4*dim:]
	return h, vec, nil
}

// decodeDocument parses a whole record into a document with id.
func decodeDocument(id string, rec []byte, dim int) (spi.Document, error) {
	h, vec, err := decodeHeader(rec, dim, make([]float32, 0, dim))
	if err != nil {
		return spi.Document{}, err
	}
	var b body
	if err := json.Unmarshal(h.rest, &b); err != nil {
		return spi.Document{}, fmt.Errorf("record body: %w", err)
	}
	return spi.Document{
		ID: id, Tenant: h.tenant, Title: b.Title, Text: b.Text, Metadata: h.metadata,
		Vector: vec, Entities: b.Entities, Links: b.Links, UpdatedAt: b.UpdatedAt.UTC(),
	}, nil
}
