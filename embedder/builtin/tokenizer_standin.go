package builtin

// A stand-in for package wordpiece until it is merged: lower-cases, splits
// on white space and ASCII punctuation, and matches WordPiece greedily.
// TODO(enc): replace with wordpiece.Load.

import (
	"encoding/json"
	"os"
	"strings"
	"unicode"
)

type standin struct {
	vocab         map[string]int32
	cls, sep, unk int32
}

func loadTokenizer(path string) (tokenizer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tj struct {
		Model struct {
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, err
	}
	v := tj.Model.Vocab
	return &standin{vocab: v, cls: v["[CLS]"], sep: v["[SEP]"], unk: v["[UNK]"]}, nil
}

func (s *standin) Encode(dst []int32, text string, maxLen int) []int32 {
	start := len(dst)
	dst = append(dst, s.cls)
	var words []string
	for _, f := range strings.Fields(strings.ToLower(text)) {
		cur := ""
		for _, r := range f {
			if unicode.IsPunct(r) || unicode.IsSymbol(r) {
				if cur != "" {
					words = append(words, cur)
				}
				words, cur = append(words, string(r)), ""
				continue
			}
			cur += string(r)
		}
		if cur != "" {
			words = append(words, cur)
		}
	}
	for _, w := range words {
		var pieces []int32
		for i := 0; i < len(w); {
			j := len(w)
			for ; j > i; j-- {
				p := w[i:j]
				if i > 0 {
					p = "##" + p
				}
				if id, ok := s.vocab[p]; ok {
					pieces = append(pieces, id)
					break
				}
			}
			if j == i {
				pieces = []int32{s.unk}
				break
			}
			i = j
		}
		dst = append(dst, pieces...)
	}
	if len(dst)-start > maxLen-1 {
		dst = dst[:start+maxLen-1]
	}
	return append(dst, s.sep)
}
