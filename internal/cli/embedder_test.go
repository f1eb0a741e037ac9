package cli_test

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/cli"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// denseQuery runs a dense-only query and returns the response.
func denseQuery(t *testing.T, dir string, env map[string]string, q string, extra ...string) core.SearchResponse {
	t.Helper()
	var res core.SearchResponse
	args := append([]string{"query", "--signal", "dense", "--json", "--explain"}, extra...)
	mustJSON(t, run(t, dir, env, append(args, q)...), &res)
	return res
}

func writeRecord(t *testing.T, dir, content string) {
	t.Helper()
	mustRun(t, run(t, dir, nil, "write", "--type", "belief", "--content", content))
}

// defaultEmbedder is the environment of a command given no embedder.
var defaultEmbedder = map[string]string{"MEMGATE_EMBEDDER": ""}

// TestBuiltinEmbedderAndRememberedSettings: with no embedder flag a data
// directory gets the built-in USE-Lite, remembers it (in the database: on
// both backends), refuses another embedder with the re-embed command in
// the message, and reembed switches it.
func TestBuiltinEmbedderAndRememberedSettings(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testRememberedSettings(t, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testRememberedSettings(t, map[string]string{"MEMGATE_DATABASE_URL": pgtest.URL(t)})
	})
}

func testRememberedSettings(t *testing.T, base map[string]string) {
	dir := t.TempDir()
	env := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		if m == nil {
			m = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []string{"I adopted a beagle named Rex last spring", "I work as a nurse"} {
		mustRun(t, run(t, dir, env(), "write", "--type", "belief", "--content", c))
	}

	// Embed what is there (a one-shot write does not embed), with the
	// built-in model: reembed reports its progress on stderr.
	r := run(t, dir, env(), "reembed", "--embedder", "use")
	if r.code != 0 || !strings.Contains(r.stderr, "2 of 2 records to embed with use-lite-f16") || !strings.Contains(r.stderr, "2/2 done") {
		t.Fatalf("reembed: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}

	// No flag: the remembered (built-in) embedder, found by meaning.
	res := denseQuery(t, dir, env("MEMGATE_EMBEDDER", ""), "what pet does the user have?")
	if len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "beagle") || len(res.Degraded) != 0 {
		t.Fatalf("dense query: %+v", res)
	}
	if _, ok := res.Results[0].Explain["dense"]; !ok {
		t.Fatalf("first hit has no dense signal: %+v", res.Results[0].Explain)
	}

	// Another embedder is refused, naming the directory's and reembed.
	vecs := filepath.Join(t.TempDir(), "words.vec")
	if err := os.WriteFile(vecs, []byte("3 2\npet 1 0\nbeagle 0.9 0.1\nnurse 0 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, env("MEMGATE_EMBEDDER", "local", "MEMGATE_EMBEDDER_PATH", vecs), "query", "pet")
	if r.code == 0 || !strings.Contains(r.stderr, "use-lite-f16 (512 dimensions)") || !strings.Contains(r.stderr, "memgate reembed") {
		t.Fatalf("mismatch: exit %d: %s", r.code, r.stderr)
	}
	// --embedder none is always allowed: lexical search only.
	if r := run(t, dir, env("MEMGATE_EMBEDDER", "none"), "query", "beagle"); r.code != 0 || !strings.Contains(r.stdout, "beagle") {
		t.Fatalf("none: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}

	// reembed switches the directory; then it is the default.
	r = run(t, dir, env(), "reembed", "--embedder", "local", "--embedder-path", vecs, "--json")
	var out struct {
		From, To string
		Embedded int
	}
	mustJSON(t, r, &out)
	if out.From != "use-lite-f16 (512 dimensions)" || !strings.HasPrefix(out.To, "glove-sif:") || out.Embedded != 2 {
		t.Fatalf("reembed to local: %+v", out)
	}
	res = denseQuery(t, dir, env("MEMGATE_EMBEDDER", ""), "pet")
	if len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "beagle") {
		t.Fatalf("after reembed: %+v", res)
	}
	r = run(t, dir, env("MEMGATE_EMBEDDER", "use"), "query", "pet")
	if r.code == 0 || !strings.Contains(r.stderr, "glove-sif:") || !strings.Contains(r.stderr, "memgate reembed") {
		t.Fatalf("mismatch after the switch: exit %d: %s", r.code, r.stderr)
	}
}

// fakeEmbedder is an httptest server speaking the OpenAI embeddings API
// (POST /v1/embeddings) and Ollama's (POST /api/embed), with vectors of
// hashed words, so texts sharing words are close.
type fakeEmbedder struct {
	*httptest.Server
	dim  atomic.Int64
	down atomic.Bool
	// okLeft, when positive, is how many more requests succeed; the
	// ones after answer 400.
	okLeft atomic.Int64
	limit  atomic.Bool
	mu     sync.Mutex
	paths  map[string]int
}

func newFakeEmbedder(t *testing.T, dim int) *fakeEmbedder {
	f := &fakeEmbedder{paths: map[string]int{}}
	f.dim.Store(int64(dim))
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeEmbedder) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths[r.URL.Path]++
	f.mu.Unlock()
	if f.down.Load() {
		http.Error(w, `{"error":{"message":"model is loading"}}`, http.StatusServiceUnavailable)
		return
	}
	if f.limit.Load() && f.okLeft.Add(-1) < 0 {
		http.Error(w, `{"error":{"message":"quota exceeded"}}`, http.StatusBadRequest)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	vecs := make([][]float32, len(req.Input))
	for i, text := range req.Input {
		v := make([]float32, f.dim.Load())
		for _, word := range strings.Fields(strings.ToLower(text)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(word, "?.,!")))
			v[int(h.Sum32())%len(v)]++
		}
		v[0] += 0.01 // never the zero vector
		vecs[i] = v
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/embeddings":
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]datum, len(vecs))
		for i, v := range vecs {
			data[i] = datum{"embedding", i, v}
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	case "/api/embed":
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vecs})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeEmbedder) hits(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paths[path]
}

// TestOpenAIEmbedderDownAtStart: an OpenAI-compatible embedder that is
// down when the command starts no longer panics (vector: invalid
// dimension 0): search runs lexically and says so; once the endpoint
// answers, vectors fill in and the learned dimension is remembered.
func TestOpenAIEmbedderDownAtStart(t *testing.T) {
	for _, api := range []struct{ name, base, path string }{
		{"openai", "/v1", "/v1/embeddings"},
		{"ollama", "/api", "/api/embed"},
	} {
		t.Run(api.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEmbedder(t, 16)
			dir := t.TempDir()
			writeRecord(t, dir, "I adopted a beagle named Rex last spring")
			writeRecord(t, dir, "I work as a nurse")
			env := map[string]string{"MEMGATE_EMBEDDER": "openai", "MEMGATE_EMBEDDER_URL": f.URL + api.base, "MEMGATE_EMBEDDER_MODEL": "fake-embed"}

			f.down.Store(true)
			var res core.SearchResponse
			mustJSON(t, run(t, dir, env, "query", "--json", "beagle"), &res)
			if len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "beagle") ||
				len(res.Degraded) == 0 || !strings.Contains(res.Degraded[0], "dense") {
				t.Fatalf("query with the embedder down: %+v", res)
			}

			f.down.Store(false)
			flags := []string{"reembed", "--embedder", "openai", "--embedder-url", f.URL + api.base, "--embedder-model", "fake-embed"}
			if r := run(t, dir, nil, flags...); r.code != 0 || !strings.Contains(r.stdout, "fake-embed (16 dimensions)") {
				t.Fatalf("reembed: exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			// No flags: the directory's embedder, its dimension remembered.
			res = denseQuery(t, dir, defaultEmbedder, "which beagle")
			if len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "beagle") || len(res.Degraded) != 0 {
				t.Fatalf("dense query: %+v", res)
			}
			if f.hits(api.path) == 0 {
				t.Fatalf("no request reached %s", api.path)
			}
			// Down again: a directory that knows its dimension still opens.
			f.down.Store(true)
			mustJSON(t, run(t, dir, defaultEmbedder, "query", "--json", "beagle"), &res)
			if len(res.Results) == 0 || len(res.Degraded) == 0 {
				t.Fatalf("query with the embedder down again: %+v", res)
			}
		})
	}
}

