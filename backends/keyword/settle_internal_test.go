package keyword

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/syncbuf"
)

// The package's tests rebuild when they say so: no settle timer fires on
// an index a test left behind, beside its hooks or goleak's check. The
// settle tests below set their index's own delay.
func init() { settleAfter = time.Hour }

// settledModel is an index of 600 documents in bisected clustered
// order; the caller's 100 more in arrival order make the settle due (a
// thirty-second or more of the slots, at least reorderMin), not a
// rebuild (under a quarter of the ordered slots).
func settledModel(t *testing.T, seed uint64) (*rebuildModel, []string) {
	x := newImpactIndex()
	x.reorderMin = 100
	m := &rebuildModel{t: t, x: x, docs: map[string]refDoc{}, ver: map[string]uint64{}, rng: rand.New(rand.NewPCG(seed, 1))}
	var ids []string
	for i := range 700 {
		ids = append(ids, fmt.Sprintf("d%03d", i))
	}
	m.write(ids[:600], nil)
	x.waitRebuild()
	if x.ordered != 600 || x.bisected {
		t.Fatalf("ordered %d, bisected %v after the first batch's rebuild (grown): want 600, not bisected", x.ordered, x.bisected)
	}
	x.stopSettle()
	x.rebuildNow() // as at open: bisected
	if x.ordered != 600 || !x.bisected || x.settleDue() {
		t.Fatalf("ordered %d, bisected %v, settle due %v after rebuildNow", x.ordered, x.bisected, x.settleDue())
	}
	return m, ids
}

// stopSettle stops the settle timer a growth rebuild armed (its slots not
// bisected), for a test that rebuilds itself.
func (x *impactIndex) stopSettle() {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.settle != nil {
		x.settle.Stop()
		x.settle = nil
	}
}

// A rebuild for growth keeps the cheaper order; it arms the settle timer
// itself (no write need follow it), and the settle's rebuild bisects.
func TestSettleBisectsAfterAGrowthRebuild(t *testing.T) {
	x := newImpactIndex()
	x.reorderMin = 100
	x.settleAfter, x.settleWithin = time.Hour, -1 // settleNow below stands in for the timer
	m := &rebuildModel{t: t, x: x, docs: map[string]refDoc{}, ver: map[string]uint64{}, rng: rand.New(rand.NewPCG(4, 1))}
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("d%03d", i))
	}
	var logged bytes.Buffer
	x.log = slog.New(slog.NewJSONHandler(&logged, nil))
	m.write(ids, nil)
	x.waitRebuild()
	x.wmu.Lock()
	armed := x.settle != nil
	x.wmu.Unlock()
	if x.ordered != 300 || x.bisected || !x.settleDue() || !armed {
		t.Fatalf("after the growth rebuild: ordered %d, bisected %v, settle due %v, timer armed %v; want 300, false, true, true",
			x.ordered, x.bisected, x.settleDue(), armed)
	}
	x.settleNow()
	x.waitRebuild()
	x.checkInvariants(t)
	if !x.bisected || x.settleDue() {
		t.Fatalf("after the settle: bisected %v, settle due %v", x.bisected, x.settleDue())
	}
	m.check("after the settle", ids)
	if l := logged.String(); !strings.Contains(l, `"reason":"grown by a quarter"`) || !strings.Contains(l, `"reason":"writes paused"`) {
		t.Fatalf("the rebuilds' log lines: %s", l)
	}
	x.stopRebuild()
}

// Writes that pause rebuild the slots they left in arrival order: the
// settle timer, armed by the write that made it due, starts the rebuild;
// the answers stay the model's.
func TestSettleRebuildsOnceWritesPause(t *testing.T) {
	m, ids := settledModel(t, 1)
	x := m.x
	started := make(chan struct{}, 1)
	x.rebuildHook = func(stage string) {
		if stage == "start" {
			started <- struct{}{}
		}
	}
	var logged bytes.Buffer
	x.log = slog.New(slog.NewJSONHandler(&logged, nil))
	x.settleAfter = time.Millisecond
	m.write(ids[600:], nil)
	if !x.settleDue() || x.rebuildDue() {
		t.Fatalf("settle due %v, rebuild due %v: want only the settle", x.settleDue(), x.rebuildDue())
	}
	m.check("before the settle", ids)
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("no rebuild a minute after the writes paused")
	}
	x.waitRebuild()
	x.checkInvariants(t)
	if x.ordered != 700 {
		t.Fatalf("ordered %d after the settle, want 700", x.ordered)
	}
	m.check("after the settle", ids)
	if l := logged.String(); !strings.Contains(l, `"reason":"writes paused"`) || !strings.Contains(l, `"documents":700`) {
		t.Fatalf("the rebuild's log line: %s", l)
	}
}

