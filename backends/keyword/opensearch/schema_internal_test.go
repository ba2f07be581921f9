package opensearch

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Index names are valid OpenSearch index names (lower case, no
// forbidden characters, at most 255 bytes) whatever the tenant, one per
// tenant, and all inside the tenant pattern; document keys fit _id.
func TestNamesAndKeys(t *testing.T) {
	n := names{prefix: strings.Repeat("p", 64)}
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	tenants := []string{"", "acme", "ACME", "Acme Corp", "a/b", "a\\b", "ä", "日本", "x*y?z", "..", "-", "_",
		strings.Repeat("long", 64), strings.Repeat("é", 128)}
	seen := map[string]string{}
	for _, tn := range tenants {
		idx := n.tenant(tn)
		if !valid.MatchString(idx) || len(idx) > 255 || !strings.HasPrefix(idx, strings.TrimSuffix(n.tenantPattern(), "*")) {
			t.Errorf("tenant %q: index %q is not a valid name inside %s", tn, idx, n.tenantPattern())
		}
		if other, dup := seen[idx]; dup {
			t.Errorf("tenants %q and %q share index %q", tn, other, idx)
		}
		seen[idx] = tn
	}
	ids := []string{"a", "~a", strings.Repeat("x", 512), strings.Repeat("x", 513), strings.Repeat("é", 300)}
	keys := map[string]string{}
	for _, id := range ids {
		k := docKey(id)
		if len(k) > maxIDBytes || !utf8.ValidString(k) {
			t.Errorf("id of %d bytes: key of %d bytes", len(id), len(k))
		}
		if strings.HasPrefix(id, hashedIDPrefix) && k == id {
			t.Errorf("id %q starting with %q kept as its own key", id, hashedIDPrefix)
		}
		if other, dup := keys[k]; dup {
			t.Errorf("ids %q and %q share key %q", id, other, k)
		}
		keys[k] = id
	}
	if docKey("plain") != "plain" {
		t.Error("a short id is not its own key")
	}
	// A metadata entry's term cannot be read as another key and value.
	if metaTerm("a=b", "c") == metaTerm("a", "b=c") {
		t.Error("metaTerm is ambiguous")
	}
}

// The stop words are bleve's English list: the filter and the local
// analyzer drop the same words.
func TestStopWordsAreBleves(t *testing.T) {
	words := stopWords()
	an, err := localAnalyzer("en")
	if err != nil {
		t.Fatal(err)
	}
	if len(words) < 100 {
		t.Fatalf("%d stop words", len(words))
	}
	for _, w := range words {
		if strings.ContainsRune(w, '\'') {
			continue // the possessive step comes first ("let's" → "let"), here and in the index
		}
		if toks := an.Analyze([]byte(w)); len(toks) != 0 {
			t.Errorf("stop word %q: the local analyzer keeps %q", w, toks[0].Term)
		}
	}
}
