package main

import (
	"fmt"
	"io"
	"time"
)

// eta estimates the time left for the remaining part of a job, from the
// rate so far: done of total units after elapsed. ok is false until a
// rate is known.
func eta(done, total float64, elapsed time.Duration) (left time.Duration, ok bool) {
	if done <= 0 || elapsed <= 0 || total < done {
		return 0, false
	}
	return time.Duration((total - done) / done * float64(elapsed)), true
}

// formatETA renders eta's answer for a progress line.
func formatETA(left time.Duration, ok bool) string {
	if !ok {
		return "ETA unknown"
	}
	return "ETA " + left.Round(time.Second).String()
}

// countProgress writes "LABEL: done/total UNIT (pct%), rate/s, ETA ..."
// lines: after the first step, then at most every plainProgressEvery, and
// at the end.
type countProgress struct {
	w            io.Writer
	label, unit  string
	now          func() time.Time
	start, shown time.Time
	printed      bool
}

func newCountProgress(w io.Writer, label, unit string, now func() time.Time) *countProgress {
	if now == nil {
		now = time.Now
	}
	return &countProgress{w: w, label: label, unit: unit, now: now, start: now()}
}

func (p *countProgress) update(done, total int) {
	t := p.now()
	if p.printed && t.Sub(p.shown) < plainProgressEvery && done < total {
		return
	}
	p.printed, p.shown = true, t
	elapsed := t.Sub(p.start)
	pct, rate := 100.0, 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	if sec := elapsed.Seconds(); sec > 0 {
		rate = float64(done) / sec
	}
	left, ok := eta(float64(done), float64(total), elapsed)
	fmt.Fprintf(p.w, "%s: %d/%d %s (%.0f%%), %.1f/s, %s\n", p.label, done, total, p.unit, pct, rate, formatETA(left, ok))
}
