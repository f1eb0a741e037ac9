package embed

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/embed/usemodel"
)

// compactTexts are embedded by both forms of the model.
var compactTexts = []string{
	"I adopted a beagle named Rex last spring",
	"what pet does the user have?",
	"My cousin Ines is a dentist",
	"which relative works in dental care?",
	"I work as a nurse",
	"The meeting moved to Thursday at 3pm because the projector broke.",
	"Bought a new pair of running shoes for the marathon in October.",
	"",
	"résumé naïve café — ünïcödé 東京 😀",
	"How do I configure memgate to use dense retrieval with a local sentence embedder on my laptop today?",
}

// TestUSELiteCompactMatchesFloat32 converts the shared float32 model and
// checks the compact form's vectors stay close to the float32 ones.
func TestUSELiteCompactMatchesFloat32(t *testing.T) {
	ref := loadUSELiteForTest(t)
	b := compactForTest(t)
	if b.Len() > 15<<20 {
		t.Errorf("compact model is %d bytes, want ≤ 15 MiB (the binary may grow 16 MiB)", b.Len())
	}
	m, err := LoadUSELiteCompact(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if m.Model() != BuiltinUSELiteModel || ref.Model() != USELiteModel || m.Dim() != ref.Dim() {
		t.Fatalf("model %q dim %d, reference %q dim %d", m.Model(), m.Dim(), ref.Model(), ref.Dim())
	}
	ctx := context.Background()
	got, err := m.Embed(ctx, compactTexts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Embed(ctx, compactTexts)
	if err != nil {
		t.Fatal(err)
	}
	minCos := 1.0
	for i := range got {
		c := dot(got[i], want[i])
		minCos = min(minCos, c)
		if c < 0.99999 {
			t.Errorf("text %d %q: cosine to the float32 vector %.5f, want ≥ 0.99999", i, compactTexts[i], c)
		}
	}
	t.Logf("min cosine to the float32 vectors: %.8f", minCos)
}

var (
	compactOnce  sync.Once
	compactBytes []byte
	compactErr   error
)

// compactForTest converts the shared model once for the tests that
// compare against the conversion (it takes seconds under -race).
func compactForTest(t *testing.T) *bytes.Buffer {
	t.Helper()
	compactOnce.Do(func() {
		var b bytes.Buffer
		compactErr = WriteUSELiteCompact(useLiteDir, &b)
		compactBytes = b.Bytes()
	})
	if compactErr != nil {
		t.Fatal(compactErr)
	}
	return bytes.NewBuffer(compactBytes)
}

// TestBuiltinUSELiteIsGenerated checks the committed use-lite.bin is what
// the generator makes from the shared model today (go generate was run
// and the file was not edited).
func TestBuiltinUSELiteIsGenerated(t *testing.T) {
	loadUSELiteForTest(t)
	b := compactForTest(t)
	if !bytes.Equal(b.Bytes(), usemodel.Data) {
		t.Fatalf("internal/embed/usemodel/use-lite.bin (%d bytes) differs from a fresh conversion (%d bytes): run go generate ./internal/embed/usemodel", len(usemodel.Data), b.Len())
	}
}

// TestBuiltinUSELite needs no files: the model is in the binary.
func TestBuiltinUSELite(t *testing.T) {
	m, err := BuiltinUSELite()
	if err != nil {
		t.Fatal(err)
	}
	if m.Model() != BuiltinUSELiteModel || m.Dim() != 512 {
		t.Fatalf("model %q dim %d", m.Model(), m.Dim())
	}
	again, err := New(Config{Kind: KindUSE})
	if err != nil || again != Embedder(m) {
		t.Fatalf("New(use, no path) = %v, %v; want the one built-in model", again, err)
	}
	vs, err := m.Embed(context.Background(), compactTexts[:5])
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if n := norm(v); n < 0.999 || n > 1.001 {
			t.Errorf("vector %d has norm %v", i, n)
		}
	}
	// The questions of issue 12 rank their answers first.
	if pet, nurse := dot(vs[1], vs[0]), dot(vs[1], vs[4]); pet <= nurse {
		t.Errorf("pet question: beagle %.3f ≤ nurse %.3f", pet, nurse)
	}
	if dentist, nurse := dot(vs[3], vs[2]), dot(vs[3], vs[4]); dentist <= nurse {
		t.Errorf("dental question: dentist %.3f ≤ nurse %.3f", dentist, nurse)
	}
}

func TestBuiltinUSELiteChecksum(t *testing.T) {
	data := bytes.Clone(usemodel.Data)
	data[len(data)/2] ^= 1
	_, err := loadBuiltinUSELite(data, usemodel.SHA256)
	if err == nil || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), "go generate") {
		t.Fatalf("corrupt model: err = %v, want a checksum error naming go generate", err)
	}
}

func TestUSELiteCompactRejectsDamage(t *testing.T) {
	data := usemodel.Data
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"foreign", []byte("PK\x03\x04 not a model"), "magic"},
		{"header only", data[:len(useCompactMagic)], "truncated"},
		{"cut in the vocabulary", data[:1000], "truncated"},
		{"cut in the weights", data[:len(data)-7], "truncated"},
		{"trailing bytes", append(bytes.Clone(data), 0), "after the last tensor"},
	} {
		if _, err := LoadUSELiteCompact(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// BenchmarkLoadBuiltinUSELite measures loading the built-in model,
// checksum included.
func BenchmarkLoadBuiltinUSELite(b *testing.B) {
	for b.Loop() {
		if _, err := loadBuiltinUSELite(usemodel.Data, usemodel.SHA256); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuiltinUSELiteEmbedBatch is BenchmarkUSELiteEmbedBatch on the
// built-in model.
func BenchmarkBuiltinUSELiteEmbedBatch(b *testing.B) {
	m, err := BuiltinUSELite()
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = useLiteRef[i%len(useLiteRef)].text
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFloat16 checks the half-precision conversion: every half value
// survives widening and narrowing, and narrowing rounds to nearest even.
func TestFloat16(t *testing.T) {
	for h := range 1 << 16 {
		f := f16ToF32(uint16(h))
		if f != f { // NaN: stays a NaN of the same sign
			if g := f32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 || g&0x8000 != uint16(h)&0x8000 {
				t.Fatalf("NaN %#04x → %#04x", h, g)
			}
			continue
		}
		if g := f32ToF16(f); g != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, f, g)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00},              // rounds up to infinity
		{1 + 1.0/2048, 0x3c00},       // a tie: to even (down)
		{1 + 3.0/2048, 0x3c02},       // a tie: to even (up)
		{5.960464477539063e-08, 1},   // the smallest subnormal
		{2.98023223876953125e-08, 0}, // half of it: a tie, to even (zero)
		{1e-9, 0},
	} {
		if got := f32ToF16(c.f); got != c.want {
			t.Errorf("f32ToF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}
