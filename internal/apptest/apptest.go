// Package apptest starts a real ragd — the wiring of app with
// embedded stores in a temporary directory — serving on loopback, for tests
// of the things that talk to it over HTTP (the CLI, the Go client, MCP).
package apptest

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
)

// Keys of a server started with WithAuth.
const (
	AdminKey = "admin-key-0123456789"
	QueryKey = "query-key-0123456789"
	// TenantKey is a query key bound to tenant Tenant.
	TenantKey = "tenant-key-0123456789"
	Tenant    = "acme"
)

// Ragd is a real ragd serving on loopback until the test ends.
type Ragd struct {
	URL string
	App *app.App
}

// Start wires ragd from config.Default with its data in a temporary
// directory, auth off and the graph source and expansion on (so reports
// cover every source), lets configure adjust the config, and serves it
// until the test ends.
func Start(tb testing.TB, configure func(*config.Config)) *Ragd {
	tb.Helper()
	cfg := config.Default()
	cfg.DataDir = tb.TempDir()
	cfg.Embedder.Kind = config.KindHashing // exact and needs no model
	off := false
	cfg.Auth.Enabled = &off
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Server.ShutdownGraceS = 1
	on, one := true, 1.0
	cfg.Retriever.Sources = map[string]config.SourceConfig{"graph": {Weight: &one}}
	cfg.Retriever.Expand.Enabled = &on
	if configure != nil {
		configure(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := app.New(ctx, &cfg, app.Options{Logger: slog.New(slog.DiscardHandler), Version: "test"})
	if err != nil {
		cancel()
		tb.Fatalf("apptest: app.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		inst.Close()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- inst.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("apptest: Serve: %v", err)
		}
		if err := inst.Close(); err != nil {
			tb.Errorf("apptest: Close: %v", err)
		}
	})
	return &Ragd{URL: "http://" + ln.Addr().String(), App: inst}
}

// WithAuth turns auth on with an admin key, a query key and a query key
// bound to Tenant. /metrics is not public (no server with a key bound to
// a tenant serves it to anyone): read it with the admin or query key.
func WithAuth(cfg *config.Config) {
	on := true
	cfg.Auth.Enabled = &on
	cfg.Auth.Keys = []config.KeyConfig{
		{Name: "admin", Key: AdminKey, Role: config.RoleAdmin},
		{Name: "reader", Key: QueryKey, Role: config.RoleQuery},
		{Name: "acme-reader", Key: TenantKey, Role: config.RoleQuery, Tenant: Tenant},
	}
	cfg.Auth.Public = []string{"health", "ready", "openapi"}
}
