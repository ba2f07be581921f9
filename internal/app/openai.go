package app

import (
	"fmt"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/spi"
)

// openOpenAIEmbedder is filled in once the OpenAI-compatible embedder lands.
func openOpenAIEmbedder(cfg *config.Config) (spi.Embedder, error) {
	return nil, fmt.Errorf("app: embedder.kind %q: %w", cfg.Embedder.Kind, errNotConfigured)
}
