package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// useLiteDir is the shared USE Lite model: ../shared relative to the
// repository root, or the directory MEMGATE_USE_LITE_DIR names (a git
// worktree elsewhere).
var useLiteDir = func() string {
	if d := os.Getenv("MEMGATE_USE_LITE_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "models", "use-lite")
}()

var (
	useLiteOnce   sync.Once
	useLiteModel  *USELite
	useLiteErr    error
	useLiteLoaded time.Duration
)

// loadUSELiteForTest loads the shared model once per test binary, or skips.
func loadUSELiteForTest(tb testing.TB) *USELite {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(useLiteDir, "dist", "model.json")); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("CI=true: the USE Lite model must be in %s: %v", useLiteDir, err)
		}
		tb.Skipf("needs the USE Lite model in %s (TensorFlow.js graph model, dist/model.json, 7 shards, dist/vocab.json): %v", useLiteDir, err)
	}
	useLiteOnce.Do(func() {
		start := time.Now()
		useLiteModel, useLiteErr = LoadUSELite(useLiteDir)
		useLiteLoaded = time.Since(start)
	})
	if useLiteErr != nil {
		tb.Fatal(useLiteErr)
	}
	return useLiteModel
}

// useLiteRef holds reference outputs of the TensorFlow.js runtime
// (@tensorflow/tfjs 4.22, CPU backend) running the same model.json and
// the tokenizer of @tensorflow-models/universal-sentence-encoder 1.3.3 on
// the same vocab.json: the token ids and the first 8 components of the
// 512-d embedding, each text embedded alone. They were produced with a
// small Node script that loads the graph with tf.loadGraphModel from an
// in-memory IOHandler, builds the sparse inputs {indices: [[0, j]...],
// values: ids} as the package's embed() does, and runs executeAsync.
//
// Against the full 512-d reference vectors of these texts, the long one
// below and 59 more (random mixes of words, symbols and scripts, up to 367
// tokens) the ids were all equal, and the vectors had max |diff| 5.1e-7
// (6.1e-7 with the portable kernel) and min cosine 0.99999995; see
// TestUSELiteAgainstFullReference to repeat that.
var useLiteRef = []struct {
	text string
	ids  []int32
	vec  [8]float32
}{
	{"the cat sat on the mat",
		[]int32{9, 1163, 3757, 25, 9, 688, 17},
		[8]float32{0.0565097, -0.05086219, -0.06173564, -0.05885284, 0.0247063, 0.04387698, 0.05546721, -0.04744443}},
	{"a kitten was sitting on a rug",
		[]int32{11, 7317, 33, 3126, 25, 11, 30, 4852},
		[8]float32{0.06352605, -0.05470942, -0.06931654, -0.06059505, 0.03477718, -0.03626975, 0.06656051, -0.02984138}},
	{"quarterly revenue grew in europe",
		[]int32{1275, 56, 2255, 4015, 15, 6416, 509},
		[8]float32{-0.05620031, -0.04861588, -0.05664461, -0.05566579, 0.02733277, 0.02102502, -0.03411409, -0.04052421}},
	{"Hello, world!",
		[]int32{341, 4125, 8, 311, 78},
		[8]float32{-0.04248647, -0.05083373, -0.006022525, -0.0474382, -0.04900238, -0.05369953, 0.05612661, 0.050094}},
	{"",
		[]int32{},
		[8]float32{0.002354661, -0.03487525, 0.01310202, -0.02117605, 0.02257255, -0.01224463, -0.01523713, 0.02407182}},
	{"x",
		[]int32{649},
		[8]float32{0.04526198, -0.04778089, 0.04894043, 0.04802158, 0.04883856, -0.04901472, 0.04900014, -0.0475506}},
	{"The quick brown fox jumps over the lazy dog; it was 3:30pm on 2024-05-17, and the fox's speed was ~42.5 km/h.",
		[]int32{34, 2280, 3744, 1394, 152, 2009, 7, 132, 9, 6266, 959, 138, 21, 33, 216, 4177, 3912, 25, 514, 3316, 24, 4788, 24, 2343, 8, 12, 9, 1394, 152, 13, 7, 1526, 33, 4599, 5392, 6, 411, 687, 47, 68, 162, 6},
		[8]float32{-0.03273247, -0.05840296, 0.04159016, -0.05541266, 0.02296591, 0.06817068, 0.04117822, -0.06355369}},
	{"\u00dcn\u00efc\u00f6d\u00e9 caf\u00e9 na\u00efve \u2014 \u201cquotes\u201d \ufb01ne \uff26\uff35\uff2c\uff2c\uff37\uff29\uff24\uff34\uff28 \u00bd \u2460 \u216b \u6771\u4eac \U0001f600 \U0001f680",
		[]int32{30, 0, 85, 0, 131, 6781, 29, 1133, 976, 209, 1133, 1216, 0, 105, 405, 77, 1699, 5070, 7, 236, 839, 189, 4664, 277, 331, 2609, 3651, 207, 7935, 288, 207, 927, 109, 109, 30, 0, 30, 0, 30, 0},
		[8]float32{-0.002666916, 0.001057849, -0.007697409, -0.01081696, -0.04427036, 0.01743052, -0.02606179, -0.06774603}},
	{"  multiple   spaces\tand\nnewlines  ",
		[]int32{30, 30, 2338, 30, 30, 1016, 7, 0, 381, 0, 2664, 721, 7, 30, 30},
		[8]float32{-0.01360775, -0.0658945, 0.06406943, 0.02473694, 0.03187876, -0.01094874, 0.03835361, -0.06554771}},
	{"How do I configure memgate to use dense retrieval with a local sentence embedder?",
		[]int32{728, 64, 16, 4061, 682, 1213, 84, 47, 4981, 10, 187, 2912, 307, 137, 17, 2670, 1314, 28, 11, 681, 2682, 1500, 4150, 783, 54},
		[8]float32{-0.0548793, -0.0744487, -0.01075362, -0.06247807, 0.05669288, -0.0189446, -0.03417997, -0.06387249}},
	{":) :-( https://example.com/path?q=1 user@example.com #hashtag @mention",
		[]int32{30, 57, 52, 604, 24, 234, 290, 7, 255, 773, 1563, 147, 6, 167, 68, 3431, 54, 1111, 5419, 2380, 2245, 773, 1563, 147, 6, 167, 1833, 347, 552, 17, 891, 2330, 284, 243},
		[8]float32{-0.0624609, -0.07574822, 0.03071097, -0.007254521, 0.07477868, 0.03585652, 0.02371533, -0.06422142}},
	{"ALL CAPS SHOUTING VERSUS all lower case whispering",
		[]int32{5090, 4605, 2633, 114, 3655, 3394, 1639, 30, 5499, 141, 2317, 65, 1551, 534, 1859, 297, 497, 23},
		[8]float32{0.05467481, -0.06413288, 0.01355904, -0.009665098, -0.06157198, -0.02355799, -0.03709341, -0.01131392}},
	{"Der schnelle braune Fuchs springt \u00fcber den faulen Hund.",
		[]int32{239, 46, 1817, 5500, 3943, 2006, 3213, 189, 1788, 7, 3769, 17, 30, 6980, 949, 2912, 1138, 474, 154, 1209, 560, 6},
		[8]float32{-0.06000567, -0.007913435, -0.05367301, -0.01754421, -0.05711643, 0.03198498, -0.009808953, -0.02052463}},
	{"e\u0301 vs \u00e9 and \u00c5 vs A\u030a and \u1100\u1161\u11a8 \ud55c\uad6d\uc5b4",
		[]int32{30, 1133, 3181, 30, 1133, 12, 30, 0, 3181, 30, 0, 12, 30, 0, 30, 0},
		[8]float32{-0.0467105, -0.0497109, -0.04299904, 0.008169729, -0.03411837, 0.003171739, -0.02586788, -0.05979479}},
}

