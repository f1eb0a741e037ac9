package embed

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultSIFA is the default SIF smoothing parameter a.
const DefaultSIFA = 1e-3

// zipfShift is q in the Zipf–Mandelbrot law p(rank) ∝ 1/(rank+q).
const zipfShift = 2.7

// Limits on the header of a word-vector file.
const (
	maxWords = 1 << 27
	maxDim   = 4096
)

// componentWords is how many of the most frequent words enter the estimate
// of the common component. Its cost grows as words·dim², and the rarer
// words carry little probability each; the 50,000-word GloVe file is used
// whole. (A variable for tests.)
var componentWords = 100_000

// powerIterations is the fixed number of power iterations used to find the
// common component.
const powerIterations = 100

// SIFOptions tunes LoadWordVectorsWith.
type SIFOptions struct {
	// A is the smoothing parameter a of the SIF weight a/(a+p(w)); 0 means
	// DefaultSIFA. Smaller values down-weight frequent words more. Model()
	// does not record it: keep it fixed for a given vector store.
	A float64
}

// SIF is a local Embedder over a word-vector file: smooth inverse frequency
// weighted averages of word vectors with the common component removed
// (Arora, Liang and Ma, ICLR 2017).
//
// Unigram probabilities are not read from a corpus: the file is assumed to
// be sorted by descending frequency (GloVe and word2vec convention) and
// p(w) follows a Zipf–Mandelbrot law in the 1-based rank r of w,
// p ∝ 1/(r+2.7), normalised over the vocabulary.
//
// A sentence s becomes
//
//	v(s) = (1/n) Σ_{w∈s} a/(a+p(w)) · v(w)
//
// over its n in-vocabulary tokens, then v ← v − (u·v)u, then v/|v|. The
// paper estimates u as the first singular vector of the embeddings of the
// sentences of a corpus. There is no corpus here, so u is estimated once at
// load time from the vocabulary as a stand-in for one: it is the first
// principal component (uncentred, as in the paper) of the SIF-weighted word
// vectors x(w) = a/(a+p(w)) · v(w), each weighted by its probability p(w),
// i.e. the top eigenvector of C = Σ_w p(w) x(w) x(w)ᵀ — the second-moment
// matrix of the weighted words a corpus would average together (for files
// of more than 100,000 words, the sum runs over the 100,000 most frequent).
// It is found by power iteration with a fixed start vector and a fixed
// iteration count (100; on GloVe it converges in about 20), so the same file
// always gives the same u and the same embeddings.
//
// A SIF is immutable after loading and safe for concurrent use.
type SIF struct {
	model  string
	dim    int
	index  map[string]int32 // lowercased word -> row (first occurrence wins)
	vecs   []float32        // row-major, one row per line of the file
	weight []float32        // a/(a+p(w)) per row
	u      []float64        // unit common component, or all zeros
}

var _ Embedder = (*SIF)(nil)

// LoadWordVectors loads a word2vec text file (plain or gzip) with default
// options. See LoadWordVectorsWith.
func LoadWordVectors(path string) (*SIF, error) {
	return LoadWordVectorsWith(path, SIFOptions{})
}

// LoadWordVectorsWith loads a word-vector file in word2vec text format: a
// header line "<count> <dim>", then one line "word v1 ... vdim" per word,
// most frequent words first. The file may be gzip-compressed (recognised
// by its magic bytes, whatever its name). Words are lowercased; when two
// words collide the earlier one wins. Errors name the offending line.
func LoadWordVectorsWith(path string, opts SIFOptions) (*SIF, error) {
	a := opts.A
	if a == 0 {
		a = DefaultSIFA
	}
	if !(a > 0) || math.IsInf(a, 0) {
		return nil, fmt.Errorf("embed: SIF option A = %v: want a positive number", opts.A)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("embed: loading word vectors: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("embed: loading word vectors %s: %w", path, err)
		}
		// Decompress on another goroutine while this one parses.
		pr := newPrefetchReader(zr, 4, 256<<10)
		defer pr.Close()
		r = pr
	}
	s, err := parseWordVectors(r, a)
	if err != nil {
		return nil, fmt.Errorf("embed: loading word vectors %s: %w", path, err)
	}
	s.model = "glove-sif:" + strings.TrimSuffix(filepath.Base(path), ".gz")
	return s, nil
}

