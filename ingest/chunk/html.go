package chunk

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// skipped are the elements whose content is not text for a reader:
// scripts, styles, navigation, and what a browser does not show.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Nav: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Math: true, atom.Iframe: true,
	atom.Object: true, atom.Canvas: true, atom.Head: true, atom.Select: true,
	atom.Button: true,
}

// blocks are the elements that start a new paragraph-level block.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Ul: true, atom.Ol: true, atom.Dl: true,
	atom.Dt: true, atom.Dd: true, atom.Pre: true, atom.Blockquote: true, atom.Table: true,
	atom.Section: true, atom.Article: true, atom.Main: true, atom.Header: true, atom.Footer: true,
	atom.Aside: true, atom.Figure: true, atom.Figcaption: true, atom.Address: true, atom.Hr: true,
	atom.Form: true, atom.Fieldset: true, atom.Details: true, atom.Summary: true, atom.Caption: true,
	atom.Body: true, atom.Html: true,
}

var headingLevel = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}

// HTML extracts the text of an HTML document (parsed by golang.org/x/net/html
// as a browser would, the encoding taken from a byte order mark or a
// <meta charset>, else UTF-8) and cuts it into sections at its h1-h6
// headings. Scripts, styles, <nav> and what a browser does not render
// (<head>, <template>, <noscript>, ...) are dropped; blocks (p, li, pre,
// table rows, ...) become paragraphs separated by a blank line, with a
// break at each; white space is collapsed outside <pre>. The Doc's Name is
// the <title>, else name.
func HTML(r io.Reader, name string) (Doc, error) {
	utf8r, err := charset.NewReader(r, "text/html")
	if err != nil {
		return Doc{}, fmt.Errorf("chunk: html: %w", err)
	}
	root, err := html.Parse(utf8r)
	if err != nil {
		return Doc{}, fmt.Errorf("chunk: html: %w", err)
	}
	x := extractor{}
	x.walk(root, false)
	x.endBlock()
	d := Doc{Text: x.b.String(), Breaks: x.breaks, Name: name}
	if t := strings.Join(strings.Fields(x.title), " "); t != "" {
		d.Name = t
	}
	d.sections(x.heads)
	return d, nil
}

type extractor struct {
	b      strings.Builder
	breaks []int
	heads  []heading
	title  string
	// space: a white space is pending before the next word of inline text.
	space bool
	// inBlock: text was written since the last block ended.
	inBlock bool
}

// endBlock ends the current block with a blank line.
func (x *extractor) endBlock() {
	if x.inBlock {
		x.b.WriteString("\n\n")
		x.inBlock = false
	}
	x.space = false
}

// startText is called before text is written: it records a break where a
// block starts.
func (x *extractor) startText() {
	if !x.inBlock {
		if x.b.Len() > 0 {
			x.breaks = append(x.breaks, x.b.Len())
		}
		x.inBlock = true
		x.space = false
	}
}

func (x *extractor) text(s string, pre bool) {
	if pre {
		if s == "" {
			return
		}
		x.startText()
		x.b.WriteString(s)
		return
	}
	if strings.TrimLeftFunc(s, isHTMLSpace) != s {
		x.space = true
	}
	for i, w := range strings.Fields(s) {
		if !x.inBlock {
			x.startText()
		} else if x.space || i > 0 {
			x.b.WriteByte(' ')
		}
		x.space = false
		x.b.WriteString(w)
	}
	if s != "" && strings.TrimRightFunc(s, isHTMLSpace) != s {
		x.space = true
	}
}

func isHTMLSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r' }

func (x *extractor) walk(n *html.Node, pre bool) {
	switch n.Type {
	case html.TextNode:
		x.text(n.Data, pre)
		return
	case html.ElementNode:
		if n.DataAtom == atom.Head {
			x.findTitle(n)
			return
		}
		if skipped[n.DataAtom] {
			return
		}
		if lvl, ok := headingLevel[n.DataAtom]; ok {
			x.endBlock()
			t := strings.Join(strings.Fields(textOf(n)), " ")
			x.heads = append(x.heads, heading{lvl, x.b.Len(), t})
			x.startText()
			x.b.WriteString(t)
			x.endBlock()
			return
		}
		switch n.DataAtom {
		case atom.Br:
			if x.inBlock {
				x.b.WriteByte('\n')
				x.space = false
			}
			return
		case atom.Img:
			for _, a := range n.Attr {
				if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
					x.text(" "+a.Val+" ", false)
				}
			}
			return
		case atom.Tr:
			x.endBlock()
			defer x.endBlock()
		case atom.Td, atom.Th:
			x.space = true
		case atom.Pre:
			pre = true
		}
		if blocks[n.DataAtom] {
			x.endBlock()
			defer x.endBlock()
		}
	case html.CommentNode, html.DoctypeNode:
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		x.walk(c, pre)
	}
}

// textOf is the text inside n, scripts and styles left out.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			return
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.Script || n.DataAtom == atom.Style) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && n.DataAtom != 0 && blocks[n.DataAtom] {
			b.WriteByte(' ')
		}
	}
	walk(n)
	return b.String()
}

// findTitle keeps the text of the first <title> under n.
func (x *extractor) findTitle(n *html.Node) {
	for c := n.FirstChild; c != nil && x.title == ""; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Title {
			x.title = textOf(c)
			return
		}
		x.findTitle(c)
	}
}
