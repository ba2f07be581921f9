package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/internal/strictjson"
)

// batch500 is a POST /v1/documents body of 500 documents: ~2 KB of text,
// four metadata keys, five entities, three links and a timestamp each,
// and with vectors a 384-dimensional vector too.
func batch500(vectors bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString(`{"documents":[`)
	for i := range 500 {
		if i > 0 {
			b.WriteByte(',')
		}
		words := make([]string, 300)
		for j := range words {
			words[j] = fmt.Sprintf("w%d", r.IntN(5000))
		}
		fmt.Fprintf(&b, `{"id":"doc-%d","title":"Title of document %d","text":%q,`+
			`"metadata":{"lang":"en","source":"bench","year":"2026","kind":"report"},`+
			`"entities":["e1","e2","e3","e4","e5"],"links":["doc-%d","doc-%d","doc-%d"],"updated_at":"2026-12-02T10:00:00Z"`,
			i, i, strings.Join(words, " "), r.IntN(500), r.IntN(500), r.IntN(500))
		if vectors {
			b.WriteString(`,"vector":[`)
			for j := range 384 {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%.6f", r.Float32()*2-1)
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// loop runs op b.N times and reports cpu-ms/op beside the wall time.
func loop(b *testing.B, size int, op func() error) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	start := benchutil.CPUTime()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchutil.CPUTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkDecodeBatch500 measures request decoding of a 500-document
// batch: decodeBody as served (the strict check, then encoding/json),
// its parts, and go-json-experiment/json (v2) for comparison. Compare
// cpu-ms/op on a loaded machine.
//
//	go test -run '^$' -bench DecodeBatch500 -count 5 ./api
func BenchmarkDecodeBatch500(b *testing.B) {
	for _, vectors := range []bool{false, true} {
		body := batch500(vectors)
		name := "text"
		if vectors {
			name = "vectors"
		}
		t := reflect.TypeFor[*UpsertRequest]()
		want500 := func(err error, req *UpsertRequest) error {
			if err == nil && len(req.Documents) != 500 {
				err = fmt.Errorf("%d documents", len(req.Documents))
			}
			return err
		}
		b.Run(name+"/decodeBody", func(b *testing.B) {
			loop(b, len(body), func() error {
				var req UpsertRequest
				if e := decodeBody(body, &req); e != nil {
					return e
				}
				return want500(nil, &req)
			})
		})
		// As served: decodeUpsert, with every document good, and with the
		// last one's metadata value a number (each document decoded on its
		// own then).
		bad := bytes.Clone(body)
		if i := bytes.LastIndex(bad, []byte(`"metadata":{`)); i >= 0 {
			bad = append(append(bad[:i:i], `"metadata":{"n":1,`...), bad[i+len(`"metadata":{`):]...)
		}
		for _, c := range []struct {
			name    string
			body    []byte
			invalid int
		}{{"served", body, 0}, {"served-one-bad", bad, 1}} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				loop(b, len(c.body), func() error {
					docs, failed, err := decodeUpsert(c.body)
					if err != nil {
						return err
					}
					n := 0
					for _, f := range failed {
						if f != nil {
							n++
						}
					}
					if len(docs) != 500 || n != c.invalid {
						return fmt.Errorf("%d documents, %d failed", len(docs), n)
					}
					return nil
				})
			})
		}
		b.Run(name+"/checkStrict", func(b *testing.B) {
			loop(b, len(body), func() error {
				if e := strictjson.Check(body, t); e != nil {
					return e
				}
				return nil
			})
		})
		b.Run(name+"/encoding-json", func(b *testing.B) { // decodeBody before checkStrict
			loop(b, len(body), func() error {
				var req UpsertRequest
				dec := json.NewDecoder(bytes.NewReader(body))
				dec.DisallowUnknownFields()
				return want500(dec.Decode(&req), &req)
			})
		})
		b.Run(name+"/json-v2", func(b *testing.B) {
			loop(b, len(body), func() error {
				var req UpsertRequest
				return want500(jsonv2.Unmarshal(body, &req, jsonv2.RejectUnknownMembers(true)), &req)
			})
		})
	}
}
