package embedded

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/spi"
)

// The first byte of every record: version 1 records hold their vector
// and string metadata values; version 2 records name their vector in the
// vectors file (vecfile.go), with string metadata values; version 3
// records name it too, with every metadata value written as its JSON
// (spi.Value). Versions 4 and 5 are versions 2 and 3 with the JSON body
// compressed (zstd, one frame with its checksum): about half the bytes on
// disk for prose. Stores write 4 when all of a document's values are
// strings and 5 otherwise (2 and 3 when compressing would not make the
// body smaller: a short title alone), and read all five.
const (
	recordInline    = 1
	recordVid       = 2
	recordVidTyped  = 3
	recordVidZ      = 4
	recordVidTypedZ = 5

	// compressed is what a version 2 or 3 record becomes when its body
	// is compressed.
	compressed = recordVidZ - recordVid
)

// zstd's encoder and decoder are safe for concurrent EncodeAll and
// DecodeAll and keep their state in pools: one of each for the process.
var (
	zEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	zDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(maxBody))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	})
)

// maxBody bounds a decompressed body, so that a damaged record cannot
// claim gigabytes: far above any body ingest accepts (title and text are
// limited to a few MiB by ingest.Limits).
const maxBody = 256 << 20

// A record is
//
//	version byte
//	uvarint len, tenant
//	uvarint n, then n × (uvarint len, key, uvarint len, value)   metadata
//	    (versions 1 and 2: the string; version 3: the value's JSON)
//	version 1: dim × float32 little-endian                       raw vector
//	versions 2, 3: uvarint vid                                   its entry in the vectors file
//	JSON body: title, text, entities, links, updated_at
//	    (versions 4, 5: zstd-compressed)
//
// The header holds what the in-memory index needs, so Open decodes no JSON
// and decompresses nothing.

