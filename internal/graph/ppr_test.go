package graph

import (
	"maps"
	"math"
	"math/rand/v2"
	"testing"
)

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func chain(n int) *Index {
	x := New()
	for i := range n {
		x.PutNode(node("w", "n"+itoa(i)))
		if i > 0 {
			x.PutEdge(edge("w", "e"+itoa(i), "n"+itoa(i-1), "n"+itoa(i), "FOLLOWS"))
		}
	}
	return x
}

func TestPPRChain(t *testing.T) {
	x := chain(8)
	s := x.PPR("w", map[string]float64{"n0": 1}, PPROptions{Epsilon: 1e-7, Iterations: 200})
	for i := 1; i < 8; i++ {
		a, b := s["n"+itoa(i-1)], s["n"+itoa(i)]
		if !(a > b && b > 0) {
			t.Errorf("score n%d = %g, n%d = %g: want decreasing, positive", i-1, a, i, b)
		}
	}
	if tot := sum(s); tot > 1+1e-12 || tot < 0.999 {
		t.Errorf("sum of scores = %v, want ≈1 and ≤1 at this precision", tot)
	}
	// Default options stop earlier but never create mass.
	d := x.PPR("w", map[string]float64{"n0": 1}, PPROptions{})
	if tot := sum(d); tot > 1+1e-12 || tot < 0.5 {
		t.Errorf("default sum = %v", tot)
	}
	// From the middle, the seed is highest and scores fall off both ways.
	m := x.PPR("w", map[string]float64{"n4": 1}, PPROptions{Epsilon: 1e-7, Iterations: 200})
	for _, p := range [][2]string{{"n4", "n3"}, {"n3", "n2"}, {"n2", "n1"}, {"n4", "n5"}, {"n5", "n6"}} {
		if !(m[p[0]] > m[p[1]]) {
			t.Errorf("from n4: %s %g ≤ %s %g", p[0], m[p[0]], p[1], m[p[1]])
		}
	}
}

func TestPPRSeedHighest(t *testing.T) {
	x := sample(t)
	// Raw PPR: every seed here has at least the degree of its neighbours.
	for _, seed := range []string{"a", "b", "c", "d", "e"} {
		s := x.PPR("w", map[string]float64{seed: 1}, PPROptions{})
		for id, v := range s {
			if id != seed && v >= s[seed] {
				t.Errorf("seed %s: %s scores %g ≥ seed's %g", seed, id, v, s[seed])
			}
		}
	}
	// A leaf next to a degree-3 node is outscored by it in raw PPR (the
	// nature of PageRank), never once scores are normalised by degree.
	if s := x.PPR("w", map[string]float64{"g": 1}, PPROptions{Epsilon: 1e-7, Iterations: 200}); !(s["a"] > s["g"]) {
		t.Errorf("raw PPR from leaf g: a %g, g %g; expected the hub to win", s["a"], s["g"])
	}
	for _, seed := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		s := x.PPR("w", map[string]float64{seed: 1}, PPROptions{DegreeNormalized: true})
		for id, v := range s {
			if id != seed && v >= s[seed] {
				t.Errorf("seed %s: %s scores %g ≥ seed's %g", seed, id, v, s[seed])
			}
		}
		if s["h"] != 0 || s["i"] != 0 || s["z"] != 0 {
			t.Errorf("seed %s: archived, unreachable or isolated nodes scored: %v", seed, s)
		}
		if sum(s) > 1 {
			t.Errorf("seed %s: normalised sum %v > 1", seed, sum(s))
		}
	}
}

func TestPPRDeterministic(t *testing.T) {
	x := sample(t)
	seeds := map[string]float64{"a": 2, "d": 1, "c": 0.5}
	first := x.PPR("w", seeds, PPROptions{})
	for range 20 {
		if got := x.PPR("w", seeds, PPROptions{}); !maps.Equal(got, first) {
			t.Fatalf("PPR not deterministic:\n%v\n%v", first, got)
		}
	}
	if tot := sum(first); tot > 1+1e-12 {
		t.Errorf("sum = %v > 1", tot)
	}
}

