package logit

import (
	"math"
	"testing"
)

func TestSolve(t *testing.T) {
	// 2x + y = 5, x + 3y = 10: x = 1, y = 3 (the first pivot swaps rows).
	x := Solve([][]float64{{1, 3}, {2, 1}}, []float64{10, 5})
	if math.Abs(x[0]-1) > 1e-12 || math.Abs(x[1]-3) > 1e-12 {
		t.Fatalf("x = %v", x)
	}
}

// A feature that separates the outcomes gets a positive weight, and the
// fitted probabilities order the samples as the outcomes do; the L2
// penalty shrinks the weight, not the bias.
func TestFit(t *testing.T) {
	var s []Sample
	for i := range 40 {
		x := float64(i) / 10
		y := 0.0
		if i%10 >= 4 { // mostly, not always, higher x means 1
			y = 1
		}
		if i%7 == 0 {
			y = 1 - y
		}
		s = append(s, Sample{X: []float64{x, float64(i % 10)}, Y: y})
	}
	w := Fit(s, Options{Ridge: 1e-6, Iters: 50})
	if len(w) != 3 || w[2] <= 0 {
		t.Fatalf("w = %v", w)
	}
	if lo, hi := Sigmoid(Dot(w, []float64{1, 1, 0})), Sigmoid(Dot(w, []float64{1, 1, 9})); lo >= hi {
		t.Fatalf("p(low) %v >= p(high) %v", lo, hi)
	}
	if p := Fit(s, Options{L2: 100}); math.Abs(p[2]) >= math.Abs(w[2]) {
		t.Fatalf("the penalty did not shrink the weight: %v vs %v", p, w)
	}
	if Fit(nil, Options{}) != nil {
		t.Fatal("a fit of nothing")
	}
}
