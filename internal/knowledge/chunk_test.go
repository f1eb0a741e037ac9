package knowledge

import (
	"strings"
	"testing"
)

// headings returns each chunk's heading and cited range, as "heading@a-b".
func headings(t *testing.T, mt, doc string) []string {
	t.Helper()
	text, cs, err := Split(mt, []byte(doc), 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(text)
	var out []string
	next := 1
	for _, c := range cs {
		// The spans partition the lines, and the text is exactly them.
		if c.SpanStart != next || c.Text != strings.Join(lines[c.SpanStart-1:c.SpanEnd], "\n") || c.Start < c.SpanStart || c.End > c.SpanEnd {
			t.Fatalf("chunk %+v does not continue at line %d", c, next)
		}
		next = c.SpanEnd + 1
		out = append(out, c.Heading+"@"+itoa(c.Start)+"-"+itoa(c.End))
	}
	if next != len(lines)+1 {
		t.Fatalf("chunks end at %d of %d lines", next-1, len(lines))
	}
	return out
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+n/100%10)) + string(rune('0'+n/10%10)) + string(rune('0'+n%10)))
}

func want(t *testing.T, got []string, w ...string) {
	t.Helper()
	if strings.Join(got, " | ") != strings.Join(w, " | ") {
		t.Fatalf("chunks:\n got %q\nwant %q", got, w)
	}
}

func TestMarkdownByHeading(t *testing.T) {
	doc := "Intro line.\n\n# Setup\n\nInstall it.\n\n```\n# not a heading\n```\n\n## Linux\n\napt install x\n\n# Use\n\nRun it.\n"
	want(t, headings(t, Markdown, doc), "@001-001", "Setup@003-009", "Setup > Linux@011-013", "Use@015-017")
}

