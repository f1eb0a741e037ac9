package knowledge

import (
	"regexp"
	"strings"
)

// The heuristic code chunker (Python, JavaScript, TypeScript, Java, Rust,
// C). No parser: a cgo tree-sitter binding would break the pure-Go build,
// and the pure-Go parsers for these languages are either unmaintained or
// cover one language each. The heuristic is documented in
// docs/knowledge.md and tested per language in chunk_test.go:
//
//  1. Each line gets a nesting level: brace depth at its start (strings,
//     character literals and comments skipped), or for Python its
//     indentation (lines inside triple-quoted strings have none).
//  2. A line at the top level that is code (not blank, not a comment, not
//     a closing bracket or a continuation) starts a statement; a statement
//     whose following lines go deeper (a body) is a declaration and starts
//     a chunk, together with the comments, decorators and attributes right
//     above it. Statements without a body (imports, one-line constants)
//     stay with the chunk before them.
//  3. A declaration over the token budget is cut the same way one level
//     down (a class's methods, an impl's functions), named "Outer > inner";
//     what is still over budget is cut at blank lines.
//
// A declaration's name is the identifier after its keyword (class, def,
// function, fn, struct, impl, interface, enum, type, trait, …), else the
// identifier before its first '(' (C and Java functions, methods).

type lang struct {
	indent   bool // Python: levels are indentation
	squote   bool // '…' is a string or character literal
	backtick bool // `…` is a (multi-line) template string
	hash     bool // '#' starts a comment (Python)
}

var (
	langPython = lang{indent: true, squote: true, hash: true}
	langJS     = lang{squote: true, backtick: true}
	langJava   = lang{squote: true}
	langRust   = lang{}
	langC      = lang{squote: true}
)

func langOf(mt string) lang {
	switch mt {
	case Python:
		return langPython
	case JavaScript, TypeScript:
		return langJS
	case Java:
		return langJava
	case Rust:
		return langRust
	}
	return langC
}

const noLevel = 1 << 30 // a line inside a multi-line string or comment

// codeLine is what the chunker knows of a line.
type codeLine struct {
	level int  // nesting level at the start of the line
	code  bool // holds code (not blank, not only a comment)
	opens bool // opens a brace block (a one-line body counts as a body)
	lead  bool // a comment, decorator or attribute line (attaches downwards)
}

func scanCode(l lang, lines []string) []codeLine {
	out := make([]codeLine, len(lines))
	if l.indent {
		inStr := ""
		for i, s := range lines {
			trim := strings.TrimSpace(s)
			if inStr != "" {
				out[i] = codeLine{level: noLevel}
				if strings.Count(s, inStr)%2 == 1 {
					inStr = ""
				}
				continue
			}
			ind := len(s) - len(strings.TrimLeft(s, " \t"))
			out[i] = codeLine{level: ind, code: trim != "" && !strings.HasPrefix(trim, "#"),
				lead: strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, "@")}
			for _, q := range []string{`"""`, `'''`} {
				if strings.Count(s, q)%2 == 1 {
					inStr = q
				}
			}
		}
		return out
	}
	depth := 0
	state := byte(0) // 0, '*' block comment, '`' template string
	for i, s := range lines {
		trim := strings.TrimSpace(s)
		cl := codeLine{level: depth}
		if state != 0 {
			cl.level = noLevel
		}
		hasCode := false
		for j := 0; j < len(s); j++ {
			c := s[j]
			switch state {
			case '*':
				if c == '*' && j+1 < len(s) && s[j+1] == '/' {
					state, j = 0, j+1
				}
				continue
			case '`':
				if c == '\\' {
					j++
				} else if c == '`' {
					state = 0
				}
				continue
			}
			switch {
			case c == '/' && j+1 < len(s) && s[j+1] == '/':
				j = len(s)
			case c == '/' && j+1 < len(s) && s[j+1] == '*':
				state, j = '*', j+1
			case c == '"' || (c == '\'' && (l.squote || rustChar(s, j))):
				hasCode = true
				for j++; j < len(s) && s[j] != c; j++ {
					if s[j] == '\\' {
						j++
					}
				}
			case c == '`' && l.backtick:
				hasCode, state = true, '`'
			case c == '{' || c == '(' || c == '[':
				hasCode = true
				if c == '{' {
					depth++
					cl.opens = true
				}
			case c == '}':
				hasCode = true
				depth = max(depth-1, 0)
			case c != ' ' && c != '\t':
				hasCode = true
			}
		}
		cl.code = hasCode && cl.level != noLevel
		cl.lead = strings.HasPrefix(trim, "//") || strings.HasPrefix(trim, "/*") || strings.HasPrefix(trim, "*") ||
			strings.HasPrefix(trim, "@") || strings.HasPrefix(trim, "#[") || strings.HasPrefix(trim, "#![")
		if strings.HasPrefix(trim, "*") || strings.HasPrefix(trim, "/*") || strings.HasPrefix(trim, "//") {
			cl.code = false
		}
		out[i] = cl
	}
	return out
}

// rustChar reports whether the quote at s[j] opens a Rust character literal
// ('a', '\n') rather than a lifetime ('a).
func rustChar(s string, j int) bool {
	if j+2 < len(s) && s[j+1] != '\\' && s[j+2] == '\'' {
		return true
	}
	return j+3 < len(s) && s[j+1] == '\\' && strings.IndexByte(s[j+2:], '\'') >= 0
}

