package spi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

func mustMeta(t testing.TB, s string) spi.Metadata {
	t.Helper()
	var md spi.Metadata
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		t.Fatalf("metadata %s: %v", s, err)
	}
	return md
}

func TestValueJSON(t *testing.T) {
	for in, want := range map[string]string{
		`"en"`:   `"en"`,
		`3`:      `3`,
		`-12`:    `-12`,
		`3.5`:    `3.5`,
		`3.0`:    `3.0`,
		`1e3`:    `1000.0`,
		`1e21`:   `1000000000000000000000.0`,
		`2.5e-7`: `2.5e-07`,
		`true`:   `true`,
		`false`:  `false`,
		`{"$time": "2024-05-01T12:00:00.25+02:00"}`:              `{"$time":"2024-05-01T10:00:00.250000Z"}`,
		`{"$time": "2024-05-01T12:00:00.1234567Z"}`:              `{"$time":"2024-05-01T12:00:00.123456Z"}`,
		`[3, "a", 2.5, true, {"$time": "0001-01-01T00:00:00Z"}]`: `[3,"a",2.5,true,{"$time":"0001-01-01T00:00:00.000000Z"}]`,
		`[]`:                   `[]`,
		`9223372036854775807`:  `9223372036854775807`,
		`-9223372036854775808`: `-9223372036854775808`,
	} {
		var v spi.Value
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got, err := json.Marshal(v)
		if err != nil || string(got) != want {
			t.Errorf("%s read back as %s (%v), want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`null`, `{}`, `{"a": 1}`, `{"$time": 3}`, `{"$time": "2024-05-01"}`, `{"$time": "2024-05-01T00:00:00Z", "x": 1}`,
		`[[1]]`, `[null]`, `9223372036854775808`, `-9223372036854775809`, `1e999`, `{"$time": "9999-12-31T23:59:59-01:00"}`} {
		var md spi.Metadata
		if err := json.Unmarshal([]byte(`{"k": `+in+`}`), &md); err != nil {
			t.Errorf("%s: decoding failed (%v): it must fail only in Validate", in, err)
			continue
		}
		err := md.Validate()
		if !errors.Is(err, spi.ErrInvalidMetadata) {
			t.Errorf("%s: error %v, want ErrInvalidMetadata", in, err)
		}
		if err != nil && strings.Contains(in, "9999") && strings.Contains(err.Error(), "9999-12-31T23") {
			t.Errorf("error quotes the value: %v", err)
		}
	}
}

func TestValueCompareExact(t *testing.T) {
	big := int64(1<<53 + 1)
	cases := []struct {
		a, b spi.Value
		want int
	}{
		{spi.Int(3), spi.Float(3), 0},
		{spi.Int(3), spi.Float(3.5), -1},
		{spi.Int(-3), spi.Float(-3.5), 1},
		{spi.Int(big), spi.Float(float64(1 << 53)), 1}, // float64(big) would round to 2^53
		{spi.Float(float64(1 << 53)), spi.Int(big), -1},
		{spi.Int(9223372036854775807), spi.Float(9223372036854775808.0), -1},
		{spi.Int(-9223372036854775808), spi.Float(-9223372036854775808.0), 0},
		{spi.Int(1), spi.Int(2), -1},
	}
	for _, c := range cases {
		if got, ok := spi.Compare(c.a, c.b); !ok || got != c.want {
			t.Errorf("Compare(%v, %v) = %d, %v; want %d", c.a, c.b, got, ok, c.want)
		}
		if eq := c.a.Equal(c.b); eq != (c.want == 0) {
			t.Errorf("Equal(%v, %v) = %v", c.a, c.b, eq)
		}
		if same := c.a.EqualityKey() == c.b.EqualityKey(); same != (c.want == 0) {
			t.Errorf("EqualityKey(%v)=%q, (%v)=%q: equal keys %v, want %v", c.a, c.a.EqualityKey(), c.b, c.b.EqualityKey(), same, c.want == 0)
		}
	}
	if _, ok := spi.Compare(spi.String("3"), spi.Int(3)); ok {
		t.Error("a string and a number compared")
	}
	if spi.String("3").Equal(spi.Int(3)) || spi.String("true").Equal(spi.Bool(true)) {
		t.Error("a string equals a non-string")
	}
	tm := spi.MustTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	if !tm.Equal(spi.MustTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("", 7200)))) {
		t.Error("times compare as instants")
	}
	if tm.Equal(spi.String("2024-05-01T10:00:00Z")) {
		t.Error("a time equals its spelling")
	}
}

