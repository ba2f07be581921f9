package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ragd/ragd/internal/testenv"
)

// TestOpenSearchConsole: with the keyword index on OpenSearch, the status
// API and the console show the cluster's health. The shared node is one
// node, and the configuration asks for a replica of every index, which a
// single node cannot place: the cluster says yellow for ragd's indexes,
// /v1/status/health reports the keyword store degraded with the cluster's
// status, nodes, shards and unassigned shards, and the console's keyword
// card and store table show the same, with the documents the cluster
// counts.
func TestOpenSearchConsole(t *testing.T) {
	url := testenv.OpenSearch(t)
	var rb [5]byte
	_, _ = rand.Read(rb[:])
	prefix := "e2econsole" + hex.EncodeToString(rb[:])
	t.Cleanup(func() {
		for _, p := range []string{"/" + prefix + "-*?expand_wildcards=all", "/_index_template/" + prefix + "-tenants"} {
			req, _ := http.NewRequest(http.MethodDelete, url+p, nil)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
	})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(cfgPath, []byte(openSearchConfig(filepath.Join(dir, "data"), url, prefix, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startRagd(t, cfgPath)
	admin := newClient(srv.addr, adminKey)
	t.Cleanup(admin.close)
	docs := []document{
		{ID: "os-1", Title: "zeppelin mooring", Text: "masts and winches for airships"},
		{ID: "os-2", Title: "balloon envelopes", Text: "hydrogen and helium cells"},
		{ID: "os-3", Title: "airship engines", Text: "propellers and gondolas"},
	}
	var resp batchResponse
	if st, body, err := admin.call(context.Background(), http.MethodPost, "/v1/documents?wait=60s", upsertRequest{Documents: docs}, &resp); err != nil ||
		st != http.StatusOK || resp.OK != len(docs) || resp.Pending != 0 {
		t.Fatalf("POST /v1/documents: status %d, %v: %.500s", st, err, body)
	}

	// The API: the keyword component carries the cluster's health. The
	// health and the counts are cached for a few seconds: poll.
	var kw component
	deadline := time.Now().Add(time.Minute)
	for {
		var h healthResponse
		st, body, err := admin.call(context.Background(), http.MethodGet, "/v1/status/health", nil, &h)
		if err != nil || st != http.StatusOK {
			t.Fatalf("GET /v1/status/health: %d %v %.300s", st, err, body)
		}
		kw = h.Components["keyword"]
		if strings.Contains(kw.Detail, "3 documents") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, want := range []string{"opensearch yellow", "1 node(s)", "unassigned", "3 documents"} {
		if kw.Status != "degraded" || !strings.Contains(kw.Detail, want) {
			t.Fatalf("keyword component %+v: want degraded, its detail naming %q", kw, want)
		}
	}

	b := newBrowser(t)
	b.do("open the console", chromedp.Navigate("http://"+srv.addr+"/ui/"))
	b.useKey(adminKey, "e2e-admin (admin)")
	const cardHealth = `([...document.querySelectorAll("#card-keyword dt")].find(dt => dt.textContent === "Health")?.nextElementSibling?.textContent ?? "")`
	b.waitFor("the keyword card's health", cardHealth+`.includes("opensearch yellow")`)
	health := jsEval[string](b, cardHealth)
	if !strings.HasPrefix(health, "degraded — opensearch yellow: 1 node(s)") || !strings.Contains(health, "unassigned") {
		t.Errorf("keyword card health %q: want degraded with the cluster's status, nodes and unassigned shards", health)
	}
	b.waitFor("the keyword store's row", `document.querySelector('#store-table tr[data-store="keyword"]')?.cells[3].textContent === "3"`)
	if kind := jsEval[string](b, `document.querySelector('#store-table tr[data-store="keyword"]').cells[1].textContent`); kind != "opensearch" {
		t.Errorf("keyword store kind %q, want opensearch", kind)
	}
	b.screenshot("opensearch-yellow")
	b.checkExceptions()
}
