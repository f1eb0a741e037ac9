// Package knowledge is memgate's documents-and-code memory (SPEC §17):
// documents, source files and PDFs ingested as governed, cited resource
// chunks. It owns the rules of ingestion — how a document is cut into
// chunks, which chunks of a changed document get new versions, which are
// retired — and of citations and their source lines; every chunk is a
// `resource` record written through core's gate, so the schema, trust,
// PII/secret screen, approvals and audit apply per chunk. REST, the CLI
// and MCP decode, call one method here, and encode.
package knowledge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxTokens is the soft maximum size of a chunk (SPEC §6).
const DefaultMaxTokens = 800

// Chunk is one piece of a document: a contiguous range of the lines of
// the document's indexed text. The chunks of a document partition its
// lines (every line belongs to exactly one chunk, in order), so the
// indexed text, and any range of its lines, can be rebuilt from them.
type Chunk struct {
	// Key identifies the chunk within its document across versions: the
	// heading path or declaration, with an ordinal when it repeats. A
	// re-ingested chunk with the same key is a new version of the old one.
	Key string
	// Heading is the heading path ("Setup > Linux") or the declaration
	// ("func (*Reader) Read") the chunk belongs to.
	Heading string
	// Start and End are the cited lines (1-based, inclusive): the span
	// without its leading and trailing blank lines.
	Start, End int
	// SpanStart and SpanEnd are the lines the chunk holds, blank ones
	// included; the spans of a document's chunks partition its lines.
	SpanStart, SpanEnd int
	// Page is the PDF page (1-based), 0 for other documents.
	Page int
	// Text is exactly the lines SpanStart..SpanEnd joined by "\n".
	Text string
}

// Media types the chunkers understand.
const (
	Markdown   = "text/markdown"
	Plain      = "text/plain"
	HTML       = "text/html"
	PDF        = "application/pdf"
	GoSource   = "text/x-go"
	Python     = "text/x-python"
	JavaScript = "text/javascript"
	TypeScript = "text/x-typescript"
	Java       = "text/x-java"
	Rust       = "text/x-rust"
	CSource    = "text/x-c"
)

var byExt = map[string]string{
	".md": Markdown, ".markdown": Markdown, ".mdx": Markdown,
	".txt": Plain, ".text": Plain, ".rst": Plain, "": Plain,
	".html": HTML, ".htm": HTML, ".xhtml": HTML,
	".pdf": PDF,
	".go":  GoSource,
	".py":  Python, ".pyi": Python,
	".js": JavaScript, ".mjs": JavaScript, ".cjs": JavaScript, ".jsx": JavaScript,
	".ts": TypeScript, ".tsx": TypeScript, ".mts": TypeScript, ".cts": TypeScript,
	".java": Java,
	".rs":   Rust,
	".c":    CSource, ".h": CSource, ".cc": CSource, ".cpp": CSource, ".hpp": CSource, ".cxx": CSource,
}

// MediaTypeOf returns the media type a file name implies, "" when no
// chunker knows the extension.
func MediaTypeOf(name string) string {
	return byExt[strings.ToLower(path.Ext(name))]
}

// Known reports whether a chunker handles media type mt.
func Known(mt string) bool {
	for _, v := range byExt {
		if v == mt {
			return true
		}
	}
	return false
}

// Malformed is why a document cannot be chunked: it is named, with this
// reason, in the ingest summary and skipped.
type Malformed struct{ Reason string }

func (m *Malformed) Error() string { return m.Reason }

// Split cuts a document of media type mt into chunks of its indexed text,
// which it returns as well: the document itself for text formats, the
// extracted text for PDF and HTML. maxTokens <= 0 means DefaultMaxTokens.
func Split(mt string, content []byte, maxTokens int) (text string, chunks []Chunk, err error) {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if mt == PDF {
		pages, err := pdfPages(content)
		if err != nil {
			return "", nil, err
		}
		return splitPages(pages, maxTokens)
	}
	if bytes.IndexByte(content, 0) >= 0 {
		return "", nil, &Malformed{"binary content (NUL bytes)"}
	}
	if !utf8.Valid(content) {
		return "", nil, &Malformed{"invalid UTF-8"}
	}
	text = strings.ReplaceAll(string(content), "\r\n", "\n")
	if mt == HTML {
		text = htmlText(text)
	}
	lines := splitLines(text)
	var cs []Chunk
	switch mt {
	case Markdown, HTML:
		cs = markdownChunks(lines, maxTokens)
	case GoSource:
		cs = goChunks(text, lines, maxTokens)
	case Python, JavaScript, TypeScript, Java, Rust, CSource:
		cs = codeChunks(langOf(mt), lines, maxTokens)
	default:
		cs = paragraphChunks(lines, 1, len(lines), "", maxTokens)
	}
	cs = finish(lines, cs)
	if len(cs) == 0 {
		return "", nil, &Malformed{"holds no text"}
	}
	if err := checkChunkBytes(cs); err != nil {
		return "", nil, err
	}
	return text, cs, nil
}

