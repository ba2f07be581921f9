package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ragd/ragd/config"

	"github.com/ragd/ragd/embedder/openai"
)

// openOpenAIEmbedder builds the OpenAI-compatible embedder and probes it
// once. A dimension mismatch is a start-up error naming both numbers; an
// unreachable server is only logged, because ragd must start and answer
// from its keyword and graph sources while the embedder is down (its breaker
// then keeps the vector source out of queries until the server is back).
func openOpenAIEmbedder(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*openai.Embedder, error) {
	c := cfg.Embedder
	e, err := openai.New(openai.Config{
		BaseURL:     c.BaseURL,
		Model:       c.Model,
		Dimension:   c.Dimension,
		APIKeyEnv:   c.APIKeyEnv,
		BatchSize:   c.BatchSize,
		QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix,
		QueryInputType: c.QueryInputType, DocumentInputType: c.DocumentInputType,
		Timeout:     config.Millis(c.TimeoutMS),
		MaxAttempts: c.MaxRetries + 1,
	})
	if err != nil {
		return nil, fmt.Errorf("app: embedder (openai): %w", err)
	}
	if err := e.Probe(ctx); err != nil {
		if errors.Is(err, openai.ErrDimensionMismatch) {
			return nil, fmt.Errorf("app: embedder (openai) at %s: %w", e.Endpoint(), err)
		}
		logger.Warn("app: embedder unreachable at start; continuing without it until it answers",
			slog.String("endpoint", e.Endpoint()), slog.String("error", err.Error()))
	}
	return e, nil
}