// Model returns "glove-sif:" and the file's base name without ".gz".
func (s *SIF) Model() string { return s.model }

// Dim returns the dimension announced by the file's header.
func (s *SIF) Dim() int { return s.dim }

// Len returns the number of word vectors loaded.
func (s *SIF) Len() int { return len(s.weight) }

// CommonComponent returns a copy of the unit vector u removed from every
// embedding (all zeros if the vectors have none).
func (s *SIF) CommonComponent() []float32 {
	out := make([]float32, s.dim)
	for i, x := range s.u {
		out[i] = float32(x)
	}
	return out
}

// Embed embeds each text; a text without any in-vocabulary token gets the
// zero vector.
func (s *SIF) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	back := make([]float32, len(texts)*s.dim)
	acc := make([]float64, s.dim)
	buf := make([]byte, 0, 64)
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := back[i*s.dim : (i+1)*s.dim : (i+1)*s.dim]
		buf = s.embed(t, acc, buf, v)
		out[i] = v
	}
	return out, nil
}

// embed writes the embedding of text to dst, using acc and buf as scratch
// space; it returns buf for reuse.
func (s *SIF) embed(text string, acc []float64, buf []byte, dst []float32) []byte {
	clear(acc)
	n := 0
	var tok []byte
	for i := 0; ; {
		tok, i = nextToken(text, i, buf)
		if tok == nil {
			break
		}
		buf = tok
		row, ok := s.index[string(tok)]
		if !ok {
			continue
		}
		n++
		w := float64(s.weight[row])
		vec := s.vecs[int(row)*s.dim : int(row+1)*s.dim]
		acc := acc[:len(vec)]
		for j, x := range vec {
			acc[j] += w * float64(x)
		}
	}
	if n == 0 {
		clear(dst)
		return buf
	}
	// The 1/n factor does not change the direction but keeps the
	// intermediate values on the scale the paper uses.
	inv := 1 / float64(n)
	var proj float64
	for j := range acc {
		acc[j] *= inv
		proj += s.u[j] * acc[j]
	}
	var ss float64
	for j := range acc {
		acc[j] -= proj * s.u[j]
		ss += acc[j] * acc[j]
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		clear(dst)
		return buf
	}
	norm := 1 / math.Sqrt(ss)
	for j := range dst {
		dst[j] = float32(acc[j] * norm)
	}
	return buf
}

// nextToken returns the next token of s at or after byte offset i,
// lowercased into buf (reusing its storage), and the offset just past it;
// tok is nil when s has no more tokens. Tokens are maximal runs of letters
// and digits (any script); combining marks stay with the letter they
// follow, so words in scripts that use them are not cut apart. Everything
// else, apostrophes included, separates tokens.
func nextToken(s string, i int, buf []byte) (tok []byte, next int) {
	buf = buf[:0]
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				buf = append(buf, c)
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+('a'-'A'))
			default:
				if len(buf) > 0 {
					return buf, i + 1
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		case unicode.IsMark(r) && len(buf) > 0:
			buf = utf8.AppendRune(buf, r)
		default:
			if len(buf) > 0 {
				return buf, i + size
			}
		}
		i += size
	}
	if len(buf) > 0 {
		return buf, i
	}
	return nil, i
}

// lineReader reads lines without allocating per line.
type lineReader struct {
	br   *bufio.Reader
	long []byte // holds lines longer than br's buffer
	n    int    // 1-based number of the last line returned
}

// next returns the next line without its line ending, or io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	line, err := lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.long = append(lr.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, line...)
		}
		line = lr.long
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("line %d: reading: %w", lr.n+1, err)
	}
	if err == io.EOF && len(line) == 0 {
		return nil, io.EOF
	}
	lr.n++
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, nil
}

// lineBufferSize is the bufio buffer of the parser (a variable so that
// tests can exercise lines longer than it).
var lineBufferSize = 1 << 20

