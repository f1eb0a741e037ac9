package knowledge

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/memgate/memgate/internal/memory"
)

// The code benchmark (memgate bench code): Go's standard library as a
// corpus every machine with Go has. Query: the first sentence of an
// exported function's, method's or type's doc comment. Target: the chunk
// of that declaration, whose doc comment is stripped from the indexed
// text (so the query is not in it verbatim). Packages whose import path
// starts with a-m are the tuning group, n-z the held-out group.

// CodeQuery is one benchmark question.
type CodeQuery struct {
	Query   string `json:"query"`
	URI     string `json:"uri"`
	Heading string `json:"heading"`
	Package string `json:"package"`
	Group   string `json:"group"` // "a-m" or "n-z"
}

// CodeCorpus is the stripped source files and their questions.
type CodeCorpus struct {
	Docs    []Document
	Queries []CodeQuery
}

// BuildCodeCorpus reads the Go files of the standard library under src
// ($(go env GOROOT)/src): no tests, testdata, cmd or vendor.
func BuildCodeCorpus(src string) (CodeCorpus, error) {
	var c CodeCorpus
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "vendor" || rel == "cmd" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		text, qs := stripDocs(string(data))
		if _, _, err := Split(GoSource, []byte(text), 0); err != nil {
			return nil // not ingestible (e.g. one very long line): not in the corpus
		}
		uri := "go:" + rel
		for _, q := range qs {
			q.URI, q.Package = uri, pkg
			q.Group = "n-z"
			if pkg[0] <= 'm' {
				q.Group = "a-m"
			}
			c.Queries = append(c.Queries, q)
		}
		c.Docs = append(c.Docs, Document{URI: uri, MediaType: GoSource, Content: []byte(text)})
		return nil
	})
	return c, err
}

// stripDocs removes the doc comments of exported declarations and returns
// a question for each: its first sentence, with the chunk heading the Go
// chunker gives the declaration.
func stripDocs(src string) (string, []CodeQuery) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return src, nil
	}
	lines := strings.Split(src, "\n")
	drop := map[int]bool{}
	var qs []CodeQuery
	for _, d := range f.Decls {
		var doc *ast.CommentGroup
		var name string
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			doc, name = d.Doc, "func "+d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				recv := exprString(d.Recv.List[0].Type)
				if !ast.IsExported(strings.TrimLeft(strings.SplitN(recv, "[", 2)[0], "*")) {
					continue
				}
				name = "func (" + recv + ") " + d.Name.Name
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE || d.Lparen.IsValid() || len(d.Specs) != 1 {
				continue
			}
			ts := d.Specs[0].(*ast.TypeSpec)
			if !ts.Name.IsExported() {
				continue
			}
			doc, name = d.Doc, "type "+ts.Name.Name
		}
		if doc == nil {
			continue
		}
		q := firstSentence(doc.Text())
		if len(strings.Fields(q)) < 4 {
			continue
		}
		for l := fset.Position(doc.Pos()).Line; l <= fset.Position(doc.End()).Line; l++ {
			drop[l] = true
		}
		qs = append(qs, CodeQuery{Query: q, Heading: name})
	}
	var out []string
	for i, l := range lines {
		if !drop[i+1] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n"), qs
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' {
			return s[:i+1]
		}
	}
	return s
}

// CodeScore is one method's figures on one package group.
type CodeScore struct {
	Method     string  `json:"method"`
	Group      string  `json:"group"`
	Queries    int     `json:"queries"`
	RecallAt1  float64 `json:"recall_at_1"`
	RecallAt10 float64 `json:"recall_at_10"`
	MRR        float64 `json:"mrr"`
}

// Scorer accumulates ranks (1-based, 0: not found in the list).
type Scorer struct {
	n, at1, at10 int
	rr           float64
}

// Add counts one question's rank.
func (s *Scorer) Add(rank int) {
	s.n++
	if rank == 1 {
		s.at1++
	}
	if rank >= 1 && rank <= 10 {
		s.at10++
	}
	if rank > 0 {
		s.rr += 1 / float64(rank)
	}
}