// The settle's function finds the index stopped (the store closing), or
// a rebuild already started by a write, and starts nothing; a write
// short of the settle arms no timer.
func TestSettleAfterStopOrRebuild(t *testing.T) {
	m, ids := settledModel(t, 2)
	x := m.x
	m.write(ids[600:620], nil) // 20 in arrival order: short of reorderMin
	if x.settle != nil {
		t.Fatal("a timer armed short of the settle")
	}
	m.write(ids[620:], nil)
	if x.settle == nil {
		t.Fatal("no timer armed once the settle was due")
	}
	x.stopRebuild()
	x.settleNow() // as the timer would, after the stop
	if x.rebuilding() || x.ordered != 600 {
		t.Fatalf("after stop and settle: rebuilding %v, ordered %d", x.rebuilding(), x.ordered)
	}
	m.check("stopped", ids)

	m, ids = settledModel(t, 3)
	x = m.x
	release := make(chan struct{})
	x.rebuildHook = func(stage string) {
		if stage == "built" {
			<-release
		}
	}
	m.write(ids[600:], nil)
	x.settleNow() // starts the rebuild
	x.wmu.Lock()
	rb := x.rb
	x.wmu.Unlock()
	x.settleNow() // one runs: nothing more
	x.wmu.Lock()
	same := x.rb == rb
	x.wmu.Unlock()
	if rb == nil || !same {
		t.Fatalf("settle: rebuild %v, the same one after a second settle %v", rb != nil, same)
	}
	close(release)
	x.waitRebuild()
	if x.ordered != 700 {
		t.Fatalf("ordered %d after the settle, want 700", x.ordered)
	}
	m.check("after the settle", ids)
}

// The settle timer waits settleAfter from the last write, but no longer
// than settleWithin from when the settle became due; without a bound
// (settleWithin ≤ 0), settleAfter from the last write however long ago
// the settle became due.
func TestSettleWait(t *testing.T) {
	since := time.Unix(1000, 0)
	for _, tc := range []struct {
		now           time.Duration // after since
		after, within time.Duration
		want          time.Duration
	}{
		{0, 3 * time.Second, 10 * time.Minute, 3 * time.Second},
		{9*time.Minute + 58*time.Second, 3 * time.Second, 10 * time.Minute, 2 * time.Second},
		{10 * time.Minute, 3 * time.Second, 10 * time.Minute, 0},
		{11 * time.Minute, 3 * time.Second, 10 * time.Minute, 0},
		{11 * time.Minute, 3 * time.Second, -1, 3 * time.Second},
		{time.Second, time.Hour, 0, time.Hour},
	} {
		if got := settleWait(since, since.Add(tc.now), tc.after, tc.within); got != tc.want {
			t.Errorf("settleWait(+%v, after %v, within %v) = %v, want %v", tc.now, tc.after, tc.within, got, tc.want)
		}
	}
}

// Writes that never pause for settleAfter still end in the bisected
// order: settleWithin after the settle became due its timer fires
// whatever the writes do, and the rebuild runs beside them ("writes
// went on" in its log line; growth rebuilds may come first, and each
// arms the settle again). The answers stay the model's.
func TestSettleRebuildsWhileWritesGoOn(t *testing.T) {
	m, ids := settledModel(t, 5)
	x := m.x
	logged := &syncbuf.Buffer{}
	x.log = slog.New(slog.NewJSONHandler(logged, nil))
	x.wmu.Lock()
	x.settleAfter = time.Hour // writes never pause this long here
	x.settleWithin = 20 * time.Millisecond
	x.wmu.Unlock()
	m.write(ids[600:], nil)
	if !x.settleDue() {
		t.Fatal("the settle is not due")
	}
	deadline := time.Now().Add(time.Minute)
	for i := 0; !strings.Contains(logged.String(), `"reason":"`+reasonSettleLate+`"`); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no settle's rebuild in a minute of writes: %s", logged.String())
		}
		m.write([]string{ids[i%len(ids)]}, nil)
	}
	x.stopRebuild()
	x.checkInvariants(t)
	if !x.bisected {
		t.Fatal("not bisected after the settle's rebuild")
	}
	m.check("after the settle beside writes", ids)
}