// The semantics table of docs/api.md, one row per rule.
func TestFilterMatch(t *testing.T) {
	docs := map[string]string{
		"a": `{"lang": "en", "page": 3, "score": 0.5, "public": true, "tags": ["x", "y"], "published": {"$time": "2024-05-01T10:00:00Z"}}`,
		"b": `{"lang": "de", "page": 7.0, "tags": [], "draft": true}`,
		"c": `{"lang": "en", "page": "3", "nums": [1, 10]}`,
		"d": `{}`,
	}
	cases := []struct {
		filter string
		want   string // the matching documents, sorted
	}{
		{`{}`, "abcd"},
		{`null`, "abcd"},
		{`{"lang": "en"}`, "ac"},
		{`{"lang": ["en", "de"]}`, "abc"},
		{`{"page": 3}`, "a"},
		{`{"page": 3.0}`, "a"},
		{`{"page": "3"}`, "c"},
		{`{"page": 7}`, "b"},
		{`{"page": {"$gte": 3}}`, "ab"},
		{`{"page": {"$gt": 3, "$lte": 7}}`, "b"},
		{`{"page": {"$lt": "2030-01-01T00:00:00Z"}}`, ""},
		{`{"published": {"$gte": "2024-05-01T12:00:00+02:00"}}`, "a"},
		{`{"published": {"$gt": {"$time": "2024-05-01T10:00:00Z"}}}`, ""},
		{`{"published": {"$time": "2024-05-01T11:00:00+01:00"}}`, "a"},
		{`{"published": "2024-05-01T10:00:00Z"}`, ""},
		{`{"tags": "x"}`, "a"},
		{`{"tags": {"$in": ["y", "z"]}}`, "a"},
		{`{"tags": {"$ne": "x"}}`, "bcd"},
		{`{"tags": {"$nin": ["x"]}}`, "bcd"},
		{`{"tags": {"$exists": true}}`, "ab"},
		{`{"draft": {"$exists": false}}`, "acd"},
		{`{"lang": {"$ne": "en"}}`, "bd"},
		{`{"lang": {"$ne": "en", "$exists": true}}`, "b"},
		{`{"nums": {"$gt": 5, "$lt": 5}}`, "c"},
		{`{"public": true}`, "a"},
		{`{"public": "true"}`, ""},
		{`{"$or": [{"lang": "de"}, {"public": true}]}`, "ab"},
		{`{"$and": [{"lang": "en"}, {"page": {"$type": 1}}]}`, "error"},
		{`{"$not": {"lang": "en"}}`, "bd"},
		{`{"page": {"$not": {"$gte": 5}}}`, "acd"},
		{`{"$and": [{}, {"lang": "en"}]}`, "ac"},
		{`{"lang": "en", "$or": [{"page": 3}, {"nums": 10}]}`, "ac"},
		{`{"score": {"$gt": 0.25, "$lt": 1}}`, "a"},
	}
	for _, c := range cases {
		f, err := spi.ParseFilter([]byte(c.filter))
		if c.want == "error" {
			if err == nil {
				t.Errorf("%s: parsed, want an error", c.filter)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.filter, err)
			continue
		}
		got := ""
		for _, id := range []string{"a", "b", "c", "d"} {
			if f.Match(mustMeta(t, docs[id])) {
				got += id
			}
		}
		if got != c.want {
			t.Errorf("%s matches %q, want %q", c.filter, got, c.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	deep := `{"lang": "en"}`
	for range spi.MaxFilterDepth + 1 {
		deep = `{"$not": ` + deep + `}`
	}
	okDeep := `{"lang": "en"}`
	for range spi.MaxFilterDepth {
		okDeep = `{"$and": [` + okDeep + `]}`
	}
	vals := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	conds := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`"k%d": 1`, i)
		}
		return "{" + strings.Join(s, ",") + "}"
	}
	cases := []struct {
		filter, path string // path "" with ok: parses
		ok           bool
	}{
		{okDeep, "", true},
		{deep, "$not.$not.$not.$not.$not.$not.$not.$not.$not", false},
		{`{"k": ` + vals(spi.MaxFilterValues) + `}`, "", true},
		{`{"k": ` + vals(spi.MaxFilterValues+1) + `}`, "k[1024]", false},
		{conds(spi.MaxFilterConditions), "", true},
		{conds(spi.MaxFilterConditions + 1), "k64", false},
		{`{"$or": [{"a": 1}, {"b": {"$regex": "x"}}]}`, "$or[1].b.$regex", false},
		{`{"$where": "x"}`, "$where", false},
		{`{"a": {}}`, "a", false},
		{`{"a": []}`, "a", false},
		{`{"a": {"$in": []}}`, "a.$in", false},
		{`{"a": {"$in": "x"}}`, "a.$in", false},
		{`{"a": {"$gt": true}}`, "a.$gt", false},
		{`{"a": {"$gt": "yesterday"}}`, "a.$gt", false},
		{`{"a": {"$exists": 1}}`, "a.$exists", false},
		{`{"a": null}`, "a", false},
		{`{"a": [[1]]}`, "a[0]", false},
		{`{"a": {"b": 1}}`, "a.b", false},
		{`{"$or": []}`, "$or", false},
		{`{"$and": {}}`, "$and", false},
		{`{"a": 1e999}`, "a", false},
		{`[]`, "", false},
		{`{"` + strings.Repeat("k", spi.MaxFilterKeyBytes+1) + `": 1}`, "", false},
		{`{"a": "` + strings.Repeat("v", spi.MaxFilterValueBytes+1) + `"}`, "a", false},
		{`{"a": "` + strings.Repeat("v", spi.MaxFilterValueBytes) + `"}`, "", true},
	}
	for _, c := range cases {
		f, err := spi.ParseFilter([]byte(c.filter))
		if c.ok {
			if err != nil {
				t.Errorf("%.60s: %v", c.filter, err)
			} else if err := f.Validate(); err != nil {
				t.Errorf("%.60s parses but fails Validate: %v", c.filter, err)
			}
			continue
		}
		var fe *spi.FilterError
		if !errors.As(err, &fe) || !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("%.60s: error %v, want a FilterError wrapping ErrInvalidQuery", c.filter, err)
			continue
		}
		if fe.Path != c.path || fe.Offset < 0 {
			t.Errorf("%.60s: path %q offset %d, want path %q", c.filter, fe.Path, fe.Offset, c.path)
		}
	}
	for _, bad := range []string{`{"a": 1`, `{"a" 1}`, `{"a": 1}x`, `{"a": 1, "a": 2}`} {
		if _, err := spi.ParseFilter([]byte(bad)); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", bad, err)
		}
	}
}