// Score returns the figures.
func (s *Scorer) Score(method, group string) CodeScore {
	d := float64(max(s.n, 1))
	return CodeScore{Method: method, Group: group, Queries: s.n, RecallAt1: float64(s.at1) / d, RecallAt10: float64(s.at10) / d, MRR: s.rr / d}
}

// SearchRank is the rank of q's target among hits of a knowledge search
// (0 when absent from the top k).
// weights, when set, override fusion weights (tuning).
func (s *Service) SearchRank(ctx context.Context, p memory.Principal, q CodeQuery, signals []string, weights map[string]float64, k int) (int, error) {
	res, err := s.Search(ctx, p, SearchRequest{Query: q.Query, K: k, Signals: signals, Weights: weights})
	if err != nil {
		return 0, err
	}
	rid := ResourceID(memory.Scope{}, q.URI)
	for i, h := range res.Results {
		if h.ResourceID == rid && h.Heading == q.Heading {
			return i + 1, nil
		}
	}
	return 0, nil
}

// BM25 is plain Okapi BM25 (k1 1.2, b 0.75) over chunks, the baseline.
type BM25 struct {
	docs  []bm25Doc
	df    map[string]int
	avgdl float64
	post  map[string][]int
}

type bm25Doc struct {
	uri, heading string
	tf           map[string]int
	n            int
}

func bm25Tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// NewBM25 indexes the chunks of docs as the Go chunker cuts them.
func NewBM25(docs []Document) *BM25 {
	b := &BM25{df: map[string]int{}, post: map[string][]int{}}
	total := 0
	for _, d := range docs {
		_, cs, err := Split(d.MediaType, d.Content, 0)
		if err != nil {
			continue
		}
		for _, c := range cs {
			tf := map[string]int{}
			toks := bm25Tokens(c.Text)
			for _, t := range toks {
				tf[t]++
			}
			id := len(b.docs)
			for t := range tf {
				b.df[t]++
				b.post[t] = append(b.post[t], id)
			}
			b.docs = append(b.docs, bm25Doc{uri: d.URI, heading: c.Heading, tf: tf, n: len(toks)})
			total += len(toks)
		}
	}
	b.avgdl = float64(total) / float64(max(len(b.docs), 1))
	return b
}

// Rank is the rank of q's target in BM25's top k (0 when absent).
func (b *BM25) Rank(q CodeQuery, k int) int {
	scores := map[int]float64{}
	n := float64(len(b.docs))
	seen := map[string]bool{}
	for _, t := range bm25Tokens(q.Query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		df := float64(b.df[t])
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, id := range b.post[t] {
			d := b.docs[id]
			f := float64(d.tf[t])
			scores[id] += idf * f * 2.2 / (f + 1.2*(0.25+0.75*float64(d.n)/b.avgdl))
		}
	}
	ids := make([]int, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if scores[ids[i]] != scores[ids[j]] {
			return scores[ids[i]] > scores[ids[j]]
		}
		return ids[i] < ids[j]
	})
	for i, id := range ids {
		if i >= k {
			break
		}
		if d := b.docs[id]; d.uri == q.URI && d.heading == q.Heading {
			return i + 1
		}
	}
	return 0
}

// IngestDocs ingests documents with workers at once (0: DefaultWorkers)
// and returns the chunks written; the first error stops it.
func (s *Service) IngestDocs(ctx context.Context, p memory.Principal, docs []Document, workers int, progress func(done int)) (int, error) {
	var done, n int
	err := ingestEach(ctx, docs, workers, func(ctx context.Context, d Document) (Result, error) {
		return s.Ingest(ctx, p, d)
	}, func(_ Document, res Result, err error) error {
		if err != nil {
			return err
		}
		n += res.Added + res.Changed + res.RetiredN
		done++
		if progress != nil {
			progress(done)
		}
		return nil
	})
	return n, err
}