// useLiteLongText has 163 tokens; the model sees the first 128.
const useLiteLongText = "In 1969, Neil Armstrong became the first person to walk on the Moon. Apollo 11 launched from Kennedy Space Center on July 16 and landed in the Sea of Tranquility four days later, while Michael Collins orbited above in the command module Columbia. The mission fulfilled a national goal set by President John F. Kennedy in 1961, and roughly 650 million people watched the first steps on television around the world. Afterwards the crew spent twenty-one days in quarantine before they were allowed to return to their families, and the samples they brought back are still studied by scientists today. This sentence is here to make the text longer than one hundred and twenty-eight tokens so that clipping is exercised too."

// useLiteLongVec are the first components of its reference embedding.
var useLiteLongVec = [8]float32{0.02319628, -0.07242692, 0.07652817, 0.04790217, -0.02815591, 0.02315987, -0.03863249, -0.07119901}

// useLiteMaxDiff is the tolerance on a component: float32 rounding in a
// different order of operations (observed up to 3.1e-7) plus the 7
// significant digits kept above.
const useLiteMaxDiff = 2e-6

func TestUSELiteLoad(t *testing.T) {
	m := loadUSELiteForTest(t)
	t.Logf("loaded in %v (race detector on: %v, AVX2+FMA kernel: %v)", useLiteLoaded, raceEnabled, useHaveSIMD)
	if m.Model() != "use-lite" || m.Dim() != 512 || m.MaxTokens() != 128 {
		t.Errorf("Model, Dim, MaxTokens = %q, %d, %d; want use-lite, 512, 128", m.Model(), m.Dim(), m.MaxTokens())
	}
	if len(m.layers) != 2 || m.dIn != 256 || m.layers[0].heads != 4 || m.layers[0].depth != 64 || m.layers[1].depth != 128 {
		t.Errorf("architecture: %d layers, width %d, heads %d, depths %d/%d", len(m.layers), m.dIn, m.layers[0].heads, m.layers[0].depth, m.layers[1].depth)
	}
	if !m.cutOK {
		t.Error("long texts are not cut at their 128th space")
	}
	if !raceEnabled && useLiteLoaded > 2*time.Second {
		t.Errorf("loading took %v", useLiteLoaded)
	}
	// The dist/ directory itself works too, and so does New.
	e, err := New(Config{Kind: KindUSE, Path: filepath.Join(useLiteDir, "dist")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*USELite); !ok || e.Model() != USELiteModel || e.Dim() != 512 {
		t.Errorf("New: %T %q %d", e, e.Model(), e.Dim())
	}
}

func TestUSELiteTokensMatchReference(t *testing.T) {
	m := loadUSELiteForTest(t)
	var st useTokState
	for _, c := range useLiteRef {
		if got := m.tokens(c.text, &st); !slices.Equal(got, c.ids) {
			t.Errorf("tokens(%q) =\n%v, want\n%v", c.text, got, c.ids)
		}
	}
	full := slices.Clone(m.tok.encode(useLiteLongText, &st))
	if len(full) != 163 {
		t.Errorf("long text: %d tokens, want 163", len(full))
	}
	if got := m.tokens(useLiteLongText, &st); !slices.Equal(got, full[:128]) {
		t.Errorf("long text: the model's tokens are not the first 128:\n%v\n%v", got, full[:128])
	}
}

func TestUSELiteVectorsMatchReference(t *testing.T) {
	m := loadUSELiteForTest(t)
	texts := []string{useLiteLongText}
	want := [][8]float32{useLiteLongVec}
	for _, c := range useLiteRef {
		texts = append(texts, c.text)
		want = append(want, c.vec)
	}
	vecs, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, v := range vecs {
		if len(v) != 512 {
			t.Fatalf("%q: %d components", texts[i], len(v))
		}
		if n := norm(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: norm %v", texts[i], n)
		}
		for j, w := range want[i] {
			d := math.Abs(float64(v[j] - w))
			worst = max(worst, d)
			if d > useLiteMaxDiff {
				t.Errorf("%q: component %d = %v, reference %v", texts[i], j, v[j], w)
			}
		}
	}
	t.Logf("max |diff| over the recorded components: %.3g", worst)
}

// TestUSELiteAgainstFullReference compares whole vectors with a JSON file
// of reference outputs, {"single": [{"text", "ids", "vec"}, ...]}, named by
// $MEMGATE_USE_REF (not in the repository: it holds model outputs).
func TestUSELiteAgainstFullReference(t *testing.T) {
	path := os.Getenv("MEMGATE_USE_REF")
	if path == "" {
		t.Skip("set MEMGATE_USE_REF to a JSON file of TensorFlow.js outputs to compare whole vectors")
	}
	m := loadUSELiteForTest(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Single []struct {
			Text string    `json:"text"`
			IDs  []int32   `json:"ids"`
			Vec  []float32 `json:"vec"`
		} `json:"single"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	var st useTokState
	minCos, maxDiff := 2.0, 0.0
	for _, r := range ref.Single {
		if got := m.tok.encode(r.Text, &st); !slices.Equal(got, r.IDs) {
			t.Errorf("%q: ids %v, want %v", r.Text, got, r.IDs)
		}
		v, err := m.Embed(context.Background(), []string{r.Text})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Vec) != len(v[0]) {
			t.Fatalf("%q: reference has %d components", r.Text, len(r.Vec))
		}
		minCos = min(minCos, dot(v[0], r.Vec))
		for j := range r.Vec {
			maxDiff = max(maxDiff, math.Abs(float64(v[0][j]-r.Vec[j])))
		}
	}
	t.Logf("%d texts: min cosine %.8f, max |diff| %.3g", len(ref.Single), minCos, maxDiff)
	if minCos < 0.9999 {
		t.Errorf("min cosine %v < 0.9999", minCos)
	}
}

func TestUSELiteEmptyText(t *testing.T) {
	m := loadUSELiteForTest(t)
	vecs, err := m.Embed(context.Background(), []string{"", "hello", ""})
	if err != nil {
		t.Fatal(err)
	}
	// Not the zero vector: the model's output for no tokens, as in the
	// reference (useLiteRef has it too).
	if n := norm(vecs[0]); math.Abs(n-1) > 1e-5 {
		t.Errorf("empty text: norm %v", n)
	}
	if !slices.Equal(vecs[0], vecs[2]) {
		t.Error("two empty texts differ")
	}
	if d := dot(vecs[0], vecs[1]); d > 0.99 {
		t.Errorf("empty text and hello: cosine %v", d)
	}
}

func TestUSELiteSemantics(t *testing.T) {
	m := loadUSELiteForTest(t)
	const (
		anchor  = "the cat sat on the mat"
		similar = "a kitten was sitting on a rug"
		other   = "quarterly revenue grew in europe"
	)
	v, err := m.Embed(context.Background(), []string{anchor, similar, other})
	if err != nil {
		t.Fatal(err)
	}
	simCos, otherCos := dot(v[0], v[1]), dot(v[0], v[2])
	t.Logf("cosine(%q, %q) = %.4f (reference 0.7358)", anchor, similar, simCos)
	t.Logf("cosine(%q, %q) = %.4f (reference -0.0069)", anchor, other, otherCos)
	if !(simCos > otherCos+0.2) {
		t.Errorf("paraphrase cosine %.4f not 0.2 above unrelated cosine %.4f", simCos, otherCos)
	}
	if math.Abs(simCos-0.73575167) > 1e-5 || math.Abs(otherCos+0.00688897) > 1e-5 {
		t.Errorf("cosines %.8f, %.8f; reference 0.73575167, -0.00688897", simCos, otherCos)
	}
}

func TestUSELiteTruncation(t *testing.T) {
	m := loadUSELiteForTest(t)
	// Whatever follows the first 128 tokens does not matter, however long.
	tail := strings.Repeat(" and then some more words", 2000) + strings.Repeat("x", 20000)
	v, err := m.Embed(context.Background(), []string{useLiteLongText, useLiteLongText + tail})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v[0], v[1]) {
		t.Errorf("appending to a text of more than 128 tokens changed its vector (cosine %v)", dot(v[0], v[1]))
	}
	// A text with no spaces is read up to 8 KiB.
	var st useTokState
	long := strings.Repeat("é", 10000)
	if got := m.cut(long); len(got) > useMaxTextBytes || !strings.HasPrefix(long, got) || !strings.HasSuffix(got, "é") {
		t.Errorf("cut of a 20,000-byte text without spaces: %d bytes", len(got))
	}
	if ids := m.tokens(long, &st); len(ids) == 0 || len(ids) > 128 {
		t.Errorf("%d tokens", len(ids))
	}
}

func TestUSELiteDeterministicAndConcurrent(t *testing.T) {
	m := loadUSELiteForTest(t)
	texts := make([]string, 0, 12)
	for i := range 12 {
		c := useLiteRef[i%len(useLiteRef)]
		texts = append(texts, fmt.Sprintf("%s %d", c.text, i))
	}
	// Sequential reference, one text at a time.
	want := make([][]float32, len(texts))
	for i, s := range texts {
		v, err := m.Embed(context.Background(), []string{s})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = v[0]
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := m.Embed(context.Background(), texts)
			if err != nil {
				errs <- err
				return
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					errs <- fmt.Errorf("goroutine %d: text %d differs from the sequential result", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestUSELiteCancelled(t *testing.T) {
	m := loadUSELiteForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := m.Embed(ctx, []string{"a", "b", "c"}); !errors.Is(err, context.Canceled) || v != nil {
		t.Errorf("cancelled: %v, %v", v, err)
	}
	// Cancelled while running: the call returns early with the error.
	ctx, cancel = context.WithCancel(context.Background())
	texts := make([]string, 400)
	for i := range texts {
		texts[i] = useLiteLongText
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := m.Embed(ctx, texts)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while running: %v after %v", err, time.Since(start))
	}
	if v, err := m.Embed(context.Background(), nil); err != nil || len(v) != 0 {
		t.Errorf("no texts: %v, %v", v, err)
	}
}

func TestUSELiteLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadUSELite(dir); err == nil || !strings.Contains(err.Error(), "model.json") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := New(Config{Kind: KindUSE, Path: dir}); err == nil || !strings.Contains(err.Error(), "model.json") {
		t.Errorf("Path without a model: %v", err) // no Path: the built-in model (TestBuiltinUSELite)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vocab := `[["<unk>",0],["<s>",0],["</s>",0],["a",0],["b",0],["c",0],["\u2581",-1]]`
	write("vocab.json", vocab)
	for _, c := range []struct{ model, want string }{
		{`{`, "model.json"},
		{`{"weightsManifest":[]}`, "weightsManifest"},
		{`{"weightsManifest":[{"paths":["../x"],"weights":[]}]}`, "not local"},
		{`{"weightsManifest":[{"paths":["missing.bin"],"weights":[]}]}`, "missing.bin"},
		{`{"weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"x","shape":[4],"dtype":"float32"}]}]}`, "end inside"},
		{`{"weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"x","shape":[1],"dtype":"float16"}]}]}`, "float16"},
		{`{"weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"x","shape":[1],"dtype":"float32","quantization":{"dtype":"uint8"}}]}]}`, "quantized"},
		{`{"weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"x","shape":[1],"dtype":"float32"}]}]}`, "bytes of shards"},
		{`{"weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"x","shape":[2],"dtype":"float32"}]}]}`, "Embeddings_en"},
	} {
		write("model.json", c.model)
		write("w.bin", "12345678")
		if _, err := LoadUSELite(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("model.json %s: error %v, want one containing %q", c.model, err, c.want)
		}
	}
	write("vocab.json", `[["<unk>",0]]`)
	if _, err := LoadUSELite(dir); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("short vocabulary: %v", err)
	}
}

// TestUSETokenizer checks the segmentation rules on a tiny synthetic
// vocabulary; it needs no model files.
func TestUSETokenizer(t *testing.T) {
	vocab := `[
		["\ufffd", 0], ["<s>", 0], ["</s>", 0], ["x1", 0], ["x2", 0], ["x3", 0],
		["\u2581", -2], ["\u2581the", -1], ["\u2581t", -3], ["h", -3], ["e", -3],
		["\u2581cat", -1.5], ["c", -4], ["a", -4], ["t", -4], ["at", -2],
		["fi", -2], ["F", -2], ["\u00e9", -2], ["s", -9], ["s", null],
		["\u2581dog", -1], ["\u2581do", -0.5], ["g", -0.5]
	]`
	tok, err := parseUSEVocab([]byte(vocab))
	if err != nil {
		t.Fatal(err)
	}
	var st useTokState
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"", nil},
		{"the cat", []int32{7, 11}},
		{" the", []int32{6, 7}},                      // each space is a "▁"
		{"the  cat", []int32{7, 6, 11}},              // two spaces, two "▁"
		{"cat", []int32{11}},                         // "▁" is prepended
		{"The", []int32{6, 0, 9, 10}},                // no lowercasing; "T" is unknown
		{"the\tcat", []int32{7, 0, 12, 15}},          // a tab is not a space
		{"the xyz", []int32{7, 6, 0}},                // a run of unknowns merges
		{"\ufb01 \uff26", []int32{6, 0, 6, 17}},      // NFKC: "ﬁ Ｆ" → "fi F"; see below
		{"e\u0301", []int32{6, 18}},                  // NFKC composes "é"
		{"s", []int32{6, 20}},                        // the last of duplicates wins; null scores 0
		{"dog", []int32{22, 23}},                     // a tie (-0.5-0.5 = -1) goes to the later candidate
		{"the cat \U0001F600", []int32{7, 11, 6, 0}}, // astral characters are one code point
		{"\xff", []int32{6, 0}},                      // invalid UTF-8 is U+FFFD
		{"at", []int32{6, 15}},
		{"hat", []int32{6, 9, 15}},
		{"\u00a0the", []int32{6, 7}},           // NFKC turns NBSP into a space
		{"\u1100\u1161 the", []int32{6, 0, 7}}, // Hangul jamo compose, unknown
		{"the cat the cat", []int32{7, 11, 7, 11}},
		{"a\u0323\u0302", []int32{6, 0}}, // no piece: one unknown
		{"t", []int32{8}},
		{"\u2581the", []int32{6, 7}},      // a literal "▁" is a separator too
		{"cat\u3000cat", []int32{11, 11}}, // ideographic space → U+0020 → "▁"
		{"th", []int32{8, 9}},
		{"c a t", []int32{6, 12, 6, 13, 8}},
		{"F\uff26", []int32{6, 17, 17}},
		{"\u0301", []int32{6, 0}}, // a lone combining mark
		{"\u00e9\u00e9", []int32{6, 18, 18}},
		{"\u212b", []int32{6, 0}}, // Å (angstrom) → Å, unknown here
		{strings.Repeat("x", 5), []int32{6, 0}},
		{"the\u00a0\u00a0cat", []int32{7, 6, 11}},
		{"\u2126\u00b5", []int32{6, 0}},          // Ω, μ: unknown
		{"\U0001D41Ftat", []int32{6, 0, 14, 15}}, // 𝐟 → "f", not a piece
		// As in the reference, a position no candidate ends at keeps a
		// best score of 0, which beats every real score: in "▁fi", "i"
		// alone is no piece, so the unknown "i" from that unreachable
		// position wins over "fi" (and the unknowns merge).
		{"fi", []int32{6, 0}},
	} {
		got := tok.encode(c.text, &st)
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}

	for _, bad := range []string{`{}`, `[["a",0]]`, `[["",0],["a",0],["b",0],["c",0],["d",0],["e",0],["f",0]]`,
		`[["?",0],["a",0],["b",0],["c",0],["d",0],["e",0],["",0]]`, `[["?",0],["a",0],["b",0],["c",0],["d",0],["e",0],["f","x"]]`,
		`[["?",0],["a",0],["b",0],["c",0],["d",0],["e",0],["f"]]`} {
		if _, err := parseUSEVocab([]byte(bad)); err == nil {
			t.Errorf("parseUSEVocab(%s): no error", bad)
		}
	}
}