// MaxChunkBytes bounds a chunk: chunks are cut at line boundaries only (a
// citation names whole lines), so a document with a run of lines longer
// than this and no place to cut (a generated table on one line) is
// skipped rather than cited wrongly. It is below the gate's default
// content limit (32 KiB).
const MaxChunkBytes = 24 << 10

func checkChunkBytes(cs []Chunk) error {
	for _, c := range cs {
		if len(c.Text) > MaxChunkBytes {
			return &Malformed{"lines " + strconv.Itoa(c.SpanStart) + "-" + strconv.Itoa(c.SpanEnd) + " cannot be cut under 24 KiB (very long lines)"}
		}
	}
	return nil
}

// splitLines splits text into lines without their "\n"; a final newline
// does not start an empty line.
func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// Tokens estimates a text's model tokens: about four characters a token,
// never fewer than its words.
func Tokens(s string) int {
	return max(len(strings.Fields(s)), (len(s)+3)/4)
}

// span is a chunk before finishing: a line range and its heading.
func mk(heading string, start, end int) Chunk {
	return Chunk{Heading: heading, SpanStart: start, SpanEnd: end}
}

// finish makes the spans partition the lines (a gap joins the chunk
// before it, or the first chunk), drops chunks of only blank lines into
// their neighbour, fills text, cited range and unique keys.
func finish(lines []string, cs []Chunk) []Chunk {
	var out []Chunk
	for _, c := range cs {
		if c.SpanEnd < c.SpanStart {
			continue
		}
		if len(out) > 0 {
			prev := &out[len(out)-1]
			if c.SpanStart > prev.SpanEnd+1 {
				prev.SpanEnd = c.SpanStart - 1
			}
			if c.Page == prev.Page && blank(lines, c.SpanStart, c.SpanEnd) {
				prev.SpanEnd = c.SpanEnd
				continue
			}
			if c.Page == prev.Page && blank(lines, prev.SpanStart, prev.SpanEnd) {
				c.SpanStart = prev.SpanStart
				out[len(out)-1] = c
				continue
			}
		} else if c.SpanStart > 1 {
			c.SpanStart = 1
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		out[len(out)-1].SpanEnd = len(lines)
		if blank(lines, out[len(out)-1].SpanStart, len(lines)) && len(out) > 1 {
			out[len(out)-2].SpanEnd = len(lines)
			out = out[:len(out)-1]
		}
	}
	seen := map[string]int{}
	for i := range out {
		c := &out[i]
		c.Text = strings.Join(lines[c.SpanStart-1:c.SpanEnd], "\n")
		c.Start, c.End = c.SpanStart, c.SpanEnd
		for c.Start < c.End && strings.TrimSpace(lines[c.Start-1]) == "" {
			c.Start++
		}
		for c.End > c.Start && strings.TrimSpace(lines[c.End-1]) == "" {
			c.End--
		}
		base := c.Heading
		if c.Page > 0 {
			base = "p" + strconv.Itoa(c.Page) + ":" + base
		}
		seen[base]++
		c.Key = base
		if n := seen[base]; n > 1 {
			c.Key = base + "#" + strconv.Itoa(n)
		}
	}
	if len(out) == 1 && strings.TrimSpace(out[0].Text) == "" {
		return nil
	}
	return out
}

func blank(lines []string, a, b int) bool {
	for i := a; i <= b; i++ {
		if strings.TrimSpace(lines[i-1]) != "" {
			return false
		}
	}
	return true
}

func tokensOf(lines []string, a, b int) int {
	n := 0
	for i := a; i <= b; i++ {
		n += Tokens(lines[i-1]) + 1
	}
	return n
}

// paragraphChunks cuts lines a..b into chunks at blank lines, packing
// paragraphs up to maxTokens (soft: a paragraph over it stays whole unless
// it has no blank line at all, when it is cut by lines).
func paragraphChunks(lines []string, a, b int, heading string, maxTokens int) []Chunk {
	var out []Chunk
	start, n := a, 0
	for i := a; i <= b; i++ {
		t := Tokens(lines[i-1]) + 1
		atBreak := i > start && strings.TrimSpace(lines[i-2]) == "" && strings.TrimSpace(lines[i-1]) != ""
		if n > 0 && n+t > maxTokens && (atBreak || n > 2*maxTokens) {
			out = append(out, mk(heading, start, i-1))
			start, n = i, 0
		}
		n += t
	}
	if start <= b {
		out = append(out, mk(heading, start, b))
	}
	return out
}

// sha returns the hex sha256 of s.
func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
