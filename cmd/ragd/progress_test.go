package main

import (
	"strings"
	"testing"
	"time"
)

func TestCountProgressETA(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	var b strings.Builder
	p := newCountProgress(&b, "reembed", "documents", func() time.Time { return now })
	now = now.Add(10 * time.Second)
	p.update(64, 256) // 64 in 10 s: 192 left take 30 s
	now = now.Add(time.Second)
	p.update(128, 256) // within plainProgressEvery: not shown
	now = now.Add(time.Second)
	p.update(256, 256) // the end is always shown
	want := "reembed: 64/256 documents (25%), 6.4/s, ETA 30s\n" +
		"reembed: 256/256 documents (100%), 21.3/s, ETA 0s\n"
	if b.String() != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
	if _, ok := eta(0, 10, time.Second); ok {
		t.Fatal("an ETA without progress")
	}
}
