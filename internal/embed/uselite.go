package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// USELiteModel is the Model() id of the USE Lite embedder.
const USELiteModel = "use-lite"

// useMaxTextBytes bounds how much of a text with few spaces is tokenised
// (see USELite).
const useMaxTextBytes = 8 << 10

// USELite is a local, network-free sentence embedder: a forward pass in
// Go (no cgo, no runtime) of the Universal Sentence Encoder Lite model
// (Cer et al., 2018) as published for TensorFlow.js — a graph model (model.json with its weight
// shards) and the 8,000-piece SentencePiece vocabulary (vocab.json).
//
// # Architecture
//
// The graph was read node by node and is reproduced here as a
// hand-written forward pass (no graph interpreter):
//
//   - Tokenisation: SentencePiece unigram segmentation (see useTokenizer),
//     ids clipped to the first 128 tokens (the graph's ClipToMaxLength).
//   - Input: x_t = 2·E[id_t] + timing(t), E the 8002×256 embedding table
//     and timing(t) the sinusoidal signal [sin(t·f_i), cos(t·f_i)] over
//     128 geometric frequencies from 1 to 1e-4. (The graph adds the
//     embeddings twice: once in the timing-signal branch and once more as
//     the residual input of the stack.)
//   - Two pre-norm transformer layers. Each: layer norm (ε = 1e-6), a fused
//     Q|K|V projection, 4 attention heads with queries scaled by 1/√depth,
//     softmax attention, an output projection and a residual connection,
//     then layer norm, a ReLU feed-forward block of width 1536 and a
//     second residual. Layer 0 maps width 256 to 512: its heads have
//     depth 64, its residual goes through a dense 256→512 projection; layer
//     1 stays at 512 with heads of depth 128. There is no final layer norm.
//   - Pooling: the mean of the token states, then a 512→512 dense layer
//     with tanh, then L2 normalisation (with the graph's ε = 1e-12).
//
// Matrix products run on Go assembly kernels on amd64 (AVX-512 where the
// CPU and OS have it, else AVX2+FMA) and on a portable Go kernel elsewhere
// or with the purego build tag. Token ids match the TensorFlow.js
// package's tokenizer exactly and vectors match its runtime to float32
// rounding (|diff| ≤ 6e-7, cosine ≥ 0.9999999 on the texts tested).
//
// # Texts
//
// The model sees at most the first 128 tokens of a text; the rest is
// ignored. Only the part of a text that can reach those tokens is read:
// up to its 128th space (each space starts a new token, so this changes
// nothing), and at most the first 8 KiB of a text with fewer spaces (for
// such a text the last tokens may differ from the reference's).
//
// An empty text has no tokens; like the reference, it gets the model's
// vector for an empty sequence (the mean of no states is the zero vector,
// which goes through the tanh layer) — a fixed unit vector, not zero.
//
// A USELite is immutable after loading and safe for concurrent use. Embed
// runs the texts of one call on up to GOMAXPROCS goroutines.
type USELite struct {
	model  string // Model(); empty means USELiteModel
	tok    *useTokenizer
	cutOK  bool // texts may be cut at their maxLen-th space
	maxLen int

	dIn     int       // embedding width (256)
	dim     int       // output width (512)
	emb     []float32 // vocabulary rows × dIn
	embRows int
	timing  []float32 // maxLen × dIn
	lnEps   float32
	layers  []useLayer
	dense   *useMat // final tanh layer
	denseB  []float32
	l2Eps   float64

	// Largest sizes over the layers, for the scratch buffers.
	maxD, maxQKV, maxFF, maxHead int

	work sync.Pool // *useWork
}

var _ Embedder = (*USELite)(nil)

// useLayer is one transformer layer.
type useLayer struct {
	din, dout, dff int
	heads, depth   int
	qScale         float32
	ln1G, ln1B     []float32 // din
	qkv            *useMat   // din × 3·din
	qkvB           []float32
	out            *useMat // din × dout
	outB           []float32
	res            *useMat // din × dout, nil when the residual is the identity
	resB           []float32
	ln2G, ln2B     []float32 // dout
	ff1            *useMat   // dout × dff
	ff1B           []float32
	ff2            *useMat // dff × dout
	ff2B           []float32
}

// Names of the graph's weights.
const (
	useApply = "module_apply_default/Encoder_en/KonaTransformer/"
	useVars  = "module/Encoder_en/KonaTransformer/Encode/"
)