// parseWordVectors parses the word2vec text format and computes the SIF
// weights and the common component.
func parseWordVectors(r io.Reader, a float64) (*SIF, error) {
	lr := &lineReader{br: bufio.NewReaderSize(r, lineBufferSize)}
	line, err := lr.next()
	if err == io.EOF {
		return nil, errors.New("line 1: empty file, want a header \"<count> <dim>\"")
	}
	if err != nil {
		return nil, err
	}
	count, dim, ok := parseHeader(line)
	if !ok {
		return nil, fmt.Errorf("line 1: bad header %q, want \"<count> <dim>\" with 1 ≤ count ≤ %d and 1 ≤ dim ≤ %d", clip(line), maxWords, maxDim)
	}

	// Zipf–Mandelbrot normaliser over the announced vocabulary.
	var z float64
	for r := count; r >= 1; r-- {
		z += 1 / (float64(r) + zipfShift)
	}

	capRows := min(count, (1<<26)/dim) // preallocate at most 256 MiB on the header's word
	s := &SIF{
		dim:    dim,
		index:  make(map[string]int32, capRows),
		vecs:   make([]float32, 0, capRows*dim),
		weight: make([]float32, 0, capRows),
	}
	// The second-moment matrix C = Σ p(w) x(w) x(w)ᵀ is accumulated in
	// blocks: xt holds, transposed, √p·x of up to gramBlock words.
	cov := make([]float64, dim*dim)
	xt := make([]float64, dim*gramBlock)
	inBlock := 0
	var words []byte // all words, lowercased, back to back
	var wordEnds []int

	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		word, rest := field(line)
		if word == nil {
			continue // blank line
		}
		row := len(s.weight)
		if row == count {
			return nil, fmt.Errorf("line %d: more vectors than the %d announced by the header", lr.n, count)
		}
		rank := row + 1
		p := 1 / (float64(rank) + zipfShift) / z
		w := a / (a + p)
		sw := math.Sqrt(p) * w
		if s.vecs, err = appendValues(s.vecs, rest, dim, lr.n, word); err != nil {
			return nil, err
		}
		s.weight = append(s.weight, float32(w))
		if row < componentWords {
			for j, f := range s.vecs[len(s.vecs)-dim:] {
				xt[j*gramBlock+inBlock] = sw * float64(f)
			}
			if inBlock++; inBlock == gramBlock {
				addGram(cov, xt, dim, gramBlock, inBlock)
				inBlock = 0
			}
		}
		words = appendLower(words, word)
		wordEnds = append(wordEnds, len(words))
	}
	if len(s.weight) != count {
		return nil, fmt.Errorf("line %d: file ends after %d vectors, the header announces %d", lr.n, len(s.weight), count)
	}
	addGram(cov, xt, dim, gramBlock, inBlock)

	s.indexWords(words, wordEnds)
	s.u = topEigenvector(cov, dim)
	return s, nil
}

// appendValues appends the dim values of word's vector, the rest of line
// n after the word, to vecs.
func appendValues(vecs []float32, rest []byte, dim, n int, word []byte) ([]float32, error) {
	k := 0
	for {
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			break
		}
		if k == dim {
			return nil, fmt.Errorf("line %d: word %q has more than %d values", n, clip(word), dim)
		}
		f, m, ok := parseFloat32(rest)
		if !ok {
			return nil, fmt.Errorf("line %d: value %d of word %q is not a finite number: %q", n, k+1, clip(word), clip(rest[:m]))
		}
		rest = rest[m:]
		vecs = append(vecs, f)
		k++
	}
	if k != dim {
		return nil, fmt.Errorf("line %d: word %q has %d values, want %d", n, clip(word), k, dim)
	}
	return vecs, nil
}

// indexWords indexes the words, lowercased back to back in words and
// ending at wordEnds, by row; a word listed twice keeps its first (most
// frequent) row. The words share one string.
func (s *SIF) indexWords(words []byte, wordEnds []int) {
	all := string(words)
	from := 0
	for row, end := range wordEnds {
		w := all[from:end]
		from = end
		if _, dup := s.index[w]; !dup {
			s.index[w] = int32(row)
		}
	}
}