type body struct {
	Title     string    `json:"title,omitempty"`
	Text      string    `json:"text,omitempty"`
	Entities  []string  `json:"entities,omitempty"`
	Links     []string  `json:"links,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// decodeBody parses a record's JSON body, which encoding/json wrote.
// go-json-experiment's decoder reads it in about half the time (it was 5%
// of a vector search's CPU through the API, hydrating ten documents);
// on what encoding/json writes the two agree, and a body that decoder
// refuses (a name twice, say, in a record written by other means) is read
// by encoding/json, as before.
func decodeBody(js []byte) (body, error) {
	var b body
	if jsonv2.Unmarshal(js, &b) == nil {
		return b, nil
	}
	b = body{}
	err := json.Unmarshal(js, &b)
	return b, err
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// encodedRecord is a record in two parts, the vid between them: the
// vid is given under the writers' mutex, the rest is encoded before.
type encodedRecord struct{ head, body []byte }

// encodeRecord serialises d but its vid.
func encodeRecord(d *spi.Document) (encodedRecord, error) {
	js, err := json.Marshal(body{Title: d.Title, Text: d.Text, Entities: d.Entities, Links: d.Links, UpdatedAt: d.UpdatedAt})
	if err != nil {
		return encodedRecord{}, err
	}
	version := byte(recordVid)
	vals := make(map[string]string, len(d.Metadata))
	for _, v := range d.Metadata {
		if v.Kind() != spi.KindString {
			version = recordVidTyped
		}
	}
	n := 1 + 10 + len(d.Tenant) + 10
	for k, v := range d.Metadata {
		s := v.Str()
		if version == recordVidTyped {
			raw, err := v.MarshalJSON()
			if err != nil {
				return encodedRecord{}, err
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
	if z := zEncoder().EncodeAll(js, make([]byte, 0, len(js)/2)); len(z) < len(js) {
		buf[0] += compressed
		js = z
	}
	return encodedRecord{head: buf, body: js}, nil
}

// withVid returns the record naming entry vid.
func (r encodedRecord) withVid(vid uint64) []byte {
	out := make([]byte, 0, len(r.head)+10+len(r.body))
	out = append(out, r.head...)
	out = binary.AppendUvarint(out, vid)
	return append(out, r.body...)
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
	vid      uint64 // a version 2 to 5 record's vector entry; 0 in version 1
	rest     []byte // the JSON body, aliasing the input
	zipped   bool   // rest is compressed (versions 4 and 5)
}

// decodeHeader parses a record's header, appending its vector to vec when
// the record holds it (version 1; versions 2 to 5 give h.vid, see
// Store.vector).
func decodeHeader(rec []byte, dim int, vec []float32) (header, []float32, error) {
	if len(rec) == 0 || rec[0] < recordInline || rec[0] > recordVidTypedZ {
		return header{}, vec, fmt.Errorf("unknown record version")
	}
	typed, inline := rec[0] == recordVidTyped || rec[0] == recordVidTypedZ, rec[0] == recordInline
	r := &reader{b: rec[1:]}
	h := header{zipped: rec[0] >= recordVidZ}
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
	if r.err == nil && !inline {
		if h.vid = r.uvarint(); r.err == nil && h.vid == 0 {
			r.err = errors.New("record names vector entry 0")
		}
		h.rest = r.b
	}
	if r.err != nil || !inline {
		return h, vec, r.err
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

// decodeDocument parses a whole record into a document with id, its
// vector from the vectors file when the record names it.
func (s *Store) decodeDocument(g *vecGen, id string, rec []byte) (spi.Document, error) {
	dim := s.cfg.Dimension
	h, vec, err := decodeHeader(rec, dim, make([]float32, 0, dim))
	if err != nil {
		return spi.Document{}, err
	}
	if vec, err = s.vector(g, h, vec, nil); err != nil {
		return spi.Document{}, err
	}
	js := h.rest
	if h.zipped {
		if js, err = zDecoder().DecodeAll(h.rest, nil); err != nil {
			return spi.Document{}, fmt.Errorf("record body: %w", err)
		}
	}
	b, err := decodeBody(js)
	if err != nil {
		return spi.Document{}, fmt.Errorf("record body: %w", err)
	}
	return spi.Document{
		ID: id, Tenant: h.tenant, Title: b.Title, Text: b.Text, Metadata: h.metadata,
		Vector: vec, Entities: b.Entities, Links: b.Links, UpdatedAt: b.UpdatedAt.UTC(),
	}, nil
}

// vector appends the vector of a version 2 to 5 record's header to vec (a
// version 1 record's is there already), read from g, the vectors file
// generation taken with the transaction the record comes from (readTx);
// buf as vectorFile.read's.
func (s *Store) vector(g *vecGen, h header, vec []float32, buf []byte) ([]float32, error) {
	if h.vid == 0 {
		return vec, nil
	}
	return s.vecs.read(g, h.vid, vec, buf)
}

// readTx opens a read transaction of the file and takes the vectors file
// generation that holds every vector its records name (the one current
// from before the transaction began until after: vecfile.go); done ends
// both.
func (s *Store) readTx() (tx *bolt.Tx, g *vecGen, done func(), err error) {
	for {
		g = s.vecs.acquire()
		if h := s.hooks.readAcquired; h != nil {
			h()
		}
		tx, err = s.db.Begin(false)
		if err != nil {
			s.vecs.release(g)
			return nil, nil, nil, err
		}
		if s.vecs.current(g) {
			return tx, g, func() { _ = tx.Rollback(); s.vecs.release(g) }, nil
		}
		// A compaction installed another file meanwhile: the transaction
		// may name vectors only that one holds.
		_ = tx.Rollback()
		s.vecs.release(g)
	}
}

// view runs fn in a read transaction with its vectors file generation.
func (s *Store) view(fn func(*bolt.Tx, *vecGen) error) error {
	tx, g, done, err := s.readTx()
	if err != nil {
		return err
	}
	defer done()
	return fn(tx, g)
}
