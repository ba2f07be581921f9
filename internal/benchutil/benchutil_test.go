package benchutil

import (
	"testing"
	"time"
)

// CPUTime grows while the process computes.
func TestCPUTimeGrows(t *testing.T) {
	t0 := CPUTime()
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	if d := CPUTime() - t0; d <= 0 {
		t.Fatalf("CPU time grew by %v after %d iterations of a busy loop", d, x)
	}
}
