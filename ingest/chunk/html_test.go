package chunk_test

import (
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/chunk"
)

func TestHTML(t *testing.T) {
	page := `<!doctype html><html><head><title> The  Manual </title>
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<p>Intro   text,
 over two lines.</p>
<h1>Install</h1>
<p>Download <b>the</b> binary<br>and run it.</p>
<ul><li>one</li><li>two</li></ul>
<h2>On  Linux</h2>
<pre>tar xf ragd.tgz
  ./ragd serve</pre>
<table><tr><th>flag</th><th>meaning</th></tr><tr><td>-n</td><td>limit</td></tr></table>
<img src="x.png" alt="a diagram">
<noscript>enable scripts</noscript><template><p>hidden</p></template>
<h1>Use</h1><div><p>Query it.</p></div>
</body></html>`
	d, err := chunk.HTML(strings.NewReader(page), "manual.html")
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, d)
	if d.Name != "The Manual" {
		t.Errorf("name %q, want the <title>", d.Name)
	}
	for _, gone := range []string{"color", "secret", "Home", "Docs", "enable scripts", "hidden"} {
		if strings.Contains(d.Text, gone) {
			t.Errorf("the text holds %q (script, style, nav or unrendered):\n%s", gone, d.Text)
		}
	}
	want := "Intro text, over two lines.\n\n" +
		"Install\n\n" +
		"Download the binary\nand run it.\n\n" +
		"one\n\ntwo\n\n" +
		"On Linux\n\n" +
		"tar xf ragd.tgz\n  ./ragd serve\n\n" +
		"flag meaning\n\n-n limit\n\n" +
		"a diagram\n\n" +
		"Use\n\nQuery it.\n\n"
	if d.Text != want {
		t.Fatalf("text\n%q\nwant\n%q", d.Text, want)
	}
	got := sections(d)
	wantSections := []string{": Intro text, over two lines.", "Install: Install Download the binary and run it. ", "Install > On Linux: On Linux tar xf ragd.tgz ./ragd serve fl", "Use: Use Query it."}
	if !equal(got, wantSections) {
		t.Fatalf("sections\n got %q\nwant %q", got, wantSections)
	}
	o := chunk.Options{MaxTokens: 16, Counter: words{}}
	checkChunks(t, d, o, chunk.Split(d, o))
}

// TestHTMLCharset: a page in another encoding, declared by <meta>, is read
// as UTF-8.
func TestHTMLCharset(t *testing.T) {
	page := "<html><head><meta charset=\"iso-8859-1\"><title>caf\xe9</title></head><body><h1>na\xefve</h1><p>r\xe9sum\xe9</p></body></html>"
	d, err := chunk.HTML(strings.NewReader(page), "p.html")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "café" || !strings.Contains(d.Text, "résumé") || d.Sections[0].Headings[0] != "naïve" {
		t.Fatalf("name %q, text %q, sections %+v", d.Name, d.Text, d.Sections)
	}
}

func TestHTMLEmpty(t *testing.T) {
	d, err := chunk.HTML(strings.NewReader("<script>x()</script>"), "e.html")
	if err != nil {
		t.Fatal(err)
	}
	checkDoc(t, d)
	o := chunk.Options{MaxTokens: 16, Counter: words{}}
	if cs := chunk.Split(d, o); len(cs) != 0 {
		t.Fatalf("chunks of an empty page: %+v", cs)
	}
	if d.Name != "e.html" {
		t.Fatalf("name %q, want the file's without a <title>", d.Name)
	}
}
