package spi_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/ragd/ragd/spi"
)

// The name rule (issue 18, item 18): ids and tenants may not hold
// controls, invisible or bidirectional-formatting characters, or spaces
// other than U+0020, and must be NFC; the rule for looking up stored names
// keeps the earlier one.
func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      string
		ok     bool // ValidateName
		stored bool // ValidateStoredName
	}{
		{"ascii", "doc-1", true, true},
		{"space", "a b", true, true},
		{"reserved characters", "a/b?c#d%41", true, true},
		{"NFC é", "caf\u00e9", true, true},
		{"CJK", "中文", true, true},
		{"emoji", "😀", true, true},
		{"private use", "\ue000", true, true},
		{"ZWJ emoji sequence", "👨\u200d👩", false, true},
		{"empty", "", false, false},
		{"too long", strings.Repeat("x", spi.MaxNameBytes+1), false, false},
		{"longest", strings.Repeat("x", spi.MaxNameBytes), true, true},
		{"invalid UTF-8", "a\xff", false, false},
		{"NUL", "a\x00", false, false},
		{"tab", "a\tb", false, false},
		{"C1 control", "a\u0085b", false, false},
		{"zero-width space", "a\u200bb", false, true},
		{"right-to-left override", "\u202egnp.exe", false, true},
		{"right-to-left isolate", "a\u2067b", false, true},
		{"left-to-right mark", "a\u200e", false, true},
		{"BOM", "\ufeffa", false, true},
		{"soft hyphen", "a\u00adb", false, true},
		{"no-break space", "a\u00a0b", false, true},
		{"ideographic space", "a\u3000b", false, true},
		{"line separator", "a\u2028b", false, true},
		{"variation selector", "\u2764\ufe0f", false, true},
		{"combining grapheme joiner", "a\u034fb", false, true},
		{"Hangul filler", "a\u3164b", false, true},
		{"noncharacter FFFF", "a\uffff", false, true},
		{"noncharacter FDD0", "a\ufdd0", false, true},
		{"NFD é", "cafe\u0301", false, true},
		{"NFD Hangul", "\u1100\u1161", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := spi.ValidateName(tc.s, spi.MaxNameBytes)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, spi.ErrInvalidQuery)) {
				t.Errorf("ValidateName(%q) = %v, want ok %v", tc.s, err, tc.ok)
			}
			if err != nil && utf8.ValidString(tc.s) && len(tc.s) > 3 && strings.Contains(err.Error(), tc.s) {
				t.Errorf("the error quotes the name: %v", err)
			}
			if err := spi.ValidateStoredName(tc.s, spi.MaxNameBytes); (err == nil) != tc.stored {
				t.Errorf("ValidateStoredName(%q) = %v, want ok %v", tc.s, err, tc.stored)
			}
		})
	}
}

// FuzzValidateName: every name ValidateName accepts is also accepted by
// ValidateStoredName, is NFC, and holds no code point it refuses alone.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a", "cafe\u0301", "a\u200bb", "\u202e", "a b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if spi.ValidateName(s, spi.MaxNameBytes) != nil {
			return
		}
		if err := spi.ValidateStoredName(s, spi.MaxNameBytes); err != nil {
			t.Fatalf("%q: a new name the lookup rule refuses: %v", s, err)
		}
		if norm.NFC.String(s) != s {
			t.Fatalf("%q accepted but not NFC", s)
		}
		for _, r := range s {
			if r != ' ' && spi.ValidateName(string(r), spi.MaxNameBytes) != nil && norm.NFC.String(string(r)) == string(r) {
				t.Fatalf("%q accepted but holds %U, refused alone", s, r)
			}
		}
	})
}
