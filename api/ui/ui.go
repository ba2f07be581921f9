// Package ui holds ragd's operator console: a static page, one stylesheet
// and one script, embedded in the binary so the console works air-gapped
// (no CDN, no web fonts, no third-party code). Everything it shows comes
// from the HTTP API, called by the page with the key the user types in.
//
// The console polls GET /v1/status/server, /v1/status/breakers,
// /v1/status/health, /v1/status/sources and /v1/status/events every two
// seconds and /v1/status/history every ten; it runs queries through POST
// /v1/query with explain on, and forces and holds breakers through the
// admin endpoints. See docs/operations.md.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var assets embed.FS

// securityHeaders lock the page to its own origin: scripts, styles and
// fetches from ragd only, no framing, no referrer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-cache",
}

// Handler serves the console's files at the root of the path it is given
// ("/" is the page); mount it under a prefix with http.StripPrefix.
func Handler() http.Handler {
	static, err := fs.Sub(assets, "static")
	if err != nil {
		panic("ui: embedded assets: " + err.Error()) // the embed directive guarantees the directory
	}
	files := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		files.ServeHTTP(w, r)
	})
}