// A bound is checked at the first token past it: a huge filter is refused
// after reading at most a few values beyond the bound, not all of it.
func TestFilterBoundBeforeDecoding(t *testing.T) {
	body := `{"k": ` + strings.Repeat(`[`, 0) + `[` + strings.Repeat(`1,`, 1_000_000) + `1]}`
	_, err := spi.ParseFilter([]byte(body))
	var fe *spi.FilterError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v", err)
	}
	if fe.Offset > int64(10*spi.MaxFilterValues) {
		t.Fatalf("refused at byte %d of %d: read past the bound", fe.Offset, len(body))
	}
}

func TestStringFilterIsTheOldSemantics(t *testing.T) {
	f := spi.StringFilter(map[string][]string{"lang": {"en", "de"}, "kind": {"paper"}})
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	for md, want := range map[string]bool{
		`{"lang": "en", "kind": "paper"}`:           true,
		`{"lang": "de", "kind": "paper", "x": "y"}`: true,
		`{"lang": "fr", "kind": "paper"}`:           false,
		`{"lang": "en"}`:                            false,
		`{}`:                                        false,
	} {
		if got := f.Match(mustMeta(t, md)); got != want {
			t.Errorf("Match(%s) = %v, want %v", md, got, want)
		}
	}
	if err := spi.StringFilter(map[string][]string{"lang": {}}).Validate(); err == nil {
		t.Error("a key without values validated")
	}
	if !(spi.Filter{}).Match(nil) {
		t.Error("the empty filter must match everything")
	}
}

