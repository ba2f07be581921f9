package embedded

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRowCodesKeepBytes grows, truncates, reserves and grows again a
// rowCodes across several remappings, checking after every step that it
// holds exactly the bytes a plain slice given the same steps holds, and
// that new bytes are zero.
func TestRowCodesKeepBytes(t *testing.T) {
	var c rowCodes
	defer c.free()
	var want []int8
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 400 {
		switch op := r.IntN(10); {
		case op < 7:
			n := 1 + r.IntN(3000)
			got := c.extend(n)
			if len(got) != n || slices.ContainsFunc(got, func(b int8) bool { return b != 0 }) {
				t.Fatalf("step %d: extend(%d) gave %d bytes, not all zero", step, n, len(got))
			}
			for i := range got {
				got[i] = int8(r.IntN(255) - 127)
			}
			want = append(want, got...)
		case op < 9:
			n := r.IntN(len(want) + 1)
			c.truncate(n)
			want = want[:n]
		default:
			c.reserve(r.IntN(1 << 20))
		}
		if !slices.Equal(c.b, want) {
			t.Fatalf("step %d: %d bytes held, want %d (or their values differ)", step, len(c.b), len(want))
		}
		if cap(c.b) < len(c.b) || (len(c.b) > 0 && cap(c.b) < minCodeMapping) {
			t.Fatalf("step %d: capacity %d for %d bytes", step, cap(c.b), len(c.b))
		}
	}
	c.free()
	if c.b != nil {
		t.Fatal("free left the codes")
	}
	c.free() // a second free is a no-op
}
