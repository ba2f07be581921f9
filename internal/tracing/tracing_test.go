package tracing

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestErrorLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	e := &errorLog{log: slog.New(slog.NewTextHandler(&buf, nil)), every: time.Hour}
	for range 50 {
		e.Handle(errors.New("connection refused"))
	}
	if n := strings.Count(buf.String(), "span export failed"); n != 1 {
		t.Fatalf("%d warnings for 50 errors within the interval, want 1:\n%s", n, buf.String())
	}
	e.last = time.Now().Add(-2 * time.Hour) // the interval has passed
	e.Handle(errors.New("connection refused"))
	if !strings.Contains(buf.String(), "more_since_last_report=49") {
		t.Fatalf("second report does not count the 49 suppressed errors:\n%s", buf.String())
	}
}
