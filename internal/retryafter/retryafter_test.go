package retryafter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/retryafter"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"  ", 0},
		{"3", 3 * time.Second},
		{" 2 ", 2 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"0", 0},
		{"-1", 0},
		{"NaN", 0},
		{"Inf", 0},
		{"1e7", retryafter.Forever},
		{"1000001", retryafter.Forever},
		{"1000000", 1e6 * time.Second},
		{"1000000000000000000000000000000", retryafter.Forever},
		{"1e999", retryafter.Forever},
		{"-1e999", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Format(http.TimeFormat), 0},
	} {
		if got := retryafter.Parse(c.in, now); got != c.want {
			t.Errorf("Parse(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