// TestOpenAIEmbedderWrongDimension: an endpoint that answers with another
// dimension than --embedder-dim, or than the directory remembers, is a
// clear error, not a panic or silently missing vectors.
func TestOpenAIEmbedderWrongDimension(t *testing.T) {
	f := newFakeEmbedder(t, 8)
	dir := t.TempDir()
	env := map[string]string{"MEMGATE_EMBEDDER": "openai", "MEMGATE_EMBEDDER_URL": f.URL + "/v1", "MEMGATE_EMBEDDER_MODEL": "fake-embed", "MEMGATE_EMBEDDER_DIM": "16"}
	r := run(t, dir, env, "query", "beagle")
	if r.code == 0 || !strings.Contains(r.stderr, "answers with 8-dimensional vectors, expected 16") {
		t.Fatalf("wrong --embedder-dim: exit %d: %s", r.code, r.stderr)
	}
	delete(env, "MEMGATE_EMBEDDER_DIM")
	if r := run(t, dir, env, "query", "beagle"); r.code != 0 {
		t.Fatalf("probed dimension: exit %d: %s", r.code, r.stderr)
	}
	// The endpoint now serves a different model under the same name.
	f.dim.Store(12)
	r = run(t, dir, defaultEmbedder, "query", "beagle")
	if r.code == 0 || !strings.Contains(r.stderr, "answers with 12-dimensional vectors, expected 8") {
		t.Fatalf("changed dimension: exit %d: %s", r.code, r.stderr)
	}
	// --embedder-dim against the remembered dimension.
	r = run(t, dir, map[string]string{"MEMGATE_EMBEDDER": "", "MEMGATE_EMBEDDER_DIM": "12"}, "query", "beagle")
	if r.code == 0 || !strings.Contains(r.stderr, "memgate reembed") {
		t.Fatalf("--embedder-dim against the directory: exit %d: %s", r.code, r.stderr)
	}
}

