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
// with every large matrix stored as int8 with one float32 scale per row
// (symmetric, scale = max|row|/127). It is a quarter of the TensorFlow.js
// shards (about 7 MB instead of 28 MB). Loading dequantises it back to
// float32, so the forward pass, and its speed, are those of LoadUSELite.
//
// Layout, all integers little-endian:
//
//	magic   "MGUSEC01"
//	u32     length of vocab.json, then its bytes
//	u32     number of tensors, then per tensor:
//	  u16 name length, name
//	  u8  number of dimensions, u32 per dimension
//	  u8  encoding: 0 float32, 1 int32, 2 int8 rows
//	  data: n×4 bytes (0, 1); or rows×4 bytes of float32 scales then
//	        n int8 (2), rows = n / last dimension
//
// Tensors appear in name order, so the same model always gives the same
// bytes.
const useCompactMagic = "MGUSEC01"

// Encodings of a tensor in the compact form.
const (
	useEncF32  = 0
	useEncI32  = 1
	useEncInt8 = 2
)

// useQuantMin is the size from which a float32 tensor is quantised; the
// small ones (biases, layer norms, scalars) stay exact.
const useQuantMin = 4096

// BuiltinUSELiteModel is the Model() id of the built-in USE Lite: the
// int8 weights give vectors a little different from the float32 model's
// (cosine ≥ 0.99 to them), so they get an id of their own and vectors of
// one are never mixed with the other's.
const BuiltinUSELiteModel = "use-lite-int8"

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
		case len(t.f) >= useQuantMin && len(t.shape) > 0 && t.shape[len(t.shape)-1] > 0:
			b.WriteByte(useEncInt8)
			cols := t.shape[len(t.shape)-1]
			rows := len(t.f) / cols
			q := make([]byte, len(t.f))
			for r := range rows {
				row := t.f[r*cols : (r+1)*cols]
				var mx float32
				for _, v := range row {
					mx = max(mx, float32(math.Abs(float64(v))))
				}
				scale := mx / 127
				b.Write(le.AppendUint32(nil, math.Float32bits(scale)))
				if scale == 0 {
					continue
				}
				for i, v := range row {
					q[r*cols+i] = byte(int8(math.Round(float64(v / scale))))
				}
			}
			b.Write(q)
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
		case useEncInt8:
			if len(t.shape) == 0 || t.shape[len(t.shape)-1] == 0 {
				return nil, nil, fmt.Errorf("tensor %s: int8 rows without columns", name)
			}
			cols := t.shape[len(t.shape)-1]
			rows := size / cols
			sb := take(4 * rows)
			q := take(size)
			if sb == nil || q == nil {
				return nil, nil, short
			}
			t.f = make([]float32, size)
			for r := range rows {
				scale := math.Float32frombits(le.Uint32(sb[4*r:]))
				row := t.f[r*cols : (r+1)*cols]
				for i, v := range q[r*cols : (r+1)*cols] {
					row[i] = float32(int8(v)) * scale
				}
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
