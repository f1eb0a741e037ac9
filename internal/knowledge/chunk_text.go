package knowledge

import (
	"html"
	"regexp"
	"strings"

	"github.com/memgate/memgate/internal/chunk"
)

// markdownChunks cuts Markdown at ATX headings outside fenced code, then
// each section over maxTokens at paragraph breaks. A section's chunks
// carry its heading path ("Install > Linux").
func markdownChunks(lines []string, maxTokens int) []Chunk {
	var (
		out    []Chunk
		stack  []string
		levels []int
		fence  string
		path   string
		start  = 1
	)
	flush := func(end int) {
		if end >= start {
			out = append(out, paragraphChunks(lines, start, end, path, maxTokens)...)
		}
	}
	for i, line := range lines {
		trim := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			continue
		}
		lvl, title, ok := chunk.Heading(line)
		if !ok {
			continue
		}
		flush(i)
		for len(levels) > 0 && levels[len(levels)-1] >= lvl {
			levels, stack = levels[:len(levels)-1], stack[:len(stack)-1]
		}
		levels, stack = append(levels, lvl), append(stack, title)
		path, start = strings.Join(stack, " > "), i+1
	}
	flush(len(lines))
	return out
}

// HTML to text by structure: headings become Markdown ATX headings (so the
// Markdown chunker cuts at them), block elements end lines, list items
// become "- " lines, script, style and similar are dropped, entities are
// decoded. A small tokenizer is enough: the text is for retrieval and
// citation, not rendering.
var (
	reDrop    = regexp.MustCompile(`(?is)<(script|style|noscript|template|svg|head)\b[^>]*>.*?</(script|style|noscript|template|svg|head)\s*>`)
	reComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	reTag     = regexp.MustCompile(`(?s)</?([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>`)
	reSpaces  = regexp.MustCompile(`[ \t\r\f\v]+`)
)

var blockTags = map[string]bool{
	"p": true, "div": true, "br": true, "tr": true, "table": true, "section": true, "article": true, "header": true,
	"footer": true, "nav": true, "main": true, "aside": true, "ul": true, "ol": true, "dl": true, "dt": true, "dd": true,
	"blockquote": true, "pre": true, "hr": true, "figure": true, "figcaption": true, "form": true, "body": true, "html": true,
}

func htmlText(doc string) string {
	doc = reComment.ReplaceAllString(doc, "")
	doc = reDrop.ReplaceAllString(doc, "")
	var b strings.Builder
	pre := false
	last := 0
	for _, m := range reTag.FindAllStringSubmatchIndex(doc, -1) {
		text := doc[last:m[0]]
		if !pre {
			text = reSpaces.ReplaceAllString(strings.ReplaceAll(text, "\n", " "), " ")
		}
		b.WriteString(html.UnescapeString(text))
		last = m[1]
		tag := strings.ToLower(doc[m[2]:m[3]])
		closing := doc[m[0]+1] == '/'
		switch {
		case len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6':
			if closing {
				b.WriteString("\n\n")
			} else {
				b.WriteString("\n\n" + strings.Repeat("#", int(tag[1]-'0')) + " ")
			}
		case tag == "li":
			if !closing {
				b.WriteString("\n- ")
			}
		case tag == "pre":
			pre = !closing
			b.WriteString("\n")
		case tag == "td" || tag == "th":
			b.WriteString(" ")
		case blockTags[tag]:
			b.WriteString("\n")
			if tag == "p" && closing {
				b.WriteString("\n")
			}
		}
	}
	b.WriteString(html.UnescapeString(doc[last:]))
	// Trim each line, and collapse runs of blank lines to one.
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimRight(l, " \t")
		if !pre {
			l = strings.TrimLeft(l, " ")
		}
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n")) + "\n"
}
