package spitest

import (
	"math/rand/v2"
	"time"

	"github.com/ragd/ragd/spi"
)

// Typed metadata and random filters shared by the stores' model tests:
// a store's filtered answer must equal spi.Filter.Match applied by brute
// force to every document.

// typedBase is the first "published" time of TypedMetadata.
var typedBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// TypedMetadata adds typed values to md for document i: "page" an
// integer 0–49 (every 7th a float with the same value, every 11th the
// string spelling it, which no number filter may match), "score" a float
// in [0, 1), "published" a time i hours after 2024-01-01, "public" a
// boolean (half), "tags" a list of 0–3 items (strings, with a number
// now and then), and, for every 13th document, no "page" at all.
func TypedMetadata(r *rand.Rand, i int, md spi.Metadata) spi.Metadata {
	if md == nil {
		md = spi.Metadata{}
	}
	page := int64(i % 50)
	switch {
	case i%13 == 0:
	case i%11 == 0:
		md["page"] = spi.String(spellInt(page))
	case i%7 == 0:
		md["page"] = spi.Float(float64(page))
	default:
		md["page"] = spi.Int(page)
	}
	md["score"] = spi.Float(float64(r.IntN(1000)) / 1000)
	md["published"] = spi.MustTime(typedBase.Add(time.Duration(i) * time.Hour))
	md["public"] = spi.Bool(i%2 == 0)
	var tags []spi.Value
	for range r.IntN(4) {
		if r.IntN(5) == 0 {
			tags = append(tags, spi.Int(int64(r.IntN(3))))
		} else {
			tags = append(tags, spi.String([]string{"a", "b", "c"}[r.IntN(3)]))
		}
	}
	md["tags"] = spi.List(tags...)
	return md
}

func spellInt(i int64) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// RandomFilter returns a random valid filter over TypedMetadata's keys
// (and "lang", "kind", "rare" and an absent key), nesting $and, $or and
// $not up to three levels.
func RandomFilter(r *rand.Rand) spi.Filter { return randomFilter(r, 0) }

func randomFilter(r *rand.Rand, depth int) spi.Filter {
	if depth < 3 && r.IntN(3) == 0 {
		fs := make([]spi.Filter, 1+r.IntN(3))
		for i := range fs {
			fs[i] = randomFilter(r, depth+1)
		}
		switch r.IntN(3) {
		case 0:
			return spi.And(fs...)
		case 1:
			return spi.Or(fs...)
		}
		return spi.Not(fs[0])
	}
	num := func() spi.Value {
		if r.IntN(2) == 0 {
			return spi.Int(int64(r.IntN(55)))
		}
		return spi.Float(float64(r.IntN(550)) / 10)
	}
	when := func() spi.Value { return spi.MustTime(typedBase.Add(time.Duration(r.IntN(400)) * time.Hour)) }
	ops := []spi.CmpOp{spi.OpGt, spi.OpGte, spi.OpLt, spi.OpLte}
	switch r.IntN(12) {
	case 0:
		return spi.In("lang", spi.String([]string{"en", "de", "fr", "xx"}[r.IntN(4)]))
	case 1:
		return spi.In("kind", spi.String("paper"), spi.String("note"))
	case 2:
		return spi.Eq("page", num())
	case 3:
		return spi.Cmp("page", ops[r.IntN(4)], num())
	case 4:
		return spi.Cmp("score", ops[r.IntN(4)], spi.Float(float64(r.IntN(100))/100))
	case 5:
		return spi.Cmp("published", ops[r.IntN(4)], when())
	case 6:
		return spi.Eq("public", spi.Bool(r.IntN(2) == 0))
	case 7:
		return spi.In("tags", spi.String([]string{"a", "b", "c"}[r.IntN(3)]), spi.Int(int64(r.IntN(3))))
	case 8:
		return spi.Exists([]string{"page", "tags", "rare", "absent"}[r.IntN(4)])
	case 9:
		return spi.Eq("page", spi.String(spellInt(int64(r.IntN(50)))))
	case 10:
		return spi.Cmp("tags", ops[r.IntN(4)], spi.Int(1))
	}
	return spi.Eq("rare", spi.String("yes"))
}