func TestPPRSeeds(t *testing.T) {
	x := sample(t)
	cases := []struct {
		name  string
		seeds map[string]float64
		empty bool
	}{
		{"none", nil, true},
		{"unknown", map[string]float64{"nope": 1}, true},
		{"archived", map[string]float64{"h": 1}, true},
		{"non-positive", map[string]float64{"a": 0, "b": -1, "c": nan()}, true},
		{"infinite", map[string]float64{"a": inf()}, true},
		{"mixed", map[string]float64{"nope": 1, "a": 1}, false},
	}
	for _, c := range cases {
		s := x.PPR("w", c.seeds, PPROptions{})
		if (len(s) == 0) != c.empty {
			t.Errorf("%s: PPR = %v", c.name, s)
		}
	}
	// An isolated seed keeps all the mass.
	if s := x.PPR("w", map[string]float64{"z": 1}, PPROptions{}); len(s) != 1 || s["z"] != 1 {
		t.Errorf("isolated seed: %v", s)
	}
	// Seed weights matter: the heavier seed's side scores higher.
	s := x.PPR("w", map[string]float64{"a": 1, "e": 9}, PPROptions{Epsilon: 1e-7, Iterations: 200})
	if !(s["e"] > s["a"] && s["d"] > s["b"]) {
		t.Errorf("weighted seeds: %v", s)
	}
}

// MaxNodes bounds the work on a big neighbourhood.
func TestPPRMaxNodes(t *testing.T) {
	x := New()
	x.PutNode(node("w", "hub"))
	for i := range 500 {
		id := "l" + itoa(i)
		x.PutNode(node("w", id))
		x.PutEdge(edge("w", "e"+itoa(i), "hub", id, "USES"))
		x.PutNode(node("w", "m"+itoa(i)))
		x.PutEdge(edge("w", "f"+itoa(i), id, "m"+itoa(i), "USES"))
	}
	full := x.PPR("w", map[string]float64{"hub": 1}, PPROptions{Epsilon: 1e-6})
	if len(full) != 1001 {
		t.Fatalf("full PPR reached %d nodes, want 1001", len(full))
	}
	capped := x.PPR("w", map[string]float64{"hub": 1}, PPROptions{Epsilon: 1e-6, MaxNodes: 100})
	if len(capped) > 501 || sum(capped) > 1 {
		t.Errorf("capped PPR reached %d nodes (sum %v), want ≤ 501", len(capped), sum(capped))
	}
}

// The push converges to the lazy-walk PPR computed by power iteration.
func TestPPRMatchesPowerIteration(t *testing.T) {
	const n, m, alpha = 40, 90, 0.15
	rng := rand.New(rand.NewPCG(1, 2))
	x := New()
	for i := range n {
		x.PutNode(node("w", "n"+itoa(i)))
	}
	type wedge struct {
		u, v int
		w    float64
	}
	var es []wedge
	for i := range m {
		u, v := rng.IntN(n), rng.IntN(n)
		if u == v {
			continue
		}
		w := 0.5 + rng.Float64()*2
		es = append(es, wedge{u, v, float64(float32(w))})
		e := edge("w", "e"+itoa(i), "n"+itoa(u), "n"+itoa(v), "RELATED_TO")
		e.Weight = w
		x.PutEdge(e)
	}
	deg := make([]float64, n)
	for _, e := range es {
		deg[e.u] += e.w
		deg[e.v] += e.w
	}
	seed := 3
	pi := make([]float64, n)
	pi[seed] = 1
	for range 3000 {
		next := make([]float64, n)
		next[seed] += alpha
		for u := range n {
			if deg[u] == 0 {
				next[u] += (1 - alpha) * pi[u]
				continue
			}
			next[u] += (1 - alpha) * pi[u] / 2
		}
		for _, e := range es {
			next[e.v] += (1 - alpha) * pi[e.u] / 2 * e.w / deg[e.u]
			next[e.u] += (1 - alpha) * pi[e.v] / 2 * e.w / deg[e.v]
		}
		pi = next
	}
	got := x.PPR("w", map[string]float64{"n" + itoa(seed): 1}, PPROptions{Epsilon: 1e-12, Iterations: 100000})
	for i := range n {
		if d := math.Abs(got["n"+itoa(i)] - pi[i]); d > 1e-6 {
			t.Errorf("n%d: push %g, power iteration %g", i, got["n"+itoa(i)], pi[i])
		}
	}
}
