package embedded

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ragd/ragd/spi"
)

// metaSet interns the rows' metadata maps: rows with the same metadata
// share one map. A map of three or four short pairs is about 340 bytes of
// heap, as much as a row's int8 codes, and documents of one collection
// mostly repeat a few combinations (BenchmarkANN's: about 160).
//
// Invariant (checkMetaSet): every non-empty ix.meta[i] is the map of the
// entry of its key (metaKey), an entry's refs is the number of rows
// holding its map, and no entry has refs 0. An interned map is never
// changed.
type metaSet map[string]*metaEntry

type metaEntry struct {
	m    spi.Metadata
	refs int
}

// metaKey is md's pairs in key order, each key followed by a NUL byte
// (which no key can hold) and its value's metaValueKey: two maps share a
// key exactly when they hold the same keys with values of the same kinds
// and the same JSON (3 and 3.0, equal as filters see them, stay apart, so
// an interned map is the row's metadata as written).
func metaKey(md spi.Metadata) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(md)) {
		b.WriteString(k)
		b.WriteByte(0)
		writeValueKey(&b, md[k])
	}
	return b.String()
}

// writeValueKey writes v's kind as a byte, then a list's items each so
// written and a NUL byte, or a scalar's JSON length and JSON.
func writeValueKey(b *strings.Builder, v spi.Value) {
	b.WriteByte(byte(v.Kind()))
	if v.Kind() == spi.KindList {
		for _, it := range v.Items() {
			writeValueKey(b, it)
		}
		b.WriteByte(0)
		return
	}
	js := v.String()
	b.WriteString(strconv.Itoa(len(js)))
	b.WriteByte(':')
	b.WriteString(js)
}

// intern returns the shared map equal to md (md itself when none is),
// counted once more; nil for an empty md.
func (s metaSet) intern(md spi.Metadata) spi.Metadata {
	if len(md) == 0 {
		return nil
	}
	k := metaKey(md)
	if e, ok := s[k]; ok {
		e.refs++
		return e.m
	}
	s[k] = &metaEntry{m: md, refs: 1}
	return md
}

// release counts one row fewer holding md, an interned map (or nil).
func (s metaSet) release(md spi.Metadata) {
	if len(md) == 0 {
		return
	}
	k := metaKey(md)
	if e := s[k]; e != nil {
		if e.refs--; e.refs == 0 {
			delete(s, k)
		}
	}
}

// checkMetaSet checks the invariant written beside metaSet.
func checkMetaSet(ix *index) error {
	refs := map[string]int{}
	for i, md := range ix.meta {
		if len(md) == 0 {
			continue
		}
		k := metaKey(md)
		e := ix.metas[k]
		if e == nil {
			return fmt.Errorf("row %d: metadata %v not interned", i, md)
		}
		if reflect.ValueOf(e.m).UnsafePointer() != reflect.ValueOf(md).UnsafePointer() {
			return fmt.Errorf("row %d: metadata %v is not the interned map", i, md)
		}
		refs[k]++
	}
	for k, e := range ix.metas {
		if e.refs != refs[k] {
			return fmt.Errorf("metadata %q: %d refs, %d rows", k, e.refs, refs[k])
		}
	}
	return nil
}