// gramBlock is the number of words whose outer products addGram adds at
// once.
const gramBlock = 64

// addGram adds Σ_k t_k t_kᵀ to the upper triangle of the d×d matrix c,
// where t_k is column k < n of t, a d×stride row-major matrix. It works on
// 2×4 tiles of c with the sums held in registers, which makes it several
// times faster than adding one outer product at a time. Entries below the
// diagonal may be touched too; they are meaningless.
func addGram(c, t []float64, d, stride, n int) {
	if n == 0 {
		return
	}
	col := func(i int) []float64 { return t[i*stride : i*stride+n] }
	for i := 0; i < d; i += 2 {
		for j := i &^ 3; j < d; j += 4 {
			if i+2 > d || j+4 > d { // ragged edge: one entry at a time
				for ii := i; ii < min(i+2, d); ii++ {
					for jj := j; jj < min(j+4, d); jj++ {
						a, b := col(ii), col(jj)
						var sum float64
						for k := range a {
							sum += a[k] * b[k]
						}
						c[ii*d+jj] += sum
					}
				}
				continue
			}
			a0, a1 := col(i), col(i+1)
			b0, b1, b2, b3 := col(j), col(j+1), col(j+2), col(j+3)
			a1, b0, b1, b2, b3 = a1[:len(a0)], b0[:len(a0)], b1[:len(a0)], b2[:len(a0)], b3[:len(a0)]
			var s00, s01, s02, s03, s10, s11, s12, s13 float64
			for k, x0 := range a0 {
				x1 := a1[k]
				y0, y1, y2, y3 := b0[k], b1[k], b2[k], b3[k]
				s00 += x0 * y0
				s01 += x0 * y1
				s02 += x0 * y2
				s03 += x0 * y3
				s10 += x1 * y0
				s11 += x1 * y1
				s12 += x1 * y2
				s13 += x1 * y3
			}
			r0 := c[i*d+j : i*d+j+4]
			r1 := c[(i+1)*d+j : (i+1)*d+j+4]
			r0[0] += s00
			r0[1] += s01
			r0[2] += s02
			r0[3] += s03
			r1[0] += s10
			r1[1] += s11
			r1[2] += s12
			r1[3] += s13
		}
	}
}

// topEigenvector returns the unit eigenvector of the largest eigenvalue of
// the symmetric positive semi-definite d×d matrix whose upper triangle is
// in c, by power iteration from a fixed start vector for a fixed number of
// iterations. Its sign is chosen so that its largest component (in
// magnitude) is positive. A zero matrix gives the zero vector.
func topEigenvector(c []float64, d int) []float64 {
	for i := range d {
		for j := range i {
			c[i*d+j] = c[j*d+i]
		}
	}
	// Fixed start: all components equal but slightly tilted, so that it is
	// not orthogonal to simple axis-aligned or antisymmetric structure.
	u := make([]float64, d)
	for i := range u {
		u[i] = 1 + float64(i+1)/float64(4*d)
	}
	if !normalize64(u) {
		return u
	}
	y := make([]float64, d)
	for range powerIterations {
		for i := range d {
			row := c[i*d : i*d+d]
			var sum float64
			for j, cij := range row {
				sum += cij * u[j]
			}
			y[i] = sum
		}
		if !normalize64(y) {
			clear(u)
			return u
		}
		u, y = y, u
	}
	big := 0
	for i := range u {
		if math.Abs(u[i]) > math.Abs(u[big]) {
			big = i
		}
	}
	if u[big] < 0 {
		for i := range u {
			u[i] = -u[i]
		}
	}
	return u
}

func normalize64(v []float64) bool {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		return false
	}
	inv := 1 / math.Sqrt(ss)
	for i := range v {
		v[i] *= inv
	}
	return true
}

// parseHeader parses "<count> <dim>".
func parseHeader(line []byte) (count, dim int, ok bool) {
	a, rest := field(line)
	b, rest := field(rest)
	if extra, _ := field(rest); a == nil || b == nil || extra != nil {
		return 0, 0, false
	}
	count, err1 := strconv.Atoi(string(a))
	dim, err2 := strconv.Atoi(string(b))
	if err1 != nil || err2 != nil || count <= 0 || dim <= 0 || count > maxWords || dim > maxDim {
		return 0, 0, false
	}
	return count, dim, true
}

