package syncbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ragd/ragd/internal/syncbuf"
)

// TestConcurrentWriteAndRead: writers and a reader at once lose no write
// and tear none (run under -race, which also reports an unguarded buffer).
func TestConcurrentWriteAndRead(t *testing.T) {
	var b syncbuf.Buffer
	const writers, lines = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				fmt.Fprintf(&b, "w%d-%d\n", w, i)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
				t.Errorf("read a torn line: %q", s[max(0, len(s)-20):])
				return
			}
		}
	}()
	wg.Wait()
	<-done
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	for w := range writers {
		for i := range lines {
			if l := fmt.Sprintf("w%d-%d", w, i); !seen[l] {
				t.Fatalf("line %s lost", l)
			}
		}
	}
}
