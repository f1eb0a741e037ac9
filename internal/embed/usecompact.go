package embed

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/memgate/memgate/internal/embed/usemodel"
)

// The compact form of USE Lite is what ships inside the binary (package
// usemodel): the vocabulary and only the weights the forward pass reads,
// with every large matrix stored as IEEE 754 half precision (float16,
// rounded to nearest even). It is half of the TensorFlow.js shards (about
// 14 MB instead of 28 MB). Loading widens it back to float32, so the
// forward pass, and its speed, are those of LoadUSELite.
//
// float16 rather than int8 (7 MB with one scale per row): float16 fits
// the binary's budget and keeps vectors within cosine 0.99999 of the
// float32 model's, so the built-in model ranks as the float32 one does on
// both development benchmarks (docs/embeddings.md); int8 kept only cosine
// 0.999.
//
// Layout, all integers little-endian:
//
//	magic   "MGUSEC01"
//	u32     length of vocab.json, then its bytes
//	u32     number of tensors, then per tensor:
//	  u16 name length, name
//	  u8  number of dimensions, u32 per dimension
//	  u8  encoding: 0 float32, 1 int32, 3 float16
//	  data: n×4 bytes (0, 1) or n×2 bytes (3)
//
// Tensors appear in name order, so the same model always gives the same
// bytes.
const useCompactMagic = "MGUSEC01"

// Encodings of a tensor in the compact form.
const (
	useEncF32 = 0
	useEncI32 = 1
	useEncF16 = 3
)

// useQuantMin is the size from which a float32 tensor is stored as
// float16; the small ones (biases, layer norms, scalars) stay exact.
const useQuantMin = 4096

// BuiltinUSELiteModel is the Model() id of the built-in USE Lite: the
// float16 weights give vectors a little different from the float32
// model's, so they get an id of their own and vectors of one are never
// mixed with the other's.
const BuiltinUSELiteModel = "use-lite-f16"