// field splits off the first field of b separated by spaces or tabs; f is
// nil when b holds only separators.
func field(b []byte) (f, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == len(b) {
		return nil, nil
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const max = 40
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "..."
}

var float32pow10 = [...]float32{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// parseFloat32 parses the number at the start of b, up to the next space,
// tab or the end of b, and returns it with the number of bytes it spans.
// The value is exactly what strconv.ParseFloat(token, 32) gives. Plain
// decimals with up to 7 significant digits (GloVe and word2vec files print 4
// to 6 decimals) take a fast path that does not allocate: the mantissa
// (< 2^24) and the power of ten (≤ 10^10) are both exact in float32, so one
// correctly rounded division gives the correctly rounded result. Anything
// else (exponents, long mantissas) goes to strconv. ok is false for
// anything that is not a finite number.
func parseFloat32(b []byte) (f float32, n int, ok bool) {
	i := 0
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var mant uint32
	sig, frac, ndig := 0, 0, 0
	dot, slow := false, false
scan:
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case '0' <= c && c <= '9':
			ndig++
			if dot {
				frac++
			}
			if mant != 0 || c != '0' {
				sig++
				mant = mant*10 + uint32(c-'0') // may wrap once sig > 9; then slow is set
			}
		case c == '.' && !dot:
			dot = true
		case c == ' ' || c == '\t':
			break scan
		default:
			slow = true // exponent, inf, nan, hex, garbage
		}
	}
	if slow || sig > 7 || ndig == 0 || frac >= len(float32pow10) {
		f, ok := parseFloat32Slow(b[:i])
		return f, i, ok
	}
	f = float32(mant) / float32pow10[frac]
	if neg {
		f = -f
	}
	return f, i, true
}

func parseFloat32Slow(b []byte) (float32, bool) {
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return float32(f), true
}

// prefetchReader reads its source on a separate goroutine, a few buffers
// ahead of the consumer, so that decompression and parsing overlap.
type prefetchReader struct {
	full   chan []byte
	free   chan []byte
	done   chan struct{}
	exited chan struct{}
	err    error // the source's final error; read after full is closed
	cur    []byte
	curBuf []byte
	closed bool
}

func newPrefetchReader(src io.Reader, nbuf, size int) *prefetchReader {
	p := &prefetchReader{
		full:   make(chan []byte, nbuf),
		free:   make(chan []byte, nbuf),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for range nbuf {
		p.free <- make([]byte, size)
	}
	go p.fill(src)
	return p
}

func (p *prefetchReader) fill(src io.Reader) {
	defer close(p.exited)
	defer close(p.full)
	for {
		var buf []byte
		select {
		case buf = <-p.free:
		case <-p.done:
			return
		}
		// Fill buf, keeping the source's own error: io.ReadFull would
		// turn a truncated gzip stream's io.ErrUnexpectedEOF into success.
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var m int
			m, err = src.Read(buf[n:])
			n += m
		}
		if n > 0 {
			select {
			case p.full <- buf[:n]:
			case <-p.done:
				return
			}
		}
		if err != nil {
			p.err = err
			return
		}
	}
}

func (p *prefetchReader) Read(b []byte) (int, error) {
	if len(p.cur) == 0 {
		if p.curBuf != nil {
			p.free <- p.curBuf[:cap(p.curBuf)]
			p.curBuf = nil
		}
		buf, ok := <-p.full
		if !ok {
			return 0, p.err
		}
		p.cur, p.curBuf = buf, buf
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// Close stops the reading goroutine and waits for it to exit.
func (p *prefetchReader) Close() {
	if p.closed {
		return
	}
	p.closed = true
	close(p.done)
	<-p.exited
}

// appendLower appends the lowercase form of word to dst.
func appendLower(dst, word []byte) []byte {
	for _, c := range word {
		if c >= utf8.RuneSelf {
			return append(dst, bytes.ToLower(word)...)
		}
	}
	for _, c := range word {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
