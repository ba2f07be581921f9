package chunk_test

import (
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/chunk"
)

// FuzzSplit: for any input read as Markdown, plain text, HTML or pages
// (cut at form feeds) and any
// valid options, Split does not panic and its chunks keep the package's
// invariants (checkChunks): every byte but white space in a chunk, in
// order, overlap within bounds, every chunk within MaxTokens.
func FuzzSplit(f *testing.F) {
	seeds := []string{
		"# A\n\ntext\n\n## B\n\nmore text here\n",
		"---\ntitle: x\n---\n# H\n```\n# code\n\n\n```\n",
		"Title\n=====\n\n- a\n- b\n\n> quote\n",
		"one two three. four five six! seven\neight\n\nnine",
		strings.Repeat("word ", 300),
		strings.Repeat("x", 500) + " " + strings.Repeat("é", 300),
		"<h1>A</h1><p>a b c</p><h2>B</h2><pre>  x\n\n  y</pre><script>s</script>",
		"\xff\xfe# bad utf8 \x00\n\n\x80",
		"|a|b|\n|-|-|\n|1|2|\n",
		"page one\r\n\fpage two\n\npara\f\f  \fpage five",
	}
	for i, s := range seeds {
		f.Add(s, uint8(i*37), uint8(i*11), uint8(i))
	}
	f.Add(seeds[len(seeds)-1], uint8(3), uint8(2), uint8(200))
	f.Fuzz(func(t *testing.T, src string, maxTokens, overlap, format uint8) {
		o := chunk.Options{MaxTokens: chunk.MinMaxTokens + int(maxTokens), Counter: chunk.Approx{}}
		o.Overlap = int(overlap) % (o.MaxTokens / 2)
		if format%4 == 3 {
			o.Counter = words{}
		}
		var d chunk.Doc
		switch format % 3 {
		case 0:
			d = chunk.Markdown(src, "f.md")
		case 1:
			d = chunk.Plain(src, "f.txt")
		case 2:
			var err error
			if d, err = chunk.HTML(strings.NewReader(src), "f.html"); err != nil {
				return
			}
		}
		if format >= 192 {
			d = chunk.Pages(strings.Split(src, "\f"), "f.pdf")
		}
		checkDoc(t, d)
		checkChunks(t, d, o, chunk.Split(d, o))
	})
}
