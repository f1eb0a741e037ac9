// Package chunk splits documents into retrieval-sized pieces: Markdown by
// heading first, then any section (or plain text) into chunks under a
// soft token budget, breaking at paragraphs, then sentences, then words.
package chunk

import (
	"strings"
	"unicode"
)

// DefaultMaxTokens is the soft maximum size of a chunk.
const DefaultMaxTokens = 800

// Chunk is one piece of a document.
type Chunk struct {
	// Heading is the path of headings above the chunk ("Setup > Linux"),
	// empty for text before the first heading or for plain text.
	Heading string
	Text    string
}

// Tokens estimates a text's model tokens: about four characters a token
// for English, never fewer than its words.
func Tokens(s string) int {
	words := len(strings.Fields(s))
	return max(words, (len(s)+3)/4)
}

// Split cuts doc into chunks of at most maxTokens (soft: a single word
// longer than that stays whole). Markdown documents are first split at
// ATX headings ("# ..." to "###### ..."), ignoring fenced code; each
// chunk of a section starts with the section's heading line so that it
// reads on its own. Blank chunks are dropped.
func Split(doc string, markdown bool, maxTokens int) []Chunk {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	doc = strings.ReplaceAll(doc, "\r\n", "\n")
	var secs []section
	if markdown {
		secs = sections(doc)
	} else {
		secs = []section{{body: doc}}
	}
	var out []Chunk
	for _, sec := range secs {
		prefix := ""
		if sec.line != "" {
			prefix = sec.line + "\n\n"
		}
		budget := max(maxTokens-Tokens(prefix), maxTokens/2)
		for _, piece := range pack(sec.body, budget) {
			out = append(out, Chunk{Heading: sec.path, Text: prefix + piece})
		}
	}
	return out
}

type section struct {
	path string // heading path
	line string // the heading line as written
	body string
}

// sections splits Markdown at ATX headings outside fenced code blocks.
func sections(doc string) []section {
	var (
		out    []section
		cur    section
		body   strings.Builder
		stack  []string // heading texts of the enclosing sections
		levels []int    // and their levels
		fence  string
	)
	flush := func() {
		cur.body = body.String()
		if strings.TrimSpace(cur.body) != "" {
			out = append(out, cur)
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(doc, "\n") {
		trim := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			body.WriteString(line)
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			body.WriteString(line)
			continue
		}
		if lvl, title, ok := Heading(line); ok {
			flush()
			for len(levels) > 0 && levels[len(levels)-1] >= lvl {
				levels, stack = levels[:len(levels)-1], stack[:len(stack)-1]
			}
			levels, stack = append(levels, lvl), append(stack, title)
			cur = section{path: strings.Join(stack, " > "), line: strings.TrimRight(line, "\n")}
			continue
		}
		body.WriteString(line)
	}
	flush()
	return out
}

// Heading parses an ATX heading line: up to three spaces, 1-6 '#', then a
// space or the end of the line. The knowledge chunkers share it.
func Heading(line string) (level int, title string, ok bool) {
	s := strings.TrimRight(line, "\n")
	indent := len(s) - len(strings.TrimLeft(s, " "))
	if indent > 3 {
		return 0, "", false
	}
	s = s[indent:]
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t') {
		return 0, "", false
	}
	title = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s[n:]), "#"))
	if title == "" {
		return 0, "", false
	}
	return n, title, true
}

// pack greedily joins paragraphs into pieces of at most budget tokens;
// a paragraph over budget is split into sentences, a sentence over
// budget into words.
func pack(body string, budget int) []string {
	var units []string
	for _, para := range paragraphs(body) {
		if Tokens(para) <= budget {
			units = append(units, para)
			continue
		}
		for _, sent := range sentences(para) {
			if Tokens(sent) <= budget {
				units = append(units, sent)
				continue
			}
			units = append(units, words(sent, budget)...)
		}
	}
	var (
		out []string
		cur strings.Builder
		n   int
	)
	for _, u := range units {
		t := Tokens(u)
		if cur.Len() > 0 && n+t > budget {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(u)
		n += t
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}

func paragraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sentences splits after '.', '!' or '?' followed by a space.
func sentences(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p)-1; i++ {
		if (p[i] == '.' || p[i] == '!' || p[i] == '?') && unicode.IsSpace(rune(p[i+1])) {
			if s := strings.TrimSpace(p[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(p[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func words(s string, budget int) []string {
	var (
		out []string
		cur []string
		n   int
	)
	for _, w := range strings.Fields(s) {
		t := Tokens(w)
		if len(cur) > 0 && n+t+1 > budget {
			out = append(out, strings.Join(cur, " "))
			cur, n = nil, 0
		}
		cur = append(cur, w)
		n += t + 1
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, " "))
	}
	return out
}
