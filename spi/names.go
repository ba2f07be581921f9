package spi

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxNameBytes is the default bound of a document id and of a tenant name.
const MaxNameBytes = 256

// ValidateName checks a name a write or a query introduces: a document id
// or link of an upsert, a document's tenant, a query's tenant, an API
// key's tenant. The error wraps ErrInvalidQuery; its message names the
// offending code point and byte offset, never the name.
//
// Names are document ids and tenant names. Every store compares them byte
// for byte, so the rule for a new name keeps two names that look alike
// from being two different names, and keeps names safe to show in a log,
// a terminal or a console:
//
//   - 1 to maxBytes bytes of valid UTF-8;
//   - no control characters (Unicode Cc, NUL included), no line or
//     paragraph separators (Zl, Zp), and no space but U+0020 (Zs: U+00A0,
//     U+3000, ... look like it);
//   - nothing invisible: no format characters (Cf: zero-width spaces and
//     joiners, the bidirectional marks, embeddings, overrides and isolates
//     such as U+202E, the BOM, the soft hyphen), no other default-ignorable
//     code points (variation selectors, U+034F, Hangul fillers), no
//     noncharacters (U+FFFE, U+FDD0, ...);
//   - in Unicode normalization form NFC, so "é" is always U+00E9, never
//     "e" followed by U+0301: the NFD spelling of a name is refused, not
//     stored as a second name. Clients normalise before sending (Go:
//     norm.NFC.String, Python: unicodedata.normalize("NFC", s),
//     JavaScript: s.normalize("NFC")).
//
// Letters of different scripts that look alike (Latin "a", Cyrillic "а")
// remain different names: telling those apart is the caller's business.
func ValidateName(name string, maxBytes int) error {
	if err := ValidateStoredName(name, maxBytes); err != nil {
		return err
	}
	for i, r := range name {
		if invisible(r) {
			return fmt.Errorf("%w: %U at byte %d: invisible, bidirectional-formatting and non-ASCII space characters are not allowed", ErrInvalidQuery, r, i)
		}
	}
	if !norm.NFC.IsNormalString(name) {
		return fmt.Errorf("%w: not in Unicode NFC form: normalise it first (\"é\" as U+00E9, not \"e\" and U+0301)", ErrInvalidQuery)
	}
	return nil
}

// ValidateStoredName checks a name that looks up what may already be
// stored: the id of GET or DELETE /v1/documents/{id} and of a batch
// delete. It is the rule names had before ValidateName (1 to maxBytes
// bytes of valid UTF-8, no control characters), so a document stored
// under an earlier, looser rule can still be read and deleted.
func ValidateStoredName(name string, maxBytes int) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: must not be empty", ErrInvalidQuery)
	case len(name) > maxBytes:
		return fmt.Errorf("%w: %d bytes, at most %d allowed", ErrInvalidQuery, len(name), maxBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidQuery)
	}
	for i, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: control character %U at byte %d", ErrInvalidQuery, r, i)
		}
	}
	return nil
}

// ValidateNote checks a short free text people read beside names (a
// maintenance hold's reason): valid UTF-8 and, as for a name (see
// ValidateName), no control character and nothing invisible (bidirectional
// overrides such as U+202E, zero-width characters, spaces other than
// U+0020), so a note cannot reverse or hide what an operator reads. Unlike
// a name it is not compared, so NFC is not required. The error wraps
// ErrInvalidQuery and names the code point and byte, never the text.
func ValidateNote(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidQuery)
	}
	for i, r := range s {
		switch {
		case unicode.IsControl(r):
			return fmt.Errorf("%w: control character %U at byte %d", ErrInvalidQuery, r, i)
		case invisible(r):
			return fmt.Errorf("%w: %U at byte %d: invisible, bidirectional-formatting and non-ASCII space characters are not allowed", ErrInvalidQuery, r, i)
		}
	}
	return nil
}

// invisible reports a code point ValidateName refuses beyond controls.
func invisible(r rune) bool {
	switch {
	case r < 0x80:
		return false
	case unicode.Is(unicode.Zs, r), unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf),
		unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return true
	case r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE:
		return true // noncharacters
	}
	return false
}