func TestUSENFKC(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain ascii", "plain ascii"},
		{"\ufb01ne", "fine"},
		{"\uff26\uff55\uff4c\uff4c", "Full"},
		{"\u00bd", "1\u20442"},
		{"\u2460", "1"},
		{"\u216b", "XII"},
		{"\u00a0", " "},
		{"e\u0301", "\u00e9"},
		{"\u00e9", "\u00e9"},
		{"A\u030a", "\u00c5"},
		{"\u212b", "\u00c5"},
		{"\u1100\u1161\u11a8", "\uac01"},
		{"\uac01", "\uac01"},
		{"a\u0302\u0323", "\u1ead"}, // reordered (dot below first), then composed
		{"a\u0323\u0302", "\u1ead"},
		{"\u0301a", "\u0301a"},
		{"q\u0307\u0323", "q\u0323\u0307"},
		{"\u1e9b\u0323", "\u1e69"},
		{"\U0001D400", "A"},
		{"\u3000", " "},
		{"\ufdfa", "\u0635\u0644\u0649 \u0627\u0644\u0644\u0647 \u0639\u0644\u064a\u0647 \u0648\u0633\u0644\u0645"},
		{"\u0958", "\u0915\u093c"}, // composition exclusion
		{"\xffa", "\ufffda"},
	} {
		if got := useNFKC(c.in); got != c.want {
			t.Errorf("useNFKC(%+q) = %+q, want %+q", c.in, got, c.want)
		}
	}
}

