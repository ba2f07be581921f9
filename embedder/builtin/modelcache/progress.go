package modelcache

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress reports a Pull: a bar (bytes, rate, time left) or one line per
// file. Its writes never fail the download.
type progress interface {
	io.Writer // counts downloaded bytes
	file(f File, resumeAt int64)
	note(msg string)
	done(ok bool)
}

func (c *Cache) newProgress(name string, todo, total int64) progress {
	if c.Progress == nil || todo <= 0 {
		return noProgress{}
	}
	if c.PlainProgress {
		fmt.Fprintf(c.Progress, "pull %s: %s to download (%s in all)\n", name, FormatSize(todo), FormatSize(total))
		return &plainProgress{w: c.Progress, name: name, start: time.Now()}
	}
	bar := progressbar.NewOptions64(todo,
		progressbar.OptionSetWriter(c.Progress),
		progressbar.OptionSetDescription("pull "+name),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)
	return &barProgress{bar: bar, w: c.Progress, name: name}
}

type noProgress struct{}

func (noProgress) Write(b []byte) (int, error) { return len(b), nil }
func (noProgress) file(File, int64)            {}
func (noProgress) note(string)                 {}
func (noProgress) done(bool)                   {}

type barProgress struct {
	bar  *progressbar.ProgressBar
	w    io.Writer
	name string
}

func (p *barProgress) Write(b []byte) (int, error) { _ = p.bar.Add(len(b)); return len(b), nil }
func (p *barProgress) file(f File, _ int64)        { p.bar.Describe("pull " + p.name + ": " + f.Path) }
func (p *barProgress) note(msg string) {
	_ = p.bar.Clear()
	fmt.Fprintf(p.w, "pull %s: %s\n", p.name, msg)
}
func (p *barProgress) done(ok bool) {
	if ok {
		_ = p.bar.Finish()
		return
	}
	_ = p.bar.Exit()
	fmt.Fprintln(p.w)
}

type plainProgress struct {
	w     io.Writer
	name  string
	start time.Time
	n     int64
}

func (p *plainProgress) Write(b []byte) (int, error) { p.n += int64(len(b)); return len(b), nil }
func (p *plainProgress) file(f File, resumeAt int64) {
	if resumeAt > 0 {
		fmt.Fprintf(p.w, "pull %s: %s (%s, resuming at %s)\n", p.name, f.Path, FormatSize(f.Size), FormatSize(resumeAt))
		return
	}
	fmt.Fprintf(p.w, "pull %s: %s (%s)\n", p.name, f.Path, FormatSize(f.Size))
}
func (p *plainProgress) note(msg string) { fmt.Fprintf(p.w, "pull %s: %s\n", p.name, msg) }
func (p *plainProgress) done(ok bool) {
	if !ok {
		return
	}
	d := time.Since(p.start)
	rate := ""
	if s := d.Seconds(); s > 0 && p.n > 0 {
		rate = ", " + FormatSize(int64(float64(p.n)/s)) + "/s"
	}
	fmt.Fprintf(p.w, "pull %s: %s downloaded in %s%s\n", p.name, FormatSize(p.n), d.Round(time.Millisecond), rate)
}

// FormatSize formats a byte count with binary units: "612 B", "86.7 MiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
