package knowledge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// goChunks cuts Go source per top-level declaration, found by go/parser:
// each function, method (with its receiver: "func (*Reader) Read"), type,
// and const/var/import group is one chunk from its doc comment to its
// end; the package clause and anything before the first declaration is
// one chunk. A declaration over maxTokens is cut at blank lines, keeping
// its name. A file that does not parse falls back to the brace heuristic.
func goChunks(text string, lines []string, maxTokens int) []Chunk {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return codeChunks(langC, lines, maxTokens)
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	var out []Chunk
	prevEnd := 0
	header := "package " + f.Name.Name
	for _, d := range f.Decls {
		start, end := line(d.Pos()), line(d.End())
		var name string
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				start = line(d.Doc.Pos())
			}
			name = "func " + d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				name = "func (" + exprString(d.Recv.List[0].Type) + ") " + d.Name.Name
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				start = line(d.Doc.Pos())
			}
			name = genName(d)
		}
		if start <= prevEnd {
			start = prevEnd + 1
		}
		if len(out) == 0 && start > 1 {
			out = append(out, mk(header, 1, start-1))
		}
		out = append(out, paragraphChunks(lines, start, end, name, maxTokens)...)
		prevEnd = end
	}
	if len(out) == 0 {
		out = append(out, mk(header, 1, len(lines)))
	}
	return out
}

// genName names a const, var, type or import declaration by its first
// name ("type Reader", "const (MaxSize …)").
func genName(d *ast.GenDecl) string {
	kw := d.Tok.String()
	if d.Tok == token.IMPORT {
		return "import"
	}
	var names []string
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			names = append(names, s.Name.Name)
		case *ast.ValueSpec:
			for _, n := range s.Names {
				names = append(names, n.Name)
			}
		}
	}
	switch {
	case len(names) == 0:
		return kw
	case len(names) == 1 && !d.Lparen.IsValid():
		return kw + " " + names[0]
	default:
		return kw + " (" + names[0] + " …)"
	}
}

// exprString renders a receiver type: T, *T, T[K], *T[K, V].
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.IndexExpr:
		return exprString(e.X) + "[" + exprString(e.Index) + "]"
	case *ast.IndexListExpr:
		var ps []string
		for _, i := range e.Indices {
			ps = append(ps, exprString(i))
		}
		return exprString(e.X) + "[" + strings.Join(ps, ", ") + "]"
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.ParenExpr:
		return exprString(e.X)
	}
	return "?"
}
