//go:build amd64 && !purego

package kernel_test

import (
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

func TestPickKernel(t *testing.T) {
	for _, tc := range []struct {
		want         string
		avx512, avx2 bool
		got          string
	}{
		{"", true, true, "avx512"},
		{"", false, true, "avx2"},
		{"", false, false, "go"},
		{"avx2", true, true, "avx2"},
		{"go", true, true, "go"},
		{"avx512", false, true, "avx2"}, // not this CPU's: ignored
		{"avx2", false, false, "go"},
		{"neon", true, true, "avx512"},
	} {
		if got := kernel.PickKernel(tc.want, tc.avx512, tc.avx2); got != tc.got {
			t.Errorf("pickKernel(%q, avx512=%v, avx2=%v) = %q, want %q", tc.want, tc.avx512, tc.avx2, got, tc.got)
		}
	}
}

func TestPickQKernel(t *testing.T) {
	for _, tc := range []struct {
		want       string
		vnni, avx2 bool
		got        string
	}{
		{"", true, true, "avx512vnni"},
		{"", false, true, "avx2"},
		{"", false, false, "go"},
		{"avx2", true, true, "avx2"},
		{"go", true, true, "go"},
		{"avx512", false, true, "avx2"},
		{"avx2", false, false, "go"},
	} {
		if got := kernel.PickQKernel(tc.want, tc.vnni, tc.avx2); got != tc.got {
			t.Errorf("pickQKernel(%q, vnni=%v, avx2=%v) = %q, want %q", tc.want, tc.vnni, tc.avx2, got, tc.got)
		}
	}
}