// TestUSEGemm checks both kernels against a float64 product.
func TestUSEGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{6, 1, 16}, {6, 7, 32}, {12, 64, 48}, {18, 300, 64}, {6, 1536, 16}} {
		rows, k, n := sh[0], sh[1], sh[2]
		lda, ldc := k+3, n+5
		a := make([]float32, (rows-1)*lda+k)
		w := make([]float32, k*n)
		bias := make([]float32, n)
		for _, s := range [][]float32{a, w, bias} {
			for i := range s {
				s[i] = rng.Float32()*2 - 1
			}
		}
		mat := newUSEMat(w, k, n)
		c0 := make([]float32, (rows-1)*ldc+n)
		for i := range c0 {
			c0[i] = rng.Float32()
		}
		kernels := map[string]func(c []float32, add bool){
			"go": func(c []float32, add bool) { useGemmGo(c, ldc, a, lda, rows, mat, bias, add) },
			"dispatch": func(c []float32, add bool) {
				useGemm(c, ldc, a, lda, rows, mat, bias, add)
			},
		}
		useSIMDKernels(kernels, ldc, a, lda, rows, mat, bias)
		for name, kern := range kernels {
			for _, add := range []bool{false, true} {
				c := slices.Clone(c0)
				kern(c, add)
				for r := range rows {
					for j := range n {
						want := float64(bias[j])
						for kk := range k {
							want += float64(a[r*lda+kk]) * float64(w[kk*n+j])
						}
						if add {
							want += float64(c0[r*ldc+j])
						}
						if d := math.Abs(float64(c[r*ldc+j]) - want); d > 1e-4*(1+math.Sqrt(float64(k))) {
							t.Fatalf("%s %v add=%v: c[%d][%d] = %v, want %v", name, sh, add, r, j, c[r*ldc+j], want)
						}
					}
				}
				// Padding between rows is untouched.
				for r := range rows - 1 {
					for j := n; j < ldc; j++ {
						if c[r*ldc+j] != c0[r*ldc+j] {
							t.Fatalf("%s %v: wrote past row %d", name, sh, r)
						}
					}
				}
			}
		}
	}
}

// BenchmarkUSELiteEmbed embeds one 20-word sentence per op on one
// goroutine (about 29 tokens).
func BenchmarkUSELiteEmbed(b *testing.B) {
	m := loadUSELiteForTest(b)
	texts := []string{"How do I configure memgate to use dense retrieval with a local sentence embedder on my laptop today?"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUSELiteEmbedBatch embeds 64 sentences per op on GOMAXPROCS
// goroutines; ns/op ÷ 64 is the time per sentence.
func BenchmarkUSELiteEmbedBatch(b *testing.B) {
	m := loadUSELiteForTest(b)
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = useLiteRef[i%len(useLiteRef)].text
	}
	ctx := context.Background()
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
	for b.Loop() {
		if _, err := m.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadUSELite measures loading the model.
func BenchmarkLoadUSELite(b *testing.B) {
	loadUSELiteForTest(b)
	for b.Loop() {
		if _, err := LoadUSELite(useLiteDir); err != nil {
			b.Fatal(err)
		}
	}
}
