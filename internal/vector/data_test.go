package vector

import (
	"math"
	"math/rand/v2"
)

// mixture is a synthetic embedding distribution: a mixture of spherical
// Gaussians around random unit centroids, every sample L2-normalised.
// noise is the standard deviation of the whole noise vector relative to a
// unit centroid (each coordinate gets noise/sqrt(dim)).
type mixture struct {
	dim       int
	noise     float64
	centroids [][]float64
}

func newMixture(dim, centroids int, noise float64, seed uint64) *mixture {
	r := rand.New(rand.NewPCG(seed, 1))
	m := &mixture{dim: dim, noise: noise}
	for range centroids {
		c := make([]float64, dim)
		var n float64
		for i := range c {
			c[i] = r.NormFloat64()
			n += c[i] * c[i]
		}
		n = math.Sqrt(n)
		for i := range c {
			c[i] /= n
		}
		m.centroids = append(m.centroids, c)
	}
	return m
}

// sample draws n vectors with a generator seeded by seed, as one flat slice.
func (m *mixture) sample(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]float32, n*m.dim)
	sd := m.noise / math.Sqrt(float64(m.dim))
	tmp := make([]float64, m.dim)
	for i := range n {
		c := m.centroids[r.IntN(len(m.centroids))]
		var norm float64
		for j := range tmp {
			tmp[j] = c[j] + sd*r.NormFloat64()
			norm += tmp[j] * tmp[j]
		}
		norm = math.Sqrt(norm)
		v := out[i*m.dim : (i+1)*m.dim]
		for j := range v {
			v[j] = float32(tmp[j] / norm)
		}
	}
	return out
}

// row returns vector i of a flat slice.
func row(flat []float32, dim, i int) []float32 { return flat[i*dim : (i+1)*dim : (i+1)*dim] }

// randomUnit returns n uniformly random unit vectors (flat).
func randomUnit(n, dim int, seed uint64) []float32 {
	return newMixture(dim, 1, 1e6, seed).sample(n, seed)
}

// recallAt measures |got ∩ want| / |want| over key sets.
func recallAt(got, want []Hit) (hit, total int) {
	set := make(map[uint32]bool, len(want))
	for _, w := range want {
		set[w.Key] = true
	}
	for _, g := range got {
		if set[g.Key] {
			hit++
		}
	}
	return hit, len(want)
}