// LoadUSELite loads the TensorFlow.js USE Lite model from dir, which holds
// model.json, its weight shards and vocab.json — or has them in dir/dist.
func LoadUSELite(dir string) (*USELite, error) {
	modelDir, vocabPath, err := useLitePaths(dir)
	if err != nil {
		return nil, err
	}
	vocab, err := os.ReadFile(vocabPath)
	if err != nil {
		return nil, fmt.Errorf("embed: loading USE Lite: %w", err)
	}
	tok, err := parseUSEVocab(vocab)
	if err != nil {
		return nil, fmt.Errorf("embed: loading USE Lite %s: %w", vocabPath, err)
	}
	w, err := readUSEWeights(modelDir)
	if err != nil {
		return nil, fmt.Errorf("embed: loading USE Lite %s: %w", modelDir, err)
	}
	m, err := buildUSELite(w, tok)
	if err != nil {
		return nil, fmt.Errorf("embed: loading USE Lite %s: %w", modelDir, err)
	}
	return m, nil
}

// Model returns "use-lite", or BuiltinUSELiteModel for the built-in
// (int8) weights.
func (m *USELite) Model() string {
	if m.model != "" {
		return m.model
	}
	return USELiteModel
}

// Dim returns 512.
func (m *USELite) Dim() int { return m.dim }

// MaxTokens returns the number of leading tokens of a text the model sees
// (128).
func (m *USELite) MaxTokens() int { return m.maxLen }