func TestMarkdownSoftMaximum(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Big\n\n")
	for range 40 {
		b.WriteString(strings.Repeat("word ", 30) + "\n\n")
	}
	_, cs, err := Split(Markdown, []byte(b.String()), 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 5 {
		t.Fatalf("%d chunks", len(cs))
	}
	keys := map[string]bool{}
	for _, c := range cs {
		if Tokens(c.Text) > 400 || c.Heading != "Big" || keys[c.Key] {
			t.Fatalf("chunk %q: %d tokens, key %q", c.Heading, Tokens(c.Text), c.Key)
		}
		keys[c.Key] = true
	}
}

func TestGoPerDeclaration(t *testing.T) {
	doc := "// Package p does things.\npackage p\n\nimport \"fmt\"\n\n// T is a thing.\ntype T struct{}\n\n// Read reads.\nfunc (t *T) Read(p []byte) (int, error) {\n\treturn 0, nil\n}\n\nfunc (g G[K, V]) Get() {}\n\nconst (\n\tA = 1\n\tB = 2\n)\n\nvar x = fmt.Sprint()\n"
	want(t, headings(t, GoSource, doc), "package p@001-002", "import@004-004", "type T@006-007", "func (*T) Read@009-012",
		"func (G[K, V]) Get@014-014", "const (A …)@016-019", "var x@021-021")
}

func TestPythonHeuristic(t *testing.T) {
	doc := "\"\"\"Module doc.\n\ndef not_a_def():\n\"\"\"\nimport os\n\n\n@cache\ndef load(path):\n    \"\"\"Load it.\"\"\"\n    return open(path)\n\n\nclass Store:\n    def get(self):\n        return 1\n"
	want(t, headings(t, Python, doc), "@001-005", "def load@008-011", "class Store@014-016")
}

func TestTypeScriptHeuristic(t *testing.T) {
	doc := "import { a } from \"a\";\nconst s = `template {\n}`;\n\n/** Adds. */\nexport function add(x: number): number {\n  return x + 1;\n}\n\nexport interface Shape {\n  area(): number;\n}\n\nexport const area = (s: Shape) => {\n  return s.area();\n};\n"
	want(t, headings(t, TypeScript, doc), "@001-003", "function add@005-008", "interface Shape@010-012", "area@014-016")
}

func TestJavaSplitsBigClassIntoMethods(t *testing.T) {
	var b strings.Builder
	b.WriteString("package x;\n\n/** A service. */\npublic class Service {\n")
	for _, m := range []string{"start", "stop"} {
		b.WriteString("    /** " + m + " it. */\n    public void " + m + "() {\n")
		for range 15 {
			b.WriteString("        System.out.println(\"" + strings.Repeat("x", 40) + "\");\n")
		}
		b.WriteString("    }\n\n")
	}
	b.WriteString("}\n")
	_, cs, err := Split(Java, []byte(b.String()), 400)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, c := range cs {
		hs = append(hs, c.Heading)
	}
	want(t, hs, "", "class Service", "class Service > start", "class Service > stop")
}

func TestRustAndC(t *testing.T) {
	rs := "use std::fmt;\n\n/// A point.\n#[derive(Debug)]\npub struct Point { x: i32 }\n\nimpl fmt::Display for Point {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n        write!(f, \"{}\", '}')\n    }\n}\n\nfn main() {}\n"
	want(t, headings(t, Rust, rs), "@001-001", "struct Point@003-005", "impl fmt::Display for Point@007-011", "fn main@013-013")
	c := "#include <stdio.h>\n\n/* Adds two ints. */\nstatic int add(int a, int b)\n{\n    return a + b; /* } */\n}\n\nint main(void) {\n    return add(1, 2);\n}\n"
	want(t, headings(t, CSource, c), "@001-001", "add@003-007", "main@009-011")
}

func TestHTMLByStructure(t *testing.T) {
	doc := "<html><head><title>t</title><script>var x = '<h1>no</h1>';</script></head><body>" +
		"<h1>Guide</h1><p>Read &amp; follow.</p><h2>Steps</h2><ul><li>one</li><li>two</li></ul></body></html>"
	text, cs, err := Split(HTML, []byte(doc), 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "no") || !strings.Contains(text, "Read & follow.") || !strings.Contains(text, "- two") {
		t.Fatalf("text %q", text)
	}
	if len(cs) != 2 || cs[0].Heading != "Guide" || cs[1].Heading != "Guide > Steps" {
		t.Fatalf("chunks %+v", cs)
	}
}

func TestPlainTextByParagraph(t *testing.T) {
	var b strings.Builder
	for range 10 {
		b.WriteString(strings.Repeat("alpha beta ", 50) + "\n\n")
	}
	_, cs, err := Split(Plain, []byte(b.String()), 300)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs[:len(cs)-1] {
		if !strings.HasSuffix(c.Text, "\n") && c.SpanEnd < 20 {
			t.Fatalf("chunk does not end at a paragraph break: %q", c.Text[len(c.Text)-20:])
		}
	}
	if len(cs) < 3 {
		t.Fatalf("%d chunks", len(cs))
	}
}

func TestMalformedDocuments(t *testing.T) {
	for _, c := range []struct {
		mt, doc, reason string
	}{
		{Plain, "a\x00b", "binary"},
		{Markdown, "\xff\xfe", "UTF-8"},
		{PDF, "%PDF-1.4\n1 0 obj", "PDF"},
		{PDF, "hello", "not a PDF"},
		{Plain, "  \n\n ", "no text"},
	} {
		_, _, err := Split(c.mt, []byte(c.doc), 0)
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s %q: %v, want %q", c.mt, c.doc, err, c.reason)
		}
	}
}

func TestGitignoreAndGlobs(t *testing.T) {
	ign := map[string][]ignoreRule{
		".":   {{pattern: "*.log"}, {pattern: "build", dirOnly: true}, {pattern: "docs/private", anchored: true}},
		"src": {{pattern: "gen_*.go"}, {pattern: "gen_keep.go", negate: true}},
	}
	for rel, wantIgn := range map[string]bool{
		"a.log": true, "src/x.log": true, "build": false, "src/gen_a.go": true, "src/gen_keep.go": false, "x/docs/private/y.md": false,
		"src/main.go": false,
	} {
		isDir := false
		if got := ignored(ign, rel, isDir); got != wantIgn {
			t.Errorf("ignored(%s) = %v", rel, got)
		}
	}
	if !ignored(ign, "build", true) || !ignored(ign, "docs/private", true) || ignored(ign, "x/docs/private", true) {
		t.Error("build/ is not ignored as a directory")
	}
	if !anyGlob([]string{"**/*_test.go"}, "a/b/c_test.go") || !anyGlob([]string{"*_test.go"}, "a/b/c_test.go") || anyGlob([]string{"testdata/**"}, "a/testdata/x") {
		t.Error("glob matching")
	}
}
