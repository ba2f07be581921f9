package chunk

import (
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Markdown cuts a CommonMark document (parsed by goldmark) into sections at
// its top-level headings (ATX "# ..." and setext, not those inside block
// quotes or lists, nor "#" lines in code blocks), with a break at the start
// of every top-level block (paragraph, list, code block, table, ...). A
// YAML front matter block ("---" lines at the very top) is left before
// the first section's text and is not taken for a heading. The chunks
// keep the Markdown source as it is.
func Markdown(src, name string) Doc {
	d := Doc{Text: src, Name: name}
	body := frontMatterEnd(src)
	if body > 0 && body < len(src) {
		d.Breaks = append(d.Breaks, body)
	}
	root := goldmark.DefaultParser().Parse(text.NewReader([]byte(src[body:])))
	var heads []heading
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		pos := n.Pos()
		if pos < 0 {
			continue // a thematic break, ...: it stays in the block before it
		}
		start := strings.LastIndexByte(src[:body+pos], '\n') + 1
		if start > 0 && (len(d.Breaks) == 0 || d.Breaks[len(d.Breaks)-1] < start) {
			d.Breaks = append(d.Breaks, start)
		}
		if h, ok := n.(*ast.Heading); ok {
			var b strings.Builder
			inlineText(h, []byte(src[body:]), &b)
			heads = append(heads, heading{h.Level, start, strings.Join(strings.Fields(b.String()), " ")})
		}
	}
	d.sections(heads)
	return d
}

// heading is a heading found in a document: its level (1 to 6), where its
// line starts and its text.
type heading struct {
	level, start int
	text         string
}

// sections cuts d.Text into sections at heads (in order of start), each
// with the path of the headings that enclose it.
func (d *Doc) sections(heads []heading) {
	var path []string
	var levels []int
	prev := 0
	for _, h := range heads {
		d.addSection(slices.Clone(path), prev, h.start)
		for len(levels) > 0 && levels[len(levels)-1] >= h.level {
			levels, path = levels[:len(levels)-1], path[:len(path)-1]
		}
		levels, path = append(levels, h.level), append(path, h.text)
		prev = h.start
	}
	d.addSection(slices.Clone(path), prev, len(d.Text))
}

// addSection appends the section [start, end) unless it is empty. Empty
// heading texts are left out of the path.
func (d *Doc) addSection(headings []string, start, end int) {
	headings = slices.DeleteFunc(headings, func(h string) bool { return h == "" })
	if len(headings) == 0 {
		headings = nil
	}
	if start < end {
		d.Sections = append(d.Sections, Section{Headings: headings, Start: start, End: end})
	}
}

// inlineText appends the text of n's inline children: text, code spans,
// link and emphasis text, autolinks; raw HTML is left out.
func inlineText(n ast.Node, src []byte, b *strings.Builder) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.AutoLink:
			b.Write(t.Label(src))
		case *ast.RawHTML:
		default:
			inlineText(c, src, b)
		}
	}
}

// frontMatterEnd returns where the text after a YAML front matter block
// starts: the block opens with a "---" line at the very top and closes
// with a "---" or "..." line. 0 when there is none.
func frontMatterEnd(src string) int {
	first, rest, ok := strings.Cut(src, "\n")
	if !ok || strings.TrimRight(first, "\r") != "---" {
		return 0
	}
	at := len(first) + 1
	for rest != "" {
		line, next, found := strings.Cut(rest, "\n")
		at += len(line)
		if l := strings.TrimRight(line, " \t\r"); l == "---" || l == "..." {
			if found {
				at++
			}
			return at
		}
		if !found {
			break
		}
		at++
		rest = next
	}
	return 0
}

// Plain cuts a plain text into one section with no heading and a break at
// every line that follows a blank line (paragraphs).
func Plain(src, name string) Doc {
	d := Doc{Text: src, Name: name}
	d.addSection(nil, 0, len(src))
	plainBreaks(&d, 0, len(src))
	return d
}

// plainBreaks adds a break at every line of d.Text[from:to] that follows a
// blank line.
func plainBreaks(d *Doc, from, to int) {
	blank := false
	for at := from; at < to; {
		line, _, found := strings.Cut(d.Text[at:to], "\n")
		isBlank := strings.TrimSpace(line) == ""
		if blank && !isBlank && at > 0 {
			d.Breaks = append(d.Breaks, at)
		}
		blank = isBlank
		if !found {
			break
		}
		at += len(line) + 1
	}
}

// PageSeparator ends each page but the last in the Text of a Doc of pages.
const PageSeparator = "\n\n"

// Pages builds the Doc of a paged text (a PDF's pages, the first first):
// one section per page with Page set, from 1, and no heading, so that no
// chunk crosses a page; breaks where a line follows a blank line, as in
// Plain. A page without text makes no section.
func Pages(pages []string, name string) Doc {
	var b strings.Builder
	starts := make([]int, len(pages))
	for i, p := range pages {
		starts[i] = b.Len()
		b.WriteString(p)
		if i < len(pages)-1 {
			b.WriteString(PageSeparator)
		}
	}
	d := Doc{Text: b.String(), Name: name}
	for i := range pages {
		end := len(d.Text)
		if i+1 < len(pages) {
			end = starts[i+1]
		}
		if strings.TrimSpace(d.Text[starts[i]:end]) == "" {
			continue
		}
		if len(d.Sections) > 0 {
			// The previous section ends where this one starts.
			d.Sections[len(d.Sections)-1].End = starts[i]
		} else if starts[i] > 0 {
			// Blank pages before the first page with text: white space
			// of this section.
			starts[i] = 0
		}
		d.Sections = append(d.Sections, Section{Start: starts[i], End: end, Page: i + 1})
		plainBreaks(&d, starts[i], end)
	}
	if len(d.Sections) > 0 {
		d.Sections[len(d.Sections)-1].End = len(d.Text)
	} else if d.Text != "" {
		d.addSection(nil, 0, len(d.Text)) // white space only: no chunk
	}
	return d
}