// WriteUSELiteCompact converts the TensorFlow.js USE Lite model in dir
// (see LoadUSELite) into the compact form and writes it to w. The model
// is built once to check it and to learn which weights it reads.
func WriteUSELiteCompact(dir string, w io.Writer) error {
	modelDir, vocabPath, err := useLitePaths(dir)
	if err != nil {
		return err
	}
	vocab, err := os.ReadFile(vocabPath)
	if err != nil {
		return fmt.Errorf("embed: converting USE Lite: %w", err)
	}
	tok, err := parseUSEVocab(vocab)
	if err != nil {
		return fmt.Errorf("embed: converting USE Lite %s: %w", vocabPath, err)
	}
	ws, err := readUSEWeights(modelDir)
	if err != nil {
		return fmt.Errorf("embed: converting USE Lite %s: %w", modelDir, err)
	}
	if _, err := buildUSELite(ws, tok); err != nil {
		return fmt.Errorf("embed: converting USE Lite %s: %w", modelDir, err)
	}
	var b bytes.Buffer
	b.WriteString(useCompactMagic)
	le := binary.LittleEndian
	b.Write(le.AppendUint32(nil, uint32(len(vocab))))
	b.Write(vocab)
	var names []string
	for name, t := range ws {
		if t.used {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b.Write(le.AppendUint32(nil, uint32(len(names))))
	for _, name := range names {
		t := ws[name]
		b.Write(le.AppendUint16(nil, uint16(len(name))))
		b.WriteString(name)
		b.WriteByte(byte(len(t.shape)))
		for _, d := range t.shape {
			b.Write(le.AppendUint32(nil, uint32(d)))
		}
		switch {
		case t.i != nil:
			b.WriteByte(useEncI32)
			for _, v := range t.i {
				b.Write(le.AppendUint32(nil, uint32(v)))
			}
		case len(t.f) >= useQuantMin:
			b.WriteByte(useEncF16)
			h := make([]byte, 2*len(t.f))
			for i, v := range t.f {
				le.PutUint16(h[2*i:], f32ToF16(v))
			}
			b.Write(h)
		default:
			b.WriteByte(useEncF32)
			for _, v := range t.f {
				b.Write(le.AppendUint32(nil, math.Float32bits(v)))
			}
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// useLitePaths finds model.json and vocab.json under dir (or dir/dist).
func useLitePaths(dir string) (modelDir, vocabPath string, err error) {
	modelDir = dir
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "dist", "model.json")); err2 != nil {
			return "", "", fmt.Errorf("embed: loading USE Lite: no model.json in %s or %s", dir, filepath.Join(dir, "dist"))
		}
		modelDir = filepath.Join(dir, "dist")
	}
	vocabPath = filepath.Join(modelDir, "vocab.json")
	if _, err := os.Stat(vocabPath); err != nil && modelDir != dir {
		vocabPath = filepath.Join(dir, "vocab.json")
	}
	return modelDir, vocabPath, nil
}

// LoadUSELiteCompact loads USE Lite from its compact form (see
// WriteUSELiteCompact). The model's id is BuiltinUSELiteModel.
func LoadUSELiteCompact(data []byte) (*USELite, error) {
	vocab, ws, err := parseUSECompact(data)
	if err != nil {
		return nil, fmt.Errorf("embed: loading compact USE Lite: %w", err)
	}
	tok, err := parseUSEVocab(vocab)
	if err != nil {
		return nil, fmt.Errorf("embed: loading compact USE Lite: %w", err)
	}
	m, err := buildUSELite(ws, tok)
	if err != nil {
		return nil, fmt.Errorf("embed: loading compact USE Lite: %w", err)
	}
	m.model = BuiltinUSELiteModel
	return m, nil
}

func parseUSECompact(data []byte) ([]byte, useWeights, error) {
	if !bytes.HasPrefix(data, []byte(useCompactMagic)) {
		return nil, nil, errors.New("not the compact form (bad magic)")
	}
	p := data[len(useCompactMagic):]
	le := binary.LittleEndian
	short := errors.New("truncated")
	take := func(n int) []byte {
		if n < 0 || n > len(p) {
			return nil
		}
		b := p[:n]
		p = p[n:]
		return b
	}
	u32 := func() (int, bool) {
		b := take(4)
		if b == nil {
			return 0, false
		}
		return int(le.Uint32(b)), true
	}
	n, ok := u32()
	if !ok {
		return nil, nil, short
	}
	vocab := take(n)
	if vocab == nil {
		return nil, nil, short
	}
	count, ok := u32()
	if !ok || count > 1<<16 {
		return nil, nil, short
	}
	ws := make(useWeights, count)
	for range count {
		nb := take(2)
		if nb == nil {
			return nil, nil, short
		}
		name := take(int(le.Uint16(nb)))
		nd := take(1)
		if name == nil || nd == nil {
			return nil, nil, short
		}
		t := &useTensor{shape: make([]int, nd[0])}
		size := 1
		for i := range t.shape {
			d, ok := u32()
			if !ok {
				return nil, nil, short
			}
			if d > math.MaxInt32 || (d > 0 && size > math.MaxInt32/d) {
				return nil, nil, fmt.Errorf("tensor %s: bad shape", name)
			}
			t.shape[i] = d
			size *= d
		}
		enc := take(1)
		if enc == nil {
			return nil, nil, short
		}
		switch enc[0] {
		case useEncF32, useEncI32:
			b := take(4 * size)
			if b == nil {
				return nil, nil, short
			}
			if enc[0] == useEncF32 {
				t.f = make([]float32, size)
				for i := range t.f {
					t.f[i] = math.Float32frombits(le.Uint32(b[4*i:]))
				}
			} else {
				t.i = make([]int32, size)
				for i := range t.i {
					t.i[i] = int32(le.Uint32(b[4*i:]))
				}
			}
		case useEncF16:
			h := take(2 * size)
			if h == nil {
				return nil, nil, short
			}
			t.f = make([]float32, size)
			for i := range t.f {
				t.f[i] = f16ToF32(le.Uint16(h[2*i:]))
			}
		default:
			return nil, nil, fmt.Errorf("tensor %s: unknown encoding %d", name, enc[0])
		}
		ws[string(name)] = t
	}
	if len(p) != 0 {
		return nil, nil, fmt.Errorf("%d bytes after the last tensor", len(p))
	}
	return vocab, ws, nil
}

var (
	builtinOnce sync.Once
	builtinUSE  *USELite
	builtinErr  error
)

// BuiltinUSELite returns the USE Lite model shipped in the binary,
// loading it on first use (once per process: it is immutable and safe
// for concurrent use). The embedded bytes are checked against their
// committed SHA-256 first.
func BuiltinUSELite() (*USELite, error) {
	builtinOnce.Do(func() {
		builtinUSE, builtinErr = loadBuiltinUSELite(usemodel.Data, usemodel.SHA256)
	})
	return builtinUSE, builtinErr
}

func loadBuiltinUSELite(data []byte, sum string) (*USELite, error) {
	want, _, _ := strings.Cut(strings.TrimSpace(sum), " ")
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != want {
		return nil, fmt.Errorf("embed: the built-in USE Lite model does not match its checksum (sha256 %x, want %s): rebuild with go generate ./internal/embed/usemodel", got, want)
	}
	return LoadUSELiteCompact(data)
}

// f32ToF16 rounds f to the nearest IEEE 754 half-precision value (ties to
// even), with subnormals, infinities and NaN.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	e := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if e == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := e - 127 + 15
	switch {
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign // below half the smallest subnormal
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		r := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // a carry into the exponent is the correct rounding
	}
	return sign | uint16(r)
}

// f16ToF32 widens a half-precision value exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
