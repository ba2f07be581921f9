package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ragd/ragd/spi"
)

// WriteConfig is a steady write load: Rate documents a second, sent as
// batches of Batch on a fixed schedule (batch k is due Batch*k/Rate
// seconds after the start), one batch outstanding at a time. A batch
// whose answer comes after the next one was due makes that one late: it
// is sent at once, and the run counts it (WriteReport.Late); the schedule
// does not move, so a writer that falls behind catches up if it can.
type WriteConfig struct {
	// Docs are upserted in turn, over and over; each pass marks the
	// texts with its number ("rev N"), so every upsert changes the
	// document (an identical upsert changes nothing) and goes through the
	// change log.
	Docs []spi.Document
	// Rate is documents a second, Batch documents a request.
	Rate  float64
	Batch int
	// Duration bounds the run: no batch is sent once it has passed.
	Duration time.Duration
	// Upsert writes one batch and returns how many documents the server
	// stored and how many it refused; err is a request that failed as a
	// whole (the batch counts as failed).
	Upsert func(ctx context.Context, docs []spi.Document) (ok, failed int, err error)
	// Now and Sleep are the clock; nil means the real one. Tests inject
	// a fake.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Validate reports a config that cannot run.
func (c WriteConfig) Validate() error {
	switch {
	case len(c.Docs) == 0:
		return errors.New("loadgen: write: no documents")
	case c.Rate <= 0:
		return fmt.Errorf("loadgen: write: rate %g, want > 0", c.Rate)
	case c.Batch < 1:
		return fmt.Errorf("loadgen: write: batch %d, want >= 1", c.Batch)
	case c.Duration <= 0:
		return errors.New("loadgen: write: unbounded run: set a duration")
	case c.Upsert == nil:
		return errors.New("loadgen: write: no Upsert")
	}
	return nil
}

// WriteReport summarises a write run.
type WriteReport struct {
	// Docs were sent in Batches; OK were stored, Failed refused or lost
	// with a failed request (Errors counts those requests).
	Docs, Batches, OK, Failed, Errors int
	// Late counts batches sent after their slot (the previous answer came
	// too late).
	Late int
	// Elapsed is from the start to the last answer; DocsPerSec is OK
	// documents over the run's duration, or over Elapsed when the last
	// answer came later.
	Elapsed    time.Duration
	DocsPerSec float64
	// P50, P99 and Max are the batches' answer times.
	P50, P99, Max time.Duration
}

// Write runs cfg's write load until its duration has passed or ctx ends.
func Write(ctx context.Context, cfg WriteConfig) (*WriteReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now, sleep := cfg.Now, cfg.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	r := &WriteReport{}
	var lat []time.Duration
	start := now()
	next := 0 // index into the endless sequence of Docs
	for k := 0; ; k++ {
		due := time.Duration(float64(k*cfg.Batch) / cfg.Rate * float64(time.Second))
		if due >= cfg.Duration {
			break
		}
		wait := due - now().Sub(start)
		if wait > 0 && sleep(ctx, wait) != nil {
			break
		}
		if now().Sub(start) >= cfg.Duration || ctx.Err() != nil {
			break
		}
		if k > 0 && wait < 0 {
			r.Late++
		}
		batch := make([]spi.Document, cfg.Batch)
		for i := range batch {
			batch[i] = revision(cfg.Docs, next)
			next++
		}
		t0 := now()
		ok, failed, err := cfg.Upsert(ctx, batch)
		lat = append(lat, now().Sub(t0))
		r.Batches++
		r.Docs += len(batch)
		if err != nil {
			r.Errors++
			r.Failed += len(batch)
			continue
		}
		r.OK += ok
		r.Failed += failed
	}
	r.Elapsed = now().Sub(start)
	r.DocsPerSec = float64(r.OK) / max(r.Elapsed, cfg.Duration).Seconds()
	r.P50, r.P99, r.Max = Percentile(lat, 0.50), Percentile(lat, 0.99), Percentile(lat, 1)
	return r, nil
}

// revision is the n-th document of the endless sequence over docs: a
// document of pass n/len(docs)+1, its text marked with the pass.
func revision(docs []spi.Document, n int) spi.Document {
	d := docs[n%len(docs)]
	d.Text = fmt.Sprintf("%s rev %d", d.Text, n/len(docs)+1)
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
