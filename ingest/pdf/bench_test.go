package pdf

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/pdf/pdftest"
)

// The engine's cost: its start (compiling PDFium, or loading it from the
// compilation cache), a PDF once it runs, and the process's peak resident
// memory. Run one benchmark per process for a meaningful peak:
//
//	go test -run '^$' -bench BenchmarkStartCold -benchtime 3x ./ingest/pdf
//	go test -run '^$' -bench BenchmarkStartCached -benchtime 10x ./ingest/pdf
//	go test -run '^$' -bench BenchmarkTenPages ./ingest/pdf

// BenchmarkStartCold: a new engine without a compilation cache reads a
// one-page PDF and stops: what the first PDF of a run costs on a machine
// that never compiled PDFium.
func BenchmarkStartCold(b *testing.B) {
	benchStart(b, "")
	reportPeak(b)
}

// BenchmarkStartCached: the same with the compiled code in the cache (every
// run after the first on a machine). No peak memory: priming the cache
// compiled PDFium in this process.
func BenchmarkStartCached(b *testing.B) {
	dir := b.TempDir()
	prime := New(Options{CacheDir: dir})
	if _, err := prime.Extract(context.Background(), pdftest.Make(b, pdftest.Spec{Pages: []string{"prime"}})); err != nil {
		b.Fatal(err)
	}
	_ = prime.Close()
	benchStart(b, dir)
}

func benchStart(b *testing.B, cacheDir string) {
	data := pdftest.Make(b, pdftest.Spec{Pages: []string{"One page of text."}})
	b.ResetTimer()
	for b.Loop() {
		e := New(Options{CacheDir: cacheDir})
		if _, err := e.Extract(context.Background(), data); err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTenPages: a running engine reads PDFs of 10 pages of about 350
// words each, every one a different file.
func BenchmarkTenPages(b *testing.B) {
	e := New(Options{CacheDir: pdftest.CacheDir()})
	defer e.Close()
	files := make([][]byte, 8)
	for i := range files {
		files[i] = pdftest.Make(b, pdftest.Spec{Title: "Report " + strconv.Itoa(i), Pages: prose(i, 10, 350)})
	}
	if _, err := e.Extract(context.Background(), files[0]); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		t, err := e.Extract(context.Background(), files[i%len(files)])
		if err != nil || len(t.Pages) != 10 {
			b.Fatalf("%d pages, %v", len(t.Pages), err)
		}
		i++
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "pages/s")
	reportPeak(b)
}

// prose makes pages of words drawn from a fixed vocabulary, different for
// every seed.
func prose(seed, pages, words int) []string {
	vocab := strings.Fields("the wing flutter boundary layer transition shock wave pressure drag lift " +
		"supersonic subsonic heat transfer plate cylinder flow separation vortex nozzle jet turbulence " +
		"model test tunnel measured predicted results theory experiment surface temperature angle attack")
	out := make([]string, pages)
	x := uint32(seed*7919 + 1)
	for p := range out {
		var sb strings.Builder
		for w := range words {
			x = x*1664525 + 1013904223
			sb.WriteString(vocab[x>>16%uint32(len(vocab))])
			if w%12 == 11 {
				sb.WriteString(". ")
			} else {
				sb.WriteByte(' ')
			}
		}
		out[p] = sb.String()
	}
	return out
}

// reportPeak reports the process's peak resident memory (VmHWM), in MiB.
func reportPeak(b *testing.B) {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range bytes.Split(st, []byte("\n")) {
		var kb int
		if n, _ := fmt.Sscanf(string(line), "VmHWM: %d kB", &kb); n == 1 {
			b.ReportMetric(float64(kb)/1024, "peak-RSS-MiB")
		}
	}
}
