package api

import (
	"encoding/json"
	"maps"
	"slices"
)

// MCPHitMetadataBytes bounds the metadata of one search hit (its JSON);
// keys past it are left out, in key order, and the hit says so.
const MCPHitMetadataBytes = 1024

// cutMetadata returns the keys of m, in key order, whose JSON together
// stays within n bytes, and whether any key was left out.
func cutMetadata[V any](m map[string]V, n int) (map[string]V, bool) {
	if len(m) == 0 {
		return nil, false
	}
	out := make(map[string]V, len(m))
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b, err := json.Marshal(m[k])
		if err != nil || size+len(k)+len(b) > n {
			return out, true
		}
		size += len(k) + len(b)
		out[k] = m[k]
	}
	return out, false
}
