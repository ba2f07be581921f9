package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// openAPISpec is the OpenAPI 3.0 document of every route in routes. A test
// checks that the two agree (paths, methods, roles and public flags).
//
//go:embed openapi.json
var openAPISpec []byte

// OpenAPI returns the embedded OpenAPI document (with info.version "dev").
func OpenAPI() []byte { return append([]byte(nil), openAPISpec...) }

// openAPIDocument returns the document with info.version set to version.
func openAPIDocument(version string) ([]byte, error) {
	if version == "" {
		return OpenAPI(), nil
	}
	var doc map[string]any
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		return nil, fmt.Errorf("api: openapi.json: %w", err)
	}
	info, ok := doc["info"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("api: openapi.json: no info object")
	}
	info["version"] = version
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("api: openapi.json: %w", err)
	}
	return b, nil
}
