//go:build arm64 && !purego

package kernel_test

import (
	"testing"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

func TestPickQKernelARM(t *testing.T) {
	for _, tc := range []struct {
		want    string
		dotprod bool
		got     string
	}{
		{"", true, "neon"},
		{"", false, "go"},
		{"go", true, "go"},
		{"neon", false, "go"}, // not this CPU's: ignored
		{"avx2", true, "neon"},
	} {
		if got := kernel.PickQKernelARM(tc.want, tc.dotprod); got != tc.got {
			t.Errorf("pickQKernelARM(%q, dotprod=%v) = %q, want %q", tc.want, tc.dotprod, got, tc.got)
		}
	}
}
