package embedded

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
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
	m    map[string]string
	refs int
}

// metaKey is md's pairs in key order, each key and value followed by a
// NUL byte (which neither can hold).
func metaKey(md map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(md)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(md[k])
		b.WriteByte(0)
	}
	return b.String()
}

// intern returns the shared map equal to md (md itself when none is),
// counted once more; nil for an empty md.
func (s metaSet) intern(md map[string]string) map[string]string {
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
func (s metaSet) release(md map[string]string) {
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
