package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ragd/ragd/internal/testenv"
)

// openSearchRagd starts ragd serve with the keyword index on the shared
// OpenSearch node, under a prefix of its own (deleted at cleanup), and
// ingests three documents of the default tenant, waiting until OpenSearch
// holds them. It returns the server, an admin client, the node's URL and
// the prefix.
func openSearchRagd(t *testing.T, replicas int) (*ragdProc, *client, string, string) {
	t.Helper()
	url := testenv.OpenSearch(t)
	var rb [5]byte
	_, _ = rand.Read(rb[:])
	prefix := "e2eos" + hex.EncodeToString(rb[:])
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
	if err := os.WriteFile(cfgPath, []byte(openSearchConfig(filepath.Join(dir, "data"), url, prefix, replicas)), 0o600); err != nil {
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
	return srv, admin, url, prefix
}

// TestOpenSearchConsole: with the keyword index on OpenSearch, the status
// API and the console show the cluster's health. The shared node is one
// node, and the configuration asks for a replica of every index, which a
// single node cannot place: the cluster says yellow for ragd's indexes,
// /v1/status/health reports the keyword store degraded with the cluster's
// status, nodes, shards and unassigned shards, and the console's keyword
// card and store table show the same, with the documents the cluster
// counts.
func TestOpenSearchConsole(t *testing.T) {
	srv, admin, _, _ := openSearchRagd(t, 1)

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

// TestOpenSearchCheckRepairCLI: an index lost behind ragd's back (an
// operator's mistake, a lost shard) is found by `ragd check` (exit 1, the
// keyword store's documents missing) and restored by `ragd check
// --repair` (exit 0), after which keyword queries find the documents again.
func TestOpenSearchCheckRepairCLI(t *testing.T) {
	srv, admin, url, prefix := openSearchRagd(t, 0)
	keywordHits := func() int {
		t.Helper()
		var res queryResult
		off := false
		st, body, err := admin.call(context.Background(), http.MethodPost, "/v1/query",
			queryRequest{Text: "zeppelin mooring", Limit: 5, Sources: map[string]sourceOptions{"vector": {Enabled: &off}}}, &res)
		if err != nil || st != http.StatusOK || res.Sources["keyword"].Status != "ok" {
			t.Fatalf("keyword query: %d %v %+v %.300s", st, err, res.Sources, body)
		}
		return len(res.Hits)
	}
	if n := keywordHits(); n == 0 {
		t.Fatal("the keyword query finds nothing before the loss")
	}
	req, _ := http.NewRequest(http.MethodDelete, url+"/"+prefix+"-t-*", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("deleting the tenant indexes behind ragd's back: %v %v", res, err)
	}
	res.Body.Close()
	if n := keywordHits(); n != 0 {
		t.Fatalf("%d keyword hits after the tenant index was deleted", n)
	}
	check := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, ragdBinary(t), append([]string{"check", "--json", "--server", "http://" + srv.addr}, args...)...)
		cmd.Env = append(os.Environ(), "RAGD_API_KEY="+adminKey)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("ragd check %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	keywordOf := func(out string) storeCheck {
		t.Helper()
		var rep checkReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("ragd check --json: %v: %.500s", err, out)
		}
		for _, s := range rep.Stores {
			if s.Store == "keyword" {
				return s
			}
		}
		t.Fatalf("ragd check compared no keyword store: %.500s", out)
		return storeCheck{}
	}
	out, code := check()
	if kw := keywordOf(out); code != 1 || kw.Missing != 3 || kw.Repaired != 0 {
		t.Fatalf("ragd check: exit %d, keyword %+v; want exit 1 with 3 documents missing", code, kw)
	}
	out, code = check("--repair")
	if kw := keywordOf(out); code != 0 || kw.Missing != 3 || kw.Repaired != 3 || kw.Remaining != 0 {
		t.Fatalf("ragd check --repair: exit %d, keyword %+v; want exit 0, 3 repaired, none remaining", code, kw)
	}
	if n := keywordHits(); n == 0 {
		t.Fatal("the keyword query finds nothing after ragd check --repair")
	}
}
