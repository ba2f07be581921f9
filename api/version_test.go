package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/apptest"
)

// Issue 29 item 4: a write's version is its sequence in the change log,
// which every tenant's writes advance: two writes of one tenant told it
// how many writes the others made in between. Keys bound to a tenant get
// their results without a version; keys of no tenant keep it.
func TestWriteVersionsHiddenFromTenants(t *testing.T) {
	const tenantAdmin = "acme-admin-key-0123456789"
	srv := apptest.Start(t, func(c *config.Config) {
		apptest.WithAuth(c)
		c.Auth.Keys = append(c.Auth.Keys, config.KeyConfig{Name: "acme-admin", Key: tenantAdmin, Role: config.RoleAdmin, Tenant: apptest.Tenant})
	})
	post := func(key, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	docs := `{"documents":[{"id":"v-1","text":"first"},{"id":"v-2","text":"second"}]}`
	if code, body := post(apptest.AdminKey, "/v1/documents", docs); code != http.StatusOK || !strings.Contains(body, `"version":`) {
		t.Fatalf("an unbound admin's write: %d %s, want versions", code, body)
	}
	for _, w := range []struct{ path, body string }{
		{"/v1/documents", `{"documents":[{"id":"acme-1","text":"mine"},{"id":"acme-2","text":"mine too"}]}`},
		{"/v1/documents", `{"documents":[{"id":"acme-1","text":"mine"}]}`}, // unchanged
		{"/v1/documents/delete", `{"ids":["acme-2"]}`},
	} {
		code, body := post(tenantAdmin, w.path, w.body)
		if code != http.StatusOK || strings.Contains(body, `"version"`) || !bytes.Contains([]byte(body), []byte(`"status":"ok"`)) {
			t.Errorf("a tenant's write to %s: %d %s, want ok without a version", w.path, code, body)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/documents/acme-1", nil)
	req.Header.Set("Authorization", "Bearer "+tenantAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"version"`) {
		t.Errorf("a tenant's single delete: %d %s, want ok without a version", resp.StatusCode, b)
	}
}
