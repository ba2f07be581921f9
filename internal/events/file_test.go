package events_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/events"
)

// TestOpenSurvivesRestart: events published before a restart are read back
// with their sequence numbers, and numbering continues after them, so a
// reader's after still means the same events.
func TestOpenSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	r, err := events.Open(path, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for i := range 5 {
		r.Publish(events.Event{At: at.Add(time.Duration(i) * time.Second), Kind: events.KindBreaker, Source: "graph",
			Breaker: &events.BreakerChange{From: "closed", To: "open", Reason: "forced", By: "ops"}})
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	r, err = events.Open(path, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := r.Since(0, 0)
	if !equal(seqs(p), []uint64{1, 2, 3, 4, 5}) || p.Dropped || p.Last != 5 ||
		p.Events[4].Breaker == nil || p.Events[4].Breaker.By != "ops" || !p.Events[4].At.Equal(at.Add(4*time.Second)) {
		t.Fatalf("read back: %+v", p)
	}
	if e := r.Publish(events.Event{Kind: events.KindServer, Source: events.SourceServer,
		Server: &events.Server{Phase: events.ServerStarted, Instance: "i2"}}); e.Seq != 6 {
		t.Fatalf("first event after the restart numbered %d, want 6", e.Seq)
	}
	if p := r.Since(3, 0); !equal(seqs(p), []uint64{4, 5, 6}) || p.Events[2].Server == nil {
		t.Fatalf("after=3 across the restart: %+v", p)
	}
}

// TestOpenStaysBounded: the file is rewritten with the held events when it
// reaches twice the capacity, and a restart holds the newest capacity.
func TestOpenStaysBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	r, err := events.Open(path, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 103 {
		r.Publish(events.Event{Kind: events.KindBurst, Source: "vector"})
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > 8 {
			t.Fatalf("%d events in a file bounded by 8", n)
		}
	}
	r.Close()
	r, err = events.Open(path, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if p := r.Since(0, 0); !equal(seqs(p), []uint64{100, 101, 102, 103}) || !p.Dropped {
		t.Fatalf("after 103 events with capacity 4: %+v", seqs(p))
	}
}

// TestOpenSkipsTornLines: a line cut by a crash (and any unreadable line)
// is skipped; the rest are kept and numbering continues after the newest.
func TestOpenSkipsTornLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	body := `{"seq":1,"at":"2026-12-02T09:00:00Z","kind":"burst","source":"graph"}
not json
{"seq":2,"at":"2026-12-02T09:00:01Z","kind":"burst","source":"graph"}
{"seq":4,"at":"2026-12-02T09:00:03Z","kind":"burst","source":"graph"}
{"seq":3,"at":"2026-12-02T09:00:02Z","kind":"burst"
{"seq":5,"at":"2026-12-02T09:00:04Z","kind":"bu`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := events.Open(path, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if p := r.Since(0, 0); !equal(seqs(p), []uint64{1, 2, 4}) || p.Last != 4 {
		t.Fatalf("read back %v last %d, want [1 2 4] last 4", seqs(p), p.Last)
	}
	if p := r.Since(2, 1); !equal(seqs(p), []uint64{4}) || p.More {
		t.Fatalf("after 2 across the gap: %+v", p)
	}
	if e := r.Publish(events.Event{Kind: events.KindBurst}); e.Seq != 5 {
		t.Fatalf("next seq %d, want 5", e.Seq)
	}
}

func TestOpenUnwritableDirectory(t *testing.T) {
	if _, err := events.Open(filepath.Join(t.TempDir(), "missing", "events.jsonl"), 4, nil); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}