// TestReembedResumes: a reembed that fails half-way keeps what it stored
// and leaves the directory on its old embedder; running it again embeds
// only the rest, then switches.
func TestReembedResumes(t *testing.T) {
	defer cli.SetReembedBatch(1)()
	f := newFakeEmbedder(t, 8)
	dir := t.TempDir()
	for _, c := range []string{"first record", "second record", "third record"} {
		writeRecord(t, dir, c)
	}
	flags := []string{"reembed", "--embedder", "openai", "--embedder-url", f.URL + "/v1", "--embedder-model", "fake-embed"}
	f.okLeft.Store(2) // the dimension probe and one record
	f.limit.Store(true)
	r := run(t, dir, nil, flags...)
	if r.code == 0 || !strings.Contains(r.stderr, "after 1 records") || !strings.Contains(r.stderr, "run the same command again to resume") {
		t.Fatalf("failing reembed: exit %d: %s", r.code, r.stderr)
	}
	f.limit.Store(false)
	r = run(t, dir, nil, flags...)
	if r.code != 0 || !strings.Contains(r.stderr, "2 of 3 records to embed") || !strings.Contains(r.stderr, "2/2 done") {
		t.Fatalf("resumed reembed: exit %d: %s", r.code, r.stderr)
	}
	res := denseQuery(t, dir, defaultEmbedder, "second record")
	if len(res.Results) == 0 || len(res.Degraded) != 0 {
		t.Fatalf("after the resumed reembed: %+v", res)
	}
}
