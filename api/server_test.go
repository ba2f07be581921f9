package api_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/spi"
)

func TestConfigValidate(t *testing.T) {
	var nilSearcher *fakeSearcher
	cases := []struct {
		name   string
		mutate func(*api.Config)
		want   string
	}{
		{"no searcher", func(c *api.Config) { c.Searcher = nil }, "Searcher"},
		{"typed nil searcher", func(c *api.Config) { c.Searcher = nilSearcher }, "Searcher"},
		{"no writer", func(c *api.Config) { c.Writer = nil }, "Writer"},
		{"no documents", func(c *api.Config) { c.Documents = nil }, "Documents"},
		{"no retrieval health", func(c *api.Config) { c.Health = map[string]spi.HealthChecker{"embedder": &fakeHealth{}} }, "retrieval source"},
		{"nil checker", func(c *api.Config) { c.Health["graph"] = nil }, `Health["graph"]`},
		{"negative health timeout", func(c *api.Config) { c.HealthTimeout = -1 }, "HealthTimeout"},
		{"no body limit", func(c *api.Config) { c.Server.BodyLimitBytes = 0 }, "BodyLimitBytes"},
		{"no request timeout", func(c *api.Config) { c.Server.RequestTimeoutS = 0 }, "RequestTimeoutS"},
		{"no in-flight limit", func(c *api.Config) { c.Server.MaxInFlight = 0 }, "MaxInFlight"},
		{"negative read timeout", func(c *api.Config) { c.Server.ReadTimeoutS = -1 }, "ReadTimeoutS"},
		{"no max docs", func(c *api.Config) { c.Ingest.MaxDocsPerRequest = 0 }, "MaxDocsPerRequest"},
		{"no max ids", func(c *api.Config) { c.Ingest.MaxIDsPerRequest = 0 }, "MaxIDsPerRequest"},
		{"no max text", func(c *api.Config) { c.Ingest.MaxTextBytes = 0 }, "MaxTextBytes"},
		{"auth on without keys", func(c *api.Config) { c.Auth.Keys = nil }, "no keys"},
		{"empty key", func(c *api.Config) { c.Auth.Keys[0].Key = "" }, "empty key"},
		{"duplicate key", func(c *api.Config) { c.Auth.Keys[1].Key = c.Auth.Keys[0].Key }, "duplicates"},
		{"bad role", func(c *api.Config) { c.Auth.Keys[0].Role = "root" }, "role"},
		{"bad tenant", func(c *api.Config) { c.Auth.Keys[2].Tenant = "acme\x00" }, "tenant"},
		{"unknown public endpoint", func(c *api.Config) { c.Auth.Public = []string{"health", "everything"} }, "everything"},
		{"registerer without gatherer", func(c *api.Config) {
			c.Registerer = prometheus.WrapRegistererWithPrefix("x_", prometheus.NewRegistry())
		}, "Gatherer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			cfg := e.cfg
			cfg.Health = map[string]spi.HealthChecker{"vector": &fakeHealth{}, "graph": &fakeHealth{}}
			cfg.Auth.Keys = append([]config.KeyConfig(nil), cfg.Auth.Keys...)
			tc.mutate(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, api.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrConfig mentioning %q", err, tc.want)
			}
			if _, err := api.New(cfg); !errors.Is(err, api.ErrConfig) {
				t.Fatalf("New = %v, want ErrConfig", err)
			}
		})
	}
	if err := newEnv(t, nil).cfg.Validate(); err != nil {
		t.Fatalf("the test config is invalid: %v", err)
	}
}

func TestHTTPServerSettings(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Server.Listen = "127.0.0.1:9999"
		c.Server.ReadHeaderTimeoutS, c.Server.ReadTimeoutS, c.Server.WriteTimeoutS, c.Server.IdleTimeoutS = 2, 3, 7, 11
	})
	srv := e.server.HTTPServer()
	if srv.Addr != "127.0.0.1:9999" || srv.ReadTimeout != 3*time.Second || srv.ReadHeaderTimeout != 2*time.Second ||
		srv.WriteTimeout != 7*time.Second || srv.IdleTimeout != 11*time.Second || srv.Handler == nil || srv.ErrorLog == nil {
		t.Fatalf("server %+v", srv)
	}
}

// TestOverTCPEndlessBody runs the real server on loopback: a client that
// streams a body without end gets 413 promptly instead of hanging the
// handler, and the server shuts down cleanly.
func TestOverTCPEndlessBody(t *testing.T) {
	e := newEnv(t, nil)
	srv := e.server.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	url := "http://" + ln.Addr().String()

	req, _ := http.NewRequest(http.MethodPost, url+"/v1/query", io.MultiReader(strings.NewReader(`{"text":"`), endless{}))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		// The server may close the connection while the client is still
		// writing; what matters is that it did not hang.
		if time.Since(start) > 8*time.Second {
			t.Fatalf("endless body: %v after %v", err, time.Since(start))
		}
		t.Logf("endless body: transport error %v (connection closed by the server)", err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), api.CodeBodyTooLarge) {
			t.Fatalf("endless body: %d %s", resp.StatusCode, body)
		}
	}

	// A normal request still works.
	req, _ = http.NewRequest(http.MethodPost, url+"/v1/query", strings.NewReader(`{"text":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("query over TCP: %d", resp.StatusCode)
	}
}
