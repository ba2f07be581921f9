package wordpiece

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrUnsupported matches (errors.Is) every error about a tokenizer.json
// that uses something this package does not implement.
var ErrUnsupported = errors.New("wordpiece: unsupported tokenizer.json")

// unsupportedError says what is not supported; it is ErrUnsupported.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }

func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// fileJSON is the part of a Hugging Face tokenizer.json this package reads.
// truncation, padding (except its pad_id) and decoder are ignored: the
// caller chooses the maximum length, and ids are not padded nor decoded.
type fileJSON struct {
	Version       string          `json:"version"`
	AddedTokens   []addedJSON     `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         json.RawMessage `json:"model"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Padding       *struct {
		PadID int32 `json:"pad_id"`
	} `json:"padding"`
}

type addedJSON struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type typed struct {
	Type string `json:"type"`
}

type bertNormalizerJSON struct {
	CleanText          bool  `json:"clean_text"`
	HandleChineseChars bool  `json:"handle_chinese_chars"`
	StripAccents       *bool `json:"strip_accents"`
	Lowercase          bool  `json:"lowercase"`
}

type wordPieceJSON struct {
	UnkToken                string           `json:"unk_token"`
	ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
	MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
	Vocab                   map[string]int32 `json:"vocab"`
}

type templateJSON struct {
	Single        []map[string]struct{ ID string } `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
}

// bertProcessingJSON is BertProcessing and RobertaProcessing: a single
// sequence becomes cls, the sequence, sep.
type bertProcessingJSON struct {
	Sep []json.RawMessage `json:"sep"`
	Cls []json.RawMessage `json:"cls"`
}

// Load reads a Hugging Face tokenizer.json of the BERT family: a WordPiece
// model with the BertNormalizer (or none), the BertPreTokenizer and a
// TemplateProcessing, BertProcessing or RobertaProcessing post-processor
// (or none). Anything else is refused with an error that matches
// ErrUnsupported and names the file and the part.
func Load(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: %w", err)
	}
	defer f.Close()
	t, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: %s: %w", path, err)
	}
	return t, nil
}

// Read is Load for a tokenizer.json read from r.
func Read(r io.Reader) (*Tokenizer, error) {
	t, err := read(r)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: %w", err)
	}
	return t, nil
}

func unsupported(format string, args ...any) error {
	return &unsupportedError{msg: fmt.Sprintf(format, args...)}
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func typeOf(raw json.RawMessage, part string) (string, error) {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("%s: %w", part, err)
	}
	return t.Type, nil
}

func read(r io.Reader) (*Tokenizer, error) {
	var f fileJSON
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if f.Version != "1.0" {
		return nil, unsupported("version %q is not supported (want \"1.0\")", f.Version)
	}
	t := &Tokenizer{chunkBytes: 2048}
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if isNull(f.PreTokenizer) {
		return nil, unsupported("no pre_tokenizer: want BertPreTokenizer")
	}
	if typ, err := typeOf(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	} else if typ != "BertPreTokenizer" {
		return nil, unsupported("pre_tokenizer type %q is not supported (want BertPreTokenizer)", typ)
	}
	if err := t.parseModel(f.Model); err != nil {
		return nil, err
	}
	if err := t.parseAddedTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if t.prefix, t.suffix, err = t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if f.Padding != nil {
		t.padID = f.Padding.PadID
	} else if id, ok := t.tokenID("[PAD]"); ok {
		t.padID = id
	}
	t.pool = sync.Pool{New: func() any { return new(scratch) }}
	return t, nil
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return normalizer{}, nil
	}
	typ, err := typeOf(raw, "normalizer")
	if err != nil {
		return normalizer{}, err
	}
	if typ != "BertNormalizer" {
		return normalizer{}, unsupported("normalizer type %q is not supported (want BertNormalizer or none)", typ)
	}
	var b bertNormalizerJSON
	if err := json.Unmarshal(raw, &b); err != nil {
		return normalizer{}, fmt.Errorf("normalizer: %w", err)
	}
	n := normalizer{clean: b.CleanText, cjk: b.HandleChineseChars, lower: b.Lowercase, strip: b.Lowercase}
	if b.StripAccents != nil { // null: strip accents when lower-casing
		n.strip = *b.StripAccents
	}
	return n, nil
}

func (t *Tokenizer) parseModel(raw json.RawMessage) error {
	if isNull(raw) {
		return unsupported("no model: want WordPiece")
	}
	typ, err := typeOf(raw, "model")
	if err != nil {
		return err
	}
	if typ != "WordPiece" {
		return unsupported("model type %q is not supported (want WordPiece)", typ)
	}
	var m wordPieceJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if len(m.Vocab) == 0 {
		return fmt.Errorf("model: empty vocab")
	}
	unk, ok := m.Vocab[m.UnkToken]
	if !ok {
		return fmt.Errorf("model: unk_token %q is not in the vocab", m.UnkToken)
	}
	if m.MaxInputCharsPerWord <= 0 {
		return fmt.Errorf("model: max_input_chars_per_word %d", m.MaxInputCharsPerWord)
	}
	t.vocab = m.Vocab
	t.unkID = unk
	t.maxChars = m.MaxInputCharsPerWord
	t.cont = make(map[string]int32)
	p := m.ContinuingSubwordPrefix
	for tok, id := range m.Vocab {
		if id < 0 {
			return fmt.Errorf("model: vocab id %d of %q", id, tok)
		}
		t.maxWordBytes = max(t.maxWordBytes, len(tok))
		if len(tok) >= len(p) && tok[:len(p)] == p {
			t.cont[tok[len(p):]] = id
			t.maxContBytes = max(t.maxContBytes, len(tok)-len(p))
		}
		t.vocabSize = max(t.vocabSize, int(id)+1)
	}
	return nil
}

// parseAddedTokens gives each added token the id the reference gives it:
// its vocab id when it is in the vocab, otherwise the next id after the
// vocab, in file order (the ids written in the file are not used).
func (t *Tokenizer) parseAddedTokens(tokens []addedJSON) error {
	next := int32(len(t.vocab))
	t.added = make(map[string]int32)
	var raw, normed []addedToken
	for _, a := range tokens {
		if a.Content == "" {
			continue
		}
		if a.SingleWord {
			return unsupported("added token %q: single_word is not supported", a.Content)
		}
		// lstrip and rstrip widen a match over the whitespace beside it;
		// the pre-tokenizer drops that whitespace anyway, so the ids are the
		// same with or without them.
		id, ok := t.tokenID(a.Content)
		if !ok {
			id = next
			next++
		}
		t.added[a.Content] = id
		t.vocabSize = max(t.vocabSize, int(id)+1)
		if a.Normalized {
			sc := new(scratch)
			normed = append(normed, addedToken{content: string(t.norm.normalize(a.Content, sc)), id: id})
		} else {
			raw = append(raw, addedToken{content: a.Content, id: id})
		}
	}
	t.rawAdded = newMatcher(raw)
	t.normAdded = newMatcher(normed)
	return nil
}

func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) (prefix, suffix []int32, err error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	typ, err := typeOf(raw, "post_processor")
	if err != nil {
		return nil, nil, err
	}
	switch typ {
	case "TemplateProcessing":
		var tp templateJSON
		if err := json.Unmarshal(raw, &tp); err != nil {
			return nil, nil, fmt.Errorf("post_processor: %w", err)
		}
		seen := false
		for _, piece := range tp.Single {
			if len(piece) != 1 {
				return nil, nil, fmt.Errorf("post_processor: template piece %v", piece)
			}
			if s, ok := piece["Sequence"]; ok {
				if seen || s.ID != "A" {
					return nil, nil, unsupported("post_processor: a single-sequence template with sequence %q is not supported", s.ID)
				}
				seen = true
				continue
			}
			st, ok := piece["SpecialToken"]
			if !ok {
				return nil, nil, unsupported("post_processor: template piece %v is not supported", piece)
			}
			sp, ok := tp.SpecialTokens[st.ID]
			if !ok {
				return nil, nil, fmt.Errorf("post_processor: special token %q has no ids", st.ID)
			}
			if seen {
				suffix = append(suffix, sp.IDs...)
			} else {
				prefix = append(prefix, sp.IDs...)
			}
		}
		if !seen {
			return nil, nil, unsupported("post_processor: a single-sequence template without sequence A is not supported")
		}
		return prefix, suffix, nil
	case "BertProcessing", "RobertaProcessing":
		var bp bertProcessingJSON
		if err := json.Unmarshal(raw, &bp); err != nil {
			return nil, nil, fmt.Errorf("post_processor: %w", err)
		}
		cls, err1 := pairID(bp.Cls)
		sep, err2 := pairID(bp.Sep)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("post_processor: %w", err)
		}
		return []int32{cls}, []int32{sep}, nil
	default:
		return nil, nil, unsupported("post_processor type %q is not supported (want TemplateProcessing, BertProcessing, RobertaProcessing or none)", typ)
	}
}

// pairID reads the id of a ["[CLS]", 101] pair.
func pairID(pair []json.RawMessage) (int32, error) {
	var id int32
	if len(pair) != 2 {
		return 0, fmt.Errorf("want a [token, id] pair, got %d elements", len(pair))
	}
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, err
	}
	return id, nil
}
