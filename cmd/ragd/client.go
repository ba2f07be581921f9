package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/client"
)

// Environment variables read by the commands that talk to a running
// server. envServer is the name the clients' examples read too;
// envServerOld, the CLI's earlier name, is still read when it is unset.
const (
	envServer    = "RAGD_URL"
	envServerOld = "RAGD_SERVER"
	envAPIKey    = "RAGD_API_KEY"
)

const (
	defaultServer  = client.DefaultBaseURL
	defaultTimeout = 60 * time.Second
)

// clientFlags are the connection flags of ingest, query and status.
type clientFlags struct {
	server  string
	apiKey  string
	timeout time.Duration
}

// addClientFlags registers --server, --api-key and --timeout on cmd.
func addClientFlags(cmd *cobra.Command) *clientFlags {
	f := &clientFlags{}
	cmd.Flags().StringVar(&f.server, "server", "", "base URL of the ragd server (default $"+envServer+", else "+defaultServer+")")
	cmd.Flags().StringVar(&f.apiKey, "api-key", "", "API key sent as a bearer token (default $"+envAPIKey+"; prefer the variable, flags show in ps)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultTimeout, "timeout of one HTTP request")
	return f
}

// client returns the API client the flags describe, with no retries (the
// commands that want them, ingest, set their own); tune adjusts its
// config. Flags win over the environment.
func (f *clientFlags) client(tune func(*client.Config)) (*client.Client, error) {
	server := f.server
	if server == "" {
		server = os.Getenv(envServer)
	}
	if server == "" {
		server = os.Getenv(envServerOld)
	}
	if server == "" {
		server = defaultServer
	}
	if f.timeout <= 0 {
		return nil, usageError{fmt.Errorf("--timeout must be positive, got %s", f.timeout)}
	}
	key := f.apiKey
	if key == "" {
		key = os.Getenv(envAPIKey)
	}
	cfg := client.Config{
		BaseURL:    server,
		APIKey:     key,
		Timeout:    f.timeout,
		MaxRetries: -1,
		UserAgent:  "ragd-cli/" + version,
	}
	if tune != nil {
		tune(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, usageError{fmt.Errorf("--server %q is not an http(s) URL such as %s", server, defaultServer)}
	}
	return c, nil
}

// explain adds what the user can do about a failed call to its message:
// which flag or variable to set.
func explain(err error) error {
	if err == nil {
		return nil
	}
	var te *client.TransportError
	if errors.As(err, &te) {
		var ne net.Error
		switch {
		case errors.As(te.Err, &ne) && ne.Timeout():
			return hinted{err, "raise --timeout for large batches"}
		case client.ConnRefused(te):
			return hinted{err, "set --server or $" + envServer}
		}
		return err
	}
	var e *client.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.StatusCode {
	case http.StatusUnauthorized:
		return hinted{err, "pass a valid key with --api-key or $" + envAPIKey}
	case http.StatusForbidden:
		if e.Detail.Code == api.CodeForbidden {
			return hinted{err, "this API key's role may not do this (writes need an admin key)"}
		}
	case http.StatusNotFound:
		if e.Detail.Code == "" || e.Detail.Message == "no such route" {
			return hinted{err, "is --server a ragd server?"}
		}
	}
	return err
}

// hinted is an error with advice appended to its message.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() + "; " + h.hint }
func (h hinted) Unwrap() error { return h.err }

// truncateRunes cuts s to at most n runes, marking the cut with "…".
func truncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
