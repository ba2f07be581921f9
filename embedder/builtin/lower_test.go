package builtin

import "testing"

// TestPyLower: the expected strings are Python 3's str.lower() of the
// inputs (sentence-transformers lower-cases with it for do_lower_case).
func TestPyLower(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hello World", "hello world"},
		{"İSTANBUL", "i\u0307stanbul"},
		{"ΟΔΟΣ", "οδος"},
		{"ΟΔΟΣ ΟΔΟΣ.", "οδος οδος."},
		{"ΣΑ", "σα"},
		{"Σ", "σ"},
		{"ΑΣ'Α", "ασ'α"},
		{"ΑΣ'", "ας'"},
		{"AΣ1", "aς1"},
		{"ÀÉÎ", "àéî"},
	} {
		if got := pyLower(tc.in); got != tc.want {
			t.Errorf("pyLower(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
