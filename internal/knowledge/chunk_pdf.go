package knowledge

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// PDF text comes from github.com/ledongthuc/pdf: pure Go (no cgo, so the
// single static binary stays), standard library only, reads the
// cross-reference table and streams (Flate, ASCII85) and decodes text
// through each font's encoding and ToUnicode map, page by page — the
// page-aware text a citation needs. pdfcpu, the other pure-Go choice the
// module proxy serves, validates and edits PDFs well but does not extract
// text (only raw content streams), and pdfium bindings need cgo or a
// WebAssembly runtime. The reader panics on some malformed input; every
// call is guarded and such a file is skipped as malformed.

// pdfPages extracts the text of each page.
func pdfPages(content []byte) (pages []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			pages, err = nil, &Malformed{"malformed PDF"}
		}
	}()
	if !bytes.HasPrefix(content, []byte("%PDF-")) {
		return nil, &Malformed{"not a PDF (no %PDF- header)"}
	}
	r, err := pdf.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, &Malformed{"malformed PDF: " + pdfReason(err)}
	}
	n := r.NumPage()
	if n == 0 {
		return nil, &Malformed{"malformed PDF: no pages"}
	}
	fonts := map[string]*pdf.Font{}
	for i := 1; i <= n; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			return nil, &Malformed{"malformed PDF: page " + strconv.Itoa(i) + " missing"}
		}
		for _, name := range p.Fonts() {
			if _, ok := fonts[name]; !ok {
				f := p.Font(name)
				fonts[name] = &f
			}
		}
		text, err := p.GetPlainText(fonts)
		if err != nil {
			return nil, &Malformed{"malformed PDF: page " + strconv.Itoa(i) + ": " + pdfReason(err)}
		}
		pages = append(pages, cleanPage(text))
	}
	return pages, nil
}

// pdfReason keeps a library error short and free of document bytes.
func pdfReason(err error) string {
	s := fmt.Sprint(err)
	if len(s) > 80 || !utf8.ValidString(s) {
		return "unreadable structure"
	}
	return s
}

// cleanPage normalises a page's text: valid UTF-8, no NULs, trimmed lines,
// runs of blank lines collapsed.
func cleanPage(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	s = strings.ReplaceAll(s, "\r", "\n")
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// splitPages makes a PDF's indexed text (its pages in order, a blank line
// between) and chunks each page at paragraph breaks; every chunk has its
// page and lies within it, so a citation names both.
func splitPages(pages []string, maxTokens int) (string, []Chunk, error) {
	var all []string
	var cs []Chunk
	for i, p := range pages {
		if i > 0 {
			all = append(all, "")
		}
		start := len(all) + 1
		if p != "" {
			all = append(all, strings.Split(p, "\n")...)
		}
		end := len(all)
		if end < start {
			continue
		}
		for _, c := range paragraphChunks(all, start, end, "page "+strconv.Itoa(i+1), maxTokens) {
			c.Page = i + 1
			cs = append(cs, c)
		}
	}
	cs = finish(all, cs)
	if len(cs) == 0 {
		return "", nil, &Malformed{"PDF holds no extractable text"}
	}
	if err := checkChunkBytes(cs); err != nil {
		return "", nil, err
	}
	return strings.Join(all, "\n") + "\n", cs, nil
}
