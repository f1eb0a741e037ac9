// Package embed provides pluggable text embedders for memgate's dense
// retrieval signal (SPEC §5: dense candidates are cosine over embeddings,
// when an embedder is configured).
//
// Two embedders are built in:
//
//   - OpenAI: a client for any OpenAI-compatible POST /embeddings endpoint
//     (OpenAI, Ollama, vLLM, llama.cpp server, TEI, LM Studio), with
//     batching, retries with jittered exponential backoff and strict
//     response checking.
//   - SIF: a local, network-free embedder built from a word-vector file
//     (word2vec text format, e.g. GloVe), combining word vectors with smooth
//     inverse frequency weights and common-component removal (Arora, Liang
//     and Ma, "A Simple but Tough-to-Beat Baseline for Sentence Embeddings",
//     ICLR 2017).
//
// # None
//
// There is no "none" embedder value: a nil Embedder means that no embedder
// is configured and retrieval runs on the lexical and graph signals only.
// New returns (nil, nil) for Kind "none"; callers test e == nil before
// asking for a dense signal.
//
// # Vectors
//
// Every vector an Embedder returns has exactly Dim() components and is L2
// normalised, so cosine similarity is a plain dot product. A text with
// nothing to embed (for SIF: no token in the vocabulary) yields the zero
// vector, never NaN. Model() is a stable identifier stored next to each
// vector so that a change of model can be detected and vectors re-embedded.
package embed

import (
	"context"
	"math"
)

// Embedder turns texts into L2-normalised float32 vectors of Dim()
// components. Implementations are safe for concurrent use.
type Embedder interface {
	// Model is a stable id stored with each vector, e.g.
	// "openai:text-embedding-3-small" or "glove-sif:<file base name>".
	Model() string
	// Dim is the number of components of every vector.
	Dim() int
	// Embed returns one vector per text, in the order of texts.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Normalize scales v in place to unit L2 norm. The zero vector stays zero;
// a vector with a non-finite norm (Inf or NaN components) is left as is.
func Normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		return
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}
