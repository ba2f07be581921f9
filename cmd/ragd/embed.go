package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	ragdapp "github.com/ragd/ragd/app"
	"github.com/ragd/ragd/spi"
)

// maxEmbedLine bounds one input line (one text).
const maxEmbedLine = 16 << 20

func newEmbedCmd(a *app) *cobra.Command {
	var (
		cfgPath   *string
		inputType string
		batch     int
		logLevel  string
	)
	cmd := &cobra.Command{
		Use:   "embed",
		Short: "Embed texts from stdin with the configured embedder",
		Long: "embed reads one text per line from stdin and writes, for each, one line to\n" +
			"stdout: the configured embedder's vector as a JSON array, in input order. It\n" +
			"works offline with every embedder kind rag.yaml can name and opens no store,\n" +
			"so it runs beside a server on the same data directory.\n\n" +
			"--input-type query embeds the texts as queries, document (the default) as\n" +
			"documents: models that mark them (e5's \"query: \"/\"passage: \") embed the two\n" +
			"differently, and ragd embeds stored documents and queries that way. Use it to\n" +
			"check what the embedder makes of a text, or to precompute vectors for\n" +
			"documents (the \"vector\" field of an ingest line).\n\n" +
			"A line is one text: an empty line is an empty text; a trailing \\r is dropped.\n" +
			"Lines must be UTF-8.",
		Example: "  echo 'boundary layer transition' | ragd embed --input-type query\n" +
			"  ragd embed -c rag.yaml < texts.txt > vectors.jsonl",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if inputType != "query" && inputType != "document" {
				return usageError{fmt.Errorf("--input-type must be query or document, got %q", inputType)}
			}
			if batch < 1 {
				return usageError{fmt.Errorf("--batch must be at least 1, got %d", batch)}
			}
			cfg, err := loadConfig(cmd, *cfgPath, true)
			if err != nil {
				return err
			}
			embs, err := ragdapp.OpenEmbedders(cmd.Context(), cfg, ragdapp.EmbedderOptions{Logger: ragdapp.NewLogger(a.stderr, logLevel), PullProgress: a.rawStderr})
			if err != nil {
				return err
			}
			defer embs.Close()
			e := embs.Document
			if inputType == "query" {
				e = embs.Query
			}
			return embedLines(cmd.Context(), e, cmd.InOrStdin(), a.stdout, batch)
		},
	}
	cfgPath = addConfigFlag(cmd)
	cmd.Flags().StringVar(&inputType, "input-type", "document", "embed the texts as query or document")
	cmd.Flags().IntVar(&batch, "batch", 64, "texts per embedder call")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level for the embedder")
	return cmd
}

// embedLines embeds r's lines in batches and writes one JSON array per
// line to w, flushing after each batch.
func embedLines(ctx context.Context, e spi.Embedder, r io.Reader, w io.Writer, batch int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxEmbedLine)
	out := bufio.NewWriter(w)
	var texts []string
	first, line := 1, 0
	flush := func() error {
		if len(texts) == 0 {
			return nil
		}
		vecs, err := e.Embed(ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		if err != nil {
			return fmt.Errorf("embed: lines %d-%d: %w", first, line, err)
		}
		for _, v := range vecs {
			b, err := json.Marshal(v)
			if err != nil { // NaN or Inf: not JSON
				return fmt.Errorf("embed: lines %d-%d: the embedder returned an unusable vector: %w", first, line, err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		texts, first = texts[:0], line+1
		return out.Flush()
	}
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if !utf8.ValidString(text) {
			return fmt.Errorf("embed: line %d: not valid UTF-8", line)
		}
		texts = append(texts, text)
		if len(texts) >= batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("embed: line %d: longer than %d MiB", line+1, maxEmbedLine>>20)
		}
		return fmt.Errorf("embed: reading stdin: %w", err)
	}
	return flush()
}