// Embed returns one unit vector per text. It checks ctx before each text.
func (m *USELite) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	back := make([]float32, len(texts)*m.dim)
	for i := range out {
		out[i] = back[i*m.dim : (i+1)*m.dim : (i+1)*m.dim]
	}
	workers := min(workerLimit(ctx, runtime.GOMAXPROCS(0)), len(texts))
	if workers <= 1 {
		ws := m.getWork()
		defer m.work.Put(ws)
		for i, t := range texts {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m.embedOne(t, ws, out[i])
		}
		return out, nil
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := m.getWork()
			defer m.work.Put(ws)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(texts) || ctx.Err() != nil {
					return
				}
				m.embedOne(texts[i], ws, out[i])
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// tokens returns the ids the model sees for text: at most maxLen.
func (m *USELite) tokens(text string, st *useTokState) []int32 {
	text = m.cut(text)
	ids := m.tok.encode(text, st)
	if len(ids) > m.maxLen {
		ids = ids[:m.maxLen]
	}
	return ids
}

// cut returns the prefix of text that determines its first maxLen tokens.
// Every space becomes a "▁" that starts a token of its own, no piece
// spans one, and NFKC never carries across a space; so the text up to
// its maxLen-th space has at least maxLen tokens, the same as the whole
// text's first ones. Texts with fewer spaces are cut at useMaxTextBytes.
func (m *USELite) cut(text string) string {
	if m.cutOK {
		spaces := 0
		for i := 0; i < len(text); i++ {
			if text[i] == ' ' {
				if spaces++; spaces == m.maxLen {
					return text[:i]
				}
			}
		}
	}
	if len(text) > useMaxTextBytes {
		i := useMaxTextBytes
		for i > 0 && !utf8.RuneStart(text[i]) {
			i--
		}
		text = text[:i]
	}
	return text
}

// useWork is per-goroutine scratch space for one forward pass.
type useWork struct {
	st                     useTokState
	x0, h, qkv, att, y, ff []float32
	scores, keyBuf, valBuf []float32
	keys, vals             useMat
	pool, z                []float32
}

func (m *USELite) getWork() *useWork {
	if ws, ok := m.work.Get().(*useWork); ok {
		return ws
	}
	rows := useRoundUp(m.maxLen, useRowBlock)
	cols := useRoundUp(m.maxLen, usePanel)
	return &useWork{
		x0:     make([]float32, rows*m.dIn),
		h:      make([]float32, rows*m.maxD),
		qkv:    make([]float32, rows*m.maxQKV),
		att:    make([]float32, rows*m.maxD),
		y:      make([]float32, rows*m.maxD),
		ff:     make([]float32, rows*m.maxFF),
		scores: make([]float32, rows*cols),
		keyBuf: make([]float32, m.maxHead*cols),
		valBuf: make([]float32, m.maxLen*m.maxHead),
		pool:   make([]float32, useRowBlock*m.dim),
		z:      make([]float32, useRowBlock*m.dim),
	}
}

func useRoundUp(n, k int) int { return (n + k - 1) / k * k }

// embedOne writes the embedding of text to dst.
func (m *USELite) embedOne(text string, ws *useWork, dst []float32) {
	ids := m.tokens(text, &ws.st)
	T := len(ids)
	pool := ws.pool
	clear(pool)
	if T > 0 {
		m.encodeTokens(ids, ws)
		// Mean over the token states of the last layer.
		d := m.layers[len(m.layers)-1].dout
		acc := pool[:d]
		for t := range T {
			row := ws.y[t*d : (t+1)*d]
			for i, v := range row {
				acc[i] += v
			}
		}
		inv := 1 / float32(T)
		for i := range acc {
			acc[i] *= inv
		}
	}
	z := ws.z
	useGemm(z, m.dim, pool, m.dim, useRowBlock, m.dense, m.denseB, false)
	var ss float64
	for i := range dst {
		v := float32(math.Tanh(float64(z[i])))
		dst[i] = v
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(max(ss, m.l2Eps))
	for i, v := range dst {
		dst[i] = float32(float64(v) * inv)
	}
}

// encodeTokens runs the embedding and the transformer layers; the states
// of the last layer end in ws.y, one row per token.
func (m *USELite) encodeTokens(ids []int32, ws *useWork) {
	T := len(ids)
	P := useRoundUp(T, useRowBlock) // rows computed, T real plus padding
	d0 := m.dIn
	x0 := ws.x0[:P*d0]
	for t, id := range ids {
		e := m.emb[int(id)*d0 : (int(id)+1)*d0]
		tm := m.timing[t*d0 : (t+1)*d0]
		row := x0[t*d0 : (t+1)*d0]
		for i := range row {
			row[i] = e[i] + (e[i] + tm[i])
		}
	}
	clear(x0[T*d0:])

	cur := x0 // the residual stream
	for li := range m.layers {
		L := &m.layers[li]
		h := ws.h[:P*L.din]
		useLayerNorm(h, cur, L.din, P, L.ln1G, L.ln1B, m.lnEps)
		qkv := ws.qkv[:P*3*L.din]
		useGemm(qkv, 3*L.din, h, L.din, P, L.qkv, L.qkvB, false)
		m.attention(L, qkv, T, P, ws)
		y := ws.y[:P*L.dout]
		if L.res != nil {
			useGemm(y, L.dout, cur, L.din, P, L.res, L.resB, false)
		} else if &cur[0] != &y[0] {
			copy(y, cur)
		}
		useGemm(y, L.dout, ws.att, L.din, P, L.out, L.outB, true)

		h = ws.h[:P*L.dout]
		useLayerNorm(h, y, L.dout, P, L.ln2G, L.ln2B, m.lnEps)
		ff := ws.ff[:P*L.dff]
		useGemm(ff, L.dff, h, L.dout, P, L.ff1, L.ff1B, false)
		for i, v := range ff {
			if v < 0 {
				ff[i] = 0
			}
		}
		useGemm(y, L.dout, ff, L.dff, P, L.ff2, L.ff2B, true)
		cur = y
	}
}

// attention computes multi-head self-attention over the T tokens from the
// fused Q|K|V rows in qkv (P rows of 3·din) into ws.att (P rows of din).
// There is no padding inside one text, hence no mask.
func (m *USELite) attention(L *useLayer, qkv []float32, T, P int, ws *useWork) {
	din, dh := L.din, L.depth
	ld := 3 * din
	for r := range P {
		q := qkv[r*ld : r*ld+din]
		for i := range q {
			q[i] *= L.qScale
		}
	}
	cols := useRoundUp(T, usePanel)
	scores := ws.scores[:P*cols]
	keys, vals := &ws.keys, &ws.vals
	for hd := range L.heads {
		// Kᵀ as a packed depth × cols matrix, zero beyond T.
		kp := ws.keyBuf[:dh*cols]
		*keys = useMat{k: dh, n: cols, panels: kp}
		for p := range cols / usePanel {
			panel := kp[p*dh*usePanel : (p+1)*dh*usePanel]
			for c := range usePanel {
				j := p*usePanel + c
				if j >= T {
					for kk := range dh {
						panel[kk*usePanel+c] = 0
					}
					continue
				}
				key := qkv[j*ld+din+hd*dh : j*ld+din+(hd+1)*dh]
				for kk, v := range key {
					panel[kk*usePanel+c] = v
				}
			}
		}
		useGemm(scores, cols, qkv[hd*dh:], ld, P, keys, nil, false)
		for r := range T {
			useSoftmax(scores[r*cols : r*cols+T])
		}
		// V as a packed T × depth matrix.
		*vals = useMat{k: T, n: dh, panels: ws.valBuf[:T*dh]}
		vals.pack(qkv[2*din+hd*dh:], T, dh, ld)
		useGemm(ws.att[hd*dh:], din, scores, cols, P, vals, nil, false)
	}
}

// useSoftmax replaces s with softmax(s).
func useSoftmax(s []float32) {
	mx := s[0]
	for _, v := range s[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range s {
		e := math.Exp(float64(v - mx))
		s[i] = float32(e)
		sum += e
	}
	inv := 1 / sum
	for i, v := range s {
		s[i] = float32(float64(v) * inv)
	}
}

// useLayerNorm normalises each of the rows of x (width d) into dst:
// (x − mean)·(var + eps)^−½·g + b.
func useLayerNorm(dst, x []float32, d, rows int, g, b []float32, eps float32) {
	for r := range rows {
		xr := x[r*d : (r+1)*d]
		or := dst[r*d : (r+1)*d]
		var sum float64
		for _, v := range xr {
			sum += float64(v)
		}
		mean := float32(sum / float64(d))
		var sq float64
		for _, v := range xr {
			dv := float64(v - mean)
			sq += dv * dv
		}
		rs := float32(1 / math.Sqrt(float64(float32(sq/float64(d))+eps)))
		for i, v := range xr {
			or[i] = g[i]*rs*(v-mean) + b[i]
		}
	}
}

// ---- Loading ----

// useTensor is one weight of the graph.
type useTensor struct {
	shape []int
	f     []float32 // float32 weights
	i     []int32   // int32 weights
	used  bool      // read by buildUSELite (the compact form keeps only these)
}

type useWeights map[string]*useTensor

type useManifest struct {
	ModelTopology   json.RawMessage `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string          `json:"name"`
			Shape        []int           `json:"shape"`
			Dtype        string          `json:"dtype"`
			Quantization json.RawMessage `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// useLittleEndian reports whether float32s in memory have the byte order
// of the shards, which can then be copied as they are. (Offsets into the
// shard buffer are multiples of 4, and the buffer is allocated aligned.)
var useLittleEndian = func() bool {
	x := uint32(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// readUSEWeights reads the weights manifest of dir/model.json and the
// shards it names.
func readUSEWeights(dir string) (useWeights, error) {
	data, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		return nil, err
	}
	var man useManifest
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, fmt.Errorf("model.json: %w", err)
	}
	if len(man.WeightsManifest) == 0 {
		return nil, errors.New("model.json: no weightsManifest")
	}
	w := make(useWeights)
	for gi, g := range man.WeightsManifest {
		var buf []byte
		for _, p := range g.Paths {
			if !filepath.IsLocal(p) {
				return nil, fmt.Errorf("model.json: shard path %q is not local", p)
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return nil, err
			}
			if buf == nil {
				buf = b
			} else {
				buf = append(buf, b...)
			}
		}
		off := 0
		for _, spec := range g.Weights {
			if len(spec.Quantization) > 0 && string(spec.Quantization) != "null" {
				return nil, fmt.Errorf("weight %s: quantized weights are not supported", spec.Name)
			}
			n := 1
			for _, s := range spec.Shape {
				if s < 0 || (s > 0 && n > math.MaxInt32/s) {
					return nil, fmt.Errorf("weight %s: bad shape %v", spec.Name, spec.Shape)
				}
				n *= s
			}
			if off+4*n > len(buf) {
				return nil, fmt.Errorf("weight group %d: shards end inside weight %s", gi, spec.Name)
			}
			b := buf[off : off+4*n]
			off += 4 * n
			t := &useTensor{shape: spec.Shape}
			switch spec.Dtype {
			case "float32":
				t.f = make([]float32, n)
				if useLittleEndian && n > 0 {
					copy(t.f, unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n))
					break
				}
				for i := range t.f {
					t.f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
				}
			case "int32":
				t.i = make([]int32, n)
				for i := range t.i {
					t.i[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
				}
			default:
				return nil, fmt.Errorf("weight %s: dtype %q is not supported", spec.Name, spec.Dtype)
			}
			w[spec.Name] = t
		}
		if off != len(buf) {
			return nil, fmt.Errorf("weight group %d: %d bytes of shards, manifest describes %d", gi, len(buf), off)
		}
	}
	return w, nil
}

// floats returns the float32 weight name, checking its shape (a -1
// accepts any size).
func (w useWeights) floats(name string, shape ...int) ([]float32, error) {
	t, ok := w[name]
	if !ok {
		return nil, fmt.Errorf("missing weight %s", name)
	}
	if t.f == nil {
		return nil, fmt.Errorf("weight %s: want float32", name)
	}
	t.used = true
	ok = len(t.shape) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = shape[i] < 0 || shape[i] == t.shape[i]
	}
	if !ok {
		return nil, fmt.Errorf("weight %s: shape %v, want %v", name, t.shape, shape)
	}
	return t.f, nil
}

// scalar returns the scalar weight name, float32 or int32.
func (w useWeights) scalar(name string) (float64, error) {
	t, ok := w[name]
	if !ok {
		return 0, fmt.Errorf("missing weight %s", name)
	}
	t.used = true
	switch {
	case len(t.shape) != 0:
		return 0, fmt.Errorf("weight %s: shape %v, want a scalar", name, t.shape)
	case t.f != nil:
		return float64(t.f[0]), nil
	default:
		return float64(t.i[0]), nil
	}
}

func (w useWeights) has(name string) bool { _, ok := w[name]; return ok }

// buildUSELite assembles the model from its weights.
func buildUSELite(w useWeights, tok *useTokenizer) (*USELite, error) {
	m := &USELite{tok: tok}
	if err := m.buildInput(w); err != nil {
		return nil, err
	}
	eps, err := w.scalar(useApply + "Encode/TransformerStack/Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x")
	if err != nil {
		return nil, err
	}
	m.lnEps = float32(eps)
	heads, err := w.scalar(useApply + "Encode/TransformerStack/Layer_1/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2")
	if err != nil {
		return nil, err
	}
	if err := m.buildLayers(w, int(heads)); err != nil {
		return nil, err
	}
	if err := m.buildOutput(w); err != nil {
		return nil, err
	}
	if m.maxD > len(useZeroBias) || m.maxFF > len(useZeroBias) {
		return nil, fmt.Errorf("layer widths up to %d are not supported", max(m.maxD, m.maxFF))
	}
	m.cutOK = cutsAtSpaces(tok)
	return m, nil
}

// buildInput sets up what comes before the layers: the piece
// embeddings, the maximum length and the timing signal.
func (m *USELite) buildInput(w useWeights) error {
	emb, err := w.floats("module/Embeddings_en", -1, -1)
	if err != nil {
		return err
	}
	m.emb = emb
	m.embRows, m.dIn = w["module/Embeddings_en"].shape[0], w["module/Embeddings_en"].shape[1]
	if len(m.tok.scores) > m.embRows {
		return fmt.Errorf("vocabulary has %d pieces, embeddings only %d rows", len(m.tok.scores), m.embRows)
	}
	if m.dIn%2 != 0 || m.dIn == 0 {
		return fmt.Errorf("embedding width %d is not even", m.dIn)
	}
	maxLen, err := w.scalar(useApply + "ClipToMaxLength/Less/y")
	if err != nil {
		return err
	}
	if maxLen < 1 || maxLen > 4096 {
		return fmt.Errorf("maximum length %v out of range", maxLen)
	}
	m.maxLen = int(maxLen)
	freqs, err := w.floats(useApply+"Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 1, m.dIn/2)
	if err != nil {
		return err
	}
	m.timing = make([]float32, m.maxLen*m.dIn)
	for t := range m.maxLen {
		row := m.timing[t*m.dIn : (t+1)*m.dIn]
		for i, f := range freqs {
			a := float32(t) * f
			row[i] = float32(math.Sin(float64(a)))
			row[i+len(freqs)] = float32(math.Cos(float64(a)))
		}
	}
	return nil
}

// buildLayers builds the transformer layers, as many as the weights hold,
// and notes the widest of their buffers; m.dim is the last one's output
// width.
func (m *USELite) buildLayers(w useWeights, heads int) error {
	din := m.dIn
	for l := 0; w.has(fmt.Sprintf(useVars+"Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0", l)); l++ {
		L, err := buildUSELayer(w, l, din, heads)
		if err != nil {
			return fmt.Errorf("layer %d: %w", l, err)
		}
		m.layers = append(m.layers, L)
		m.maxD = max(m.maxD, L.din, L.dout)
		m.maxQKV = max(m.maxQKV, 3*L.din)
		m.maxFF = max(m.maxFF, L.dff)
		m.maxHead = max(m.maxHead, L.depth)
		din = L.dout
	}
	if len(m.layers) == 0 {
		return errors.New("no transformer layers")
	}
	m.dim = din
	return nil
}

// buildOutput sets up what comes after the layers: the tanh layer and the
// L2 normalisation.
func (m *USELite) buildOutput(w useWeights) error {
	dw, err := w.floats("module/Encoder_en/hidden_layers/tanh_layer_0/weights", m.dim, m.dim)
	if err != nil {
		return err
	}
	if m.denseB, err = w.floats("module/Encoder_en/hidden_layers/tanh_layer_0/bias", m.dim); err != nil {
		return err
	}
	l2, err := w.scalar("module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y")
	if err != nil {
		return err
	}
	if m.dim%usePanel != 0 {
		return fmt.Errorf("output width %d is not a multiple of %d", m.dim, usePanel)
	}
	m.dense = newUSEMat(dw, m.dim, m.dim)
	m.l2Eps = l2
	return nil
}

func buildUSELayer(w useWeights, l, din, heads int) (useLayer, error) {
	L := useLayer{din: din, heads: heads}
	var err error
	get := func(name string, shape ...int) []float32 {
		if err != nil {
			return nil
		}
		f, e := w.floats(name, shape...)
		err = e
		return f
	}
	apply := fmt.Sprintf(useApply+"Encode/Layer_%d/TransformerLayer/", l)
	stack := fmt.Sprintf(useApply+"Encode/TransformerStack/Layer_%d/TransformerLayer/", l)
	vars := fmt.Sprintf(useVars+"Layer_%d/TransformerLayer/", l)

	L.ln1G = get(apply+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", din)
	L.ln1B = get(apply+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", din)
	qkv := get(vars+"MultiheadAttention/qkv_transform_single/kernel/part_0", 1, 1, din, 3*din)
	L.qkvB = get(apply+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*din)
	out := get(vars+"MultiheadAttention/output_transform_single/kernel/part_0", 1, 1, din, -1)
	if err != nil {
		return L, err
	}
	L.dout = w[vars+"MultiheadAttention/output_transform_single/kernel/part_0"].shape[3]
	dout := L.dout
	L.outB = get(apply+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", dout)
	var res []float32
	if w.has(apply + "dense/kernel/ConcatPartitions/concat") {
		res = get(apply+"dense/kernel/ConcatPartitions/concat", din, dout)
		L.resB = get(apply+"dense/bias/ConcatPartitions/concat", dout)
	} else if din != dout {
		return L, fmt.Errorf("width changes from %d to %d without a residual projection", din, dout)
	}
	L.ln2G = get(apply+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", dout)
	L.ln2B = get(apply+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", dout)
	ff1 := get(stack+"FFN/conv1/Tensordot/Reshape_1", dout, -1)
	if err != nil {
		return L, err
	}
	L.dff = w[stack+"FFN/conv1/Tensordot/Reshape_1"].shape[1]
	L.ff1B = get(apply+"FFN/conv1/bias/ConcatPartitions/concat", L.dff)
	ff2 := get(stack+"FFN/conv2/Tensordot/Reshape_1", L.dff, dout)
	L.ff2B = get(apply+"FFN/conv2/bias/ConcatPartitions/concat", dout)
	if err != nil {
		return L, err
	}
	scale, err := w.scalar(stack + "MultiheadAttention/mul/y")
	if err != nil {
		return L, err
	}
	L.qScale = float32(scale)
	if heads < 1 || din%heads != 0 {
		return L, fmt.Errorf("%d heads do not divide width %d", heads, din)
	}
	L.depth = din / heads
	for _, n := range []int{din, dout, L.dff, L.depth} {
		if n%usePanel != 0 {
			return L, fmt.Errorf("width %d is not a multiple of %d", n, usePanel)
		}
	}
	L.qkv = newUSEMat(qkv, din, 3*din)
	L.out = newUSEMat(out, din, dout)
	if res != nil {
		L.res = newUSEMat(res, din, dout)
	}
	L.ff1 = newUSEMat(ff1, dout, L.dff)
	L.ff2 = newUSEMat(ff2, L.dff, dout)
	return L, nil
}