func TestFilterValidateBuilt(t *testing.T) {
	bad := []spi.Filter{
		spi.Eq("", spi.Int(1)),
		spi.Eq("$x", spi.Int(1)),
		spi.In("k"),
		spi.Gt("k", spi.String("x")),
		spi.Eq("k", spi.List(spi.Int(1))),
		spi.Eq("k", spi.Value{}),
	}
	f := spi.Eq("k", spi.Int(1))
	for range 2*spi.MaxFilterDepth + 3 {
		f = spi.Not(f)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("depth: %v", err)
	}
	bad = append(bad, spi.Not(f))
	many := make([]spi.Filter, spi.MaxFilterConditions+1)
	for i := range many {
		many[i] = spi.Exists(fmt.Sprint(i))
	}
	if err := spi.And(many[1:]...).Validate(); err != nil {
		t.Fatalf("%d conditions: %v", spi.MaxFilterConditions, err)
	}
	bad = append(bad, spi.And(many...))
	for i, f := range bad {
		if err := f.Validate(); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("%d: Validate() = %v", i, err)
		}
	}
}

// randomFilter builds a random valid filter over a few keys and values
// (shared with the stores' model tests through spitest; here for the
// round trip).
func randomFilter(r *rand.Rand, depth int) spi.Filter {
	keys := []string{"a", "b", "c"}
	vals := []spi.Value{spi.Int(1), spi.Int(2), spi.Float(2.5), spi.String("x"), spi.Bool(true),
		spi.MustTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))}
	k := keys[r.IntN(len(keys))]
	switch n := r.IntN(9); {
	case n < 3 && depth < 3:
		fs := make([]spi.Filter, 1+r.IntN(3))
		for i := range fs {
			fs[i] = randomFilter(r, depth+1)
		}
		if n == 0 {
			return spi.And(fs...)
		}
		if n == 1 {
			return spi.Or(fs...)
		}
		return spi.Not(fs[0])
	case n < 5:
		return spi.In(k, vals[r.IntN(len(vals))], vals[r.IntN(len(vals))])
	case n < 7:
		return spi.Cmp(k, spi.CmpOp(1+r.IntN(4)), vals[r.IntN(3)])
	default:
		return spi.Exists(k)
	}
}

func TestFilterRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		f := randomFilter(r, 0)
		raw, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		g, err := spi.ParseFilter(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		again, _ := json.Marshal(g)
		if string(raw) != string(again) {
			t.Fatalf("round trip: %s became %s", raw, again)
		}
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": 1}`, `{"a": [1, "x"]}`, `{"$or": [{"a": {"$gte": 1.5}}, {"b": {"$exists": false}}]}`,
		`{"$not": {"t": {"$lt": "2024-01-01T00:00:00Z"}}}`, `{"a": {"$time": "2024-01-01T00:00:00Z"}}`, `{"a": {"$nin": [true]}}`} {
		f.Add([]byte(s))
	}
	md := spi.Metadata{"a": spi.Int(1), "b": spi.List(spi.String("x"), spi.Float(2.5)), "t": spi.MustTime(time.Unix(0, 0))}
	f.Fuzz(func(t *testing.T, b []byte) {
		flt, err := spi.ParseFilter(b)
		if err != nil {
			if !errors.Is(err, spi.ErrInvalidQuery) {
				t.Fatalf("error %v does not wrap ErrInvalidQuery", err)
			}
			return
		}
		if err := flt.Validate(); err != nil {
			t.Fatalf("parsed filter %s fails Validate: %v", b, err)
		}
		raw, err := json.Marshal(flt)
		if err != nil {
			t.Fatal(err)
		}
		g, err := spi.ParseFilter(raw)
		if err != nil {
			t.Fatalf("canonical form %s of %s does not parse: %v", raw, b, err)
		}
		if g.Match(md) != flt.Match(md) {
			t.Fatalf("%s and its canonical form %s disagree", b, raw)
		}
	})
}
