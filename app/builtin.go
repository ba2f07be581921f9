package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/builtin"
)

// openBuiltin opens the built-in model (modelDir finds it, pulling it when
// needed). When the model cannot be had and o.Fallback is set, it returns
// the hashing embedder with a Fallback instead. A configured dimension
// other than the model's is a configuration error, never a fallback.
func openBuiltin(ctx context.Context, cfg *config.Config, o EmbedderOptions) (*Embedders, error) {
	e := cfg.Embedder
	dir, name, err := modelDir(ctx, cfg, o)
	var m *builtin.Model
	if err == nil {
		m, err = builtin.Open(builtin.Config{Dir: dir, Name: name, QueryPrefix: e.QueryPrefix, DocumentPrefix: e.DocumentPrefix,
			MaxSeqLength: e.MaxSeqLength, Threads: e.Threads, Precision: e.Precision})
		if err != nil {
			fix, command := fixFor(name), commandFor(name)
			if e.ModelDir != "" {
				fix = "point embedder.model_dir at a sentence-transformers model directory, or leave it out to use the model cache"
				command = "a fixed embedder.model_dir"
			}
			err = &modelError{model: name, reason: "files cannot be loaded", fix: fix, command: command, details: err.Error(), err: err}
		}
	}
	if err != nil {
		var me *modelError
		if !o.Fallback || !errors.As(err, &me) {
			return nil, err
		}
		return hashingFallback(cfg, me, o.Logger)
	}
	if e.Dimension != 0 && e.Dimension != m.Dimension() {
		m.Close()
		return nil, fmt.Errorf("app: embedder.dimension is %d but model %s makes %d-dimensional vectors: leave embedder.dimension out (the model decides) or set %d",
			e.Dimension, name, m.Dimension(), m.Dimension())
	}
	// One query through the model before the first user's: it measures the
	// service time the query guard starts from and warms the encoder.
	if _, err := m.Queries().Embed(ctx, []string{probeText}); err != nil {
		m.Close()
		return nil, fmt.Errorf("app: built-in embedder: %w", err)
	}
	o.Logger.Info("app: built-in embedder ready", slog.String("model", name), slog.String("dir", dir),
		slog.Int("dimension", m.Dimension()), slog.Int("max_seq_length", m.MaxSeqLength()), slog.String("precision", m.Precision()),
		slog.Duration("query_service_time", m.QueryServiceTime()))
	return &Embedders{Document: m.Documents(), Query: m.Queries(), Identity: m.Identity(), CPU: true,
		ServiceTime: m.QueryServiceTime, Metrics: builtin.NewCollector(m), closers: []io.Closer{m}}, nil
}
