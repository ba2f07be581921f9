package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/api"
)

type openAPIOp struct {
	OperationID string                     `json:"operationId"`
	Role        string                     `json:"x-ragd-role"`
	Public      string                     `json:"x-ragd-public"`
	Global      bool                       `json:"x-ragd-global"`
	RequestBody map[string]any             `json:"requestBody"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

func loadOpenAPI(t *testing.T, h http.Handler) (map[string]any, map[string]map[string]openAPIOp) {
	t.Helper()
	rec := serve(t, h, http.MethodGet, "/openapi.json", nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	var typed struct {
		Paths map[string]map[string]openAPIOp `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &typed); err != nil {
		t.Fatal(err)
	}
	return raw, typed.Paths
}

// openAPIPath turns an echo template into OpenAPI form.
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestOpenAPIMatchesRoutes walks echo's routes and the document both ways.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t, nil)
	raw, paths := loadOpenAPI(t, e.h)
	if v, _ := raw["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Fatalf("openapi version %q", v)
	}
	if v := raw["info"].(map[string]any)["version"]; v != "test" {
		t.Fatalf("info.version %v, want the server's version", v)
	}

	var routes []string
	for _, r := range e.h.(*echo.Echo).Routes() {
		if r.Path == "/ui" || strings.HasPrefix(r.Path, "/ui/") {
			continue // the console's static files are not API
		}
		if r.Path == api.PathMCP {
			continue // JSON-RPC, described by the MCP specification (docs/mcp.md)
		}
		routes = append(routes, r.Method+" "+openAPIPath(r.Path))
	}
	var documented []string
	for p, ops := range paths {
		for m := range ops {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(routes)
	slices.Sort(documented)
	if len(routes) < 12 {
		t.Fatalf("only %d routes registered: %v", len(routes), routes)
	}
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in the OpenAPI document", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("the OpenAPI document describes %s, which is not a route", d)
		}
	}
}

func TestOpenAPIReferencesResolve(t *testing.T) {
	e := newEnv(t, nil)
	raw, paths := loadOpenAPI(t, e.h)
	var walk func(v any)
	n := 0
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				n++
				target := any(raw)
				for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, ok := target.(map[string]any)
					if !ok || m[seg] == nil {
						t.Errorf("unresolved $ref %s", ref)
						return
					}
					target = m[seg]
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(raw)
	if n < 20 {
		t.Fatalf("only %d $refs found", n)
	}
	for p, ops := range paths {
		for m, op := range ops {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", m, p)
			}
			has2xx := false
			for code := range op.Responses {
				has2xx = has2xx || strings.HasPrefix(code, "2")
			}
			if !has2xx {
				t.Errorf("%s %s documents no success response", m, p)
			}
			if (m == "post") != (op.RequestBody != nil) && !strings.HasPrefix(p, "/v1/status/") {
				t.Errorf("%s %s: request body documented=%v", m, p, op.RequestBody != nil)
			}
		}
	}
}

// TestOpenAPIRolesMatchBehaviour checks x-ragd-role and x-ragd-public
// against what the server actually does with each kind of key.
func TestOpenAPIRolesMatchBehaviour(t *testing.T) {
	closed := newEnv(t, func(c *api.Config) { c.Auth.Public = nil })
	open := newEnv(t, nil) // every operational endpoint public
	_, paths := loadOpenAPI(t, open.h)
	for p, ops := range paths {
		for m, op := range ops {
			method := strings.ToUpper(m)
			url := strings.NewReplacer("{id}", "some-id", "{name}", "vector").Replace(p)
			var body any
			if op.RequestBody != nil {
				body = `{}`
			}
			name := method + " " + p
			// Nothing public: every route needs a key.
			if rec := serve(t, closed.h, method, url, body); rec.Code != http.StatusUnauthorized {
				t.Errorf("%s without a key: %d, want 401", name, rec.Code)
			}
			noKey := serve(t, open.h, method, url, body)
			withQuery := serve(t, closed.h, method, url, body, "Authorization", "Bearer "+queryKey)
			switch op.Role {
			case "admin":
				if withQuery.Code != http.StatusForbidden {
					t.Errorf("%s documented admin-only, query key got %d", name, withQuery.Code)
				}
			case "query", "any":
				if withQuery.Code == http.StatusForbidden || withQuery.Code == http.StatusUnauthorized {
					t.Errorf("%s documented %s, query key got %d", name, op.Role, withQuery.Code)
				}
			default:
				t.Errorf("%s: unknown x-ragd-role %q", name, op.Role)
			}
			withTenantAdmin := serve(t, closed.h, method, url, body, "Authorization", "Bearer "+acmeAdminKey)
			if op.Global != (withTenantAdmin.Code == http.StatusForbidden) {
				t.Errorf("%s documented global=%v, a tenant-bound admin key got %d", name, op.Global, withTenantAdmin.Code)
			}
			if op.Public != "" && noKey.Code == http.StatusUnauthorized {
				t.Errorf("%s documented public (%s) but needs a key when listed", name, op.Public)
			}
			if op.Public == "" && noKey.Code != http.StatusUnauthorized {
				t.Errorf("%s not documented public but answers %d without a key", name, noKey.Code)
			}
		}
	}
}

func TestOpenAPIExportedDocumentIsValidJSON(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["paths"] == nil || doc["components"] == nil {
		t.Fatal("document without paths or components")
	}
}