func codeChunks(l lang, lines []string, maxTokens int) []Chunk {
	info := scanCode(l, lines)
	top := noLevel
	for _, c := range info {
		if c.code && c.level < top {
			top = c.level
		}
	}
	if top == noLevel {
		return paragraphChunks(lines, 1, len(lines), "", maxTokens)
	}
	return declChunks(l, lines, info, 1, len(lines), top, "", maxTokens, 0)
}

// reImport matches imports, which stay with the chunk before them even
// when they hold braces (import { a } from "a").
var reImport = regexp.MustCompile(`^\s*(import|export\s+\{|export\s+\*|from|use|package|#include|require)\b`)

var continuation = regexp.MustCompile(`^[{})\].,&|+\-?:=<>*/%]`)

// declChunks cuts lines a..b at the declarations of level lvl.
func declChunks(l lang, lines []string, info []codeLine, a, b, lvl int, outer string, maxTokens, depth int) []Chunk {
	// Statement starts at this level.
	var starts []int
	for i := a; i <= b; i++ {
		c := info[i-1]
		if !c.code || c.level != lvl || c.lead {
			continue
		}
		if continuation.MatchString(strings.TrimSpace(lines[i-1])) {
			continue
		}
		starts = append(starts, i)
	}
	type decl struct {
		start, head int
		name        string
	}
	var decls []decl
	for k, s := range starts {
		next := b + 1
		if k+1 < len(starts) {
			next = starts[k+1]
		}
		body := info[s-1].opens
		for i := s + 1; i < next && !body; i++ {
			if info[i-1].code && info[i-1].level > lvl && info[i-1].level != noLevel {
				body = true
				break
			}
		}
		if !body && !(l.indent && strings.HasSuffix(strings.TrimSpace(lines[s-1]), ":")) || reImport.MatchString(lines[s-1]) {
			continue
		}
		st := s
		for st > a && info[st-2].lead && info[st-2].level != noLevel {
			st--
		}
		decls = append(decls, decl{start: st, head: s, name: declName(lines[s-1])})
	}
	join := func(n string) string {
		if outer == "" {
			return n
		}
		return outer + " > " + n
	}
	var out []Chunk
	if len(decls) == 0 || decls[0].start > a {
		end := b
		if len(decls) > 0 {
			end = decls[0].start - 1
		}
		out = append(out, paragraphChunks(lines, a, end, outer, maxTokens)...)
	}
	for k, d := range decls {
		end := b
		if k+1 < len(decls) {
			end = decls[k+1].start - 1
		}
		name := join(d.name)
		if tokensOf(lines, d.start, end) <= maxTokens || depth > 0 {
			out = append(out, paragraphChunks(lines, d.start, end, name, maxTokens)...)
			continue
		}
		inner := noLevel
		for i := d.head + 1; i <= end; i++ {
			if c := info[i-1]; c.code && c.level > lvl && c.level < inner {
				inner = c.level
			}
		}
		if inner == noLevel {
			out = append(out, paragraphChunks(lines, d.start, end, name, maxTokens)...)
			continue
		}
		out = append(out, mk(name, d.start, d.head))
		out = append(out, declChunks(l, lines, info, d.head+1, end, inner, name, maxTokens, depth+1)...)
	}
	return out
}

var (
	reKeywordName = regexp.MustCompile(`\b(class|def|function\*?|fn|struct|union|enum|interface|trait|type|mod|module|namespace|record|impl(?:<[^>]*>)?)\s+([A-Za-z_$][\w$]*(?:::[\w$]+)*(?:<[^>]*>)?(?:\s+for\s+[A-Za-z_$][\w$]*)?)`)
	reVarName     = regexp.MustCompile(`^(?:export\s+)?(?:default\s+)?(?:const|let|var|static|pub\s+static|pub\s+const)\s+([A-Za-z_$][\w$]*)`)
	reCallName    = regexp.MustCompile(`([A-Za-z_$][\w$]*)\s*\(`)
)

var nameKeywords = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "return": true, "catch": true, "sizeof": true}

// declName names a declaration from its first line: "class Foo",
// "def bar", "fn parse", "impl Display for Point", or a function's
// identifier ("main").
func declName(line string) string {
	t := strings.TrimSpace(line)
	if m := reKeywordName.FindStringSubmatch(t); m != nil {
		kw := m[1]
		if strings.HasPrefix(kw, "impl") {
			kw = "impl"
		}
		return strings.TrimSuffix(kw, "*") + " " + m[2]
	}
	// A function's name is before its first '(' (static int add(...));
	// a variable's after its keyword (const area = (s) => ...).
	paren, eq := strings.IndexByte(t, '('), strings.IndexByte(t, '=')
	if m := reVarName.FindStringSubmatch(t); m != nil && (paren < 0 || eq >= 0 && eq < paren) {
		return m[1]
	}
	for _, m := range reCallName.FindAllStringSubmatch(t, -1) {
		if !nameKeywords[m[1]] {
			return m[1]
		}
	}
	if len(t) > 60 {
		t = t[:60]
	}
	return t
}
