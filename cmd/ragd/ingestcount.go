package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/ingest/chunk"
)

// counterChoice is how a folder run counts tokens.
type counterChoice struct {
	counter chunk.Counter
	// name identifies the counter in the state's fingerprint: a change
	// of tokenizer chunks every file again.
	name string
	// describe says what was chosen, for the first line of the run.
	describe string
	// budget is the most tokens of a chunk the server's model embeds
	// (its max_seq_length less [CLS], [SEP] and the document prefix); 0
	// when unknown.
	budget int
}

// budgetSlack is left out of a model's budget: the server embeds a chunk's
// title and text joined by a blank line, which the chunker counts apart,
// and the tokens at the seam may differ.
const budgetSlack = 2

var (
	identityModel  = regexp.MustCompile(`\bmodel="((?:[^"\\]|\\.)*)"`)
	identityMaxSeq = regexp.MustCompile(`\bmax_seq_length=(\d+)`)
	identityPrefix = regexp.MustCompile(`\bdocument_prefix="((?:[^"\\]|\\.)*)"`)
)

// chooseCounter picks the token counter of --tokenizer: approx; a model
// directory; or auto, which asks the server for its embedder and, when it
// is the built-in one and its model is in the local model cache (or is a
// directory here), counts with that model's tokenizer; else approx.
func chooseCounter(ctx context.Context, c *client.Client, flag string) (counterChoice, error) {
	switch flag {
	case "approx":
		return counterChoice{counter: chunk.Approx{}, name: "approx", describe: "tokens estimated (--tokenizer approx)"}, nil
	case "auto", "":
	default:
		ch, err := modelCounter(flag, 0, "")
		if err != nil {
			return ch, usageError{fmt.Errorf("--tokenizer %s: %w", flag, err)}
		}
		ch.describe = "tokens counted with the tokenizer of " + flag
		return ch, nil
	}
	approx := counterChoice{counter: chunk.Approx{}, name: "approx"}
	info, err := c.ServerInfo(ctx)
	if err != nil {
		return approx, fmt.Errorf("ingest: asking the server for its embedder (--tokenizer approx does not): %w", explain(err))
	}
	if info.Embedder == nil || info.Embedder.Kind != "builtin" {
		kind := "none"
		if info.Embedder != nil {
			kind = info.Embedder.Kind
		}
		approx.describe = fmt.Sprintf("tokens estimated: the server's embedder is %s, not the built-in one", kind)
		return approx, nil
	}
	id := info.Embedder.Identity
	maxSeq := 0
	if m := identityMaxSeq.FindStringSubmatch(id); m != nil {
		maxSeq, _ = strconv.Atoi(m[1])
	}
	prefix := ""
	if m := identityPrefix.FindStringSubmatch(id); m != nil {
		prefix, _ = strconv.Unquote(`"` + m[1] + `"`)
	}
	name := ""
	if m := identityModel.FindStringSubmatch(id); m != nil {
		name, _ = strconv.Unquote(`"` + m[1] + `"`)
	}
	dir, why := localModel(name)
	if dir != "" {
		ch, err := modelCounter(dir, maxSeq, prefix)
		if err == nil {
			ch.describe = fmt.Sprintf("tokens counted with the tokenizer of the server's model %s", name)
			return ch, nil
		}
		why = err.Error()
	}
	approx.describe = fmt.Sprintf("tokens estimated: the server's model %s is not here (%s)", name, why)
	if maxSeq > 0 {
		// Approx overestimates, so the model's budget is safe with it.
		approx.budget = max(1, maxSeq-2-chunk.Approx{}.Count(prefix, 0)-budgetSlack)
	}
	return approx, nil
}

// localModel finds a model by its name in the server's identity: in the
// local model cache, else as a directory on this machine.
func localModel(name string) (dir, why string) {
	if name == "" {
		return "", "the server's identity names no model"
	}
	cache, err := modelcache.New()
	if err == nil {
		if dir, err = cache.Path(name); err == nil {
			return dir, ""
		}
	}
	if filepath.IsAbs(name) {
		if st, serr := os.Stat(name); serr == nil && st.IsDir() {
			return name, ""
		}
	}
	if err == nil {
		err = errors.New("not found")
	}
	return "", err.Error()
}

// modelCounter counts with the tokenizer of the model in dir. maxSeq and
// prefix, from the server, override the directory's own.
func modelCounter(dir string, maxSeq int, prefix string) (counterChoice, error) {
	l, err := modelcache.ReadLayout(dir)
	if err != nil {
		return counterChoice{}, err
	}
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return counterChoice{}, err
	}
	sum := sha256.Sum256(tj)
	if maxSeq == 0 {
		maxSeq = l.MaxSeqLength
	}
	if maxSeq == 0 {
		maxSeq = l.Config.MaxPositionEmbeddings
	}
	if prefix == "" {
		prefix = l.DocumentPrompt
	}
	counter := chunk.WordPiece(l.Tokenizer)
	budget := 0
	if maxSeq > 0 {
		budget = max(1, maxSeq-2-counter.Count(prefix, 0)-budgetSlack)
	}
	return counterChoice{counter: counter, name: "wordpiece:" + hex.EncodeToString(sum[:8]), budget: budget}, nil
}

// validate checks the folder flags.
func (f *folderFlags) validate(cmd *cobra.Command) error {
	for _, name := range []string{"checkpoint", "no-resume"} {
		if cmd.Flags().Changed(name) {
			return usageError{fmt.Errorf("--%s is for a JSONL file; a folder of files remembers what it sent in --state", name)}
		}
	}
	if f.chunkTokens < 0 {
		return usageError{fmt.Errorf("--chunk-tokens must not be negative, got %d", f.chunkTokens)}
	}
	if f.overlap < 0 {
		return usageError{fmt.Errorf("--overlap-tokens must not be negative, got %d", f.overlap)}
	}
	if f.maxFileBytes < 1 {
		return usageError{fmt.Errorf("--max-file-bytes must be positive, got %d", f.maxFileBytes)}
	}
	if f.maxPDFPages < 1 {
		return usageError{fmt.Errorf("--max-pdf-pages must be positive, got %d", f.maxPDFPages)}
	}
	if f.pdfTimeout <= 0 {
		return usageError{fmt.Errorf("--pdf-timeout must be positive, got %s", f.pdfTimeout)}
	}
	return nil
}
