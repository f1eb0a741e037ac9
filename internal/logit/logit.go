// Package logit fits logistic regressions by Newton's method. The
// relevance calibration check (internal/bench) and the ranker generator
// (internal/retrieve/rankgen) share it; nothing at run time does.
package logit

import (
	"math"
	"slices"
)

// Sample is one observation: features X, outcome Y (0 or 1), and its
// weight in the loss (0 counts as 1).
type Sample struct {
	X      []float64
	Y      float64
	Weight float64
}

// Options shape a fit.
type Options struct {
	// Iters is the number of Newton steps (0: 30).
	Iters int
	// L2 penalises the weights, not the bias.
	L2 float64
	// Ridge is added to every diagonal entry of the Hessian, the bias's
	// too, to keep the system solvable.
	Ridge float64
}

// Fit returns [bias, w...] minimising the weighted log loss (plus the L2
// penalty) of s; nil for no samples.
func Fit(s []Sample, o Options) []float64 {
	if len(s) == 0 {
		return nil
	}
	iters := o.Iters
	if iters <= 0 {
		iters = 30
	}
	d := len(s[0].X) + 1
	w := make([]float64, d)
	f := make([]float64, d)
	for range iters {
		g := make([]float64, d)
		h := make([][]float64, d)
		for i := range h {
			h[i] = make([]float64, d)
			h[i][i] = o.Ridge
			if i > 0 {
				h[i][i] += o.L2
				g[i] = o.L2 * w[i]
			}
		}
		for _, e := range s {
			sw := e.Weight
			if sw == 0 {
				sw = 1
			}
			f[0] = 1
			copy(f[1:], e.X)
			p := Sigmoid(Dot(w, f))
			for i := range d {
				g[i] += sw * (p - e.Y) * f[i]
				for j := range d {
					h[i][j] += sw * p * (1 - p) * f[i] * f[j]
				}
			}
		}
		step := Solve(h, g)
		for i := range w {
			w[i] -= step[i]
		}
	}
	return w
}

// Sigmoid is the logistic function.
func Sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// Dot is the dot product of a and b (len(a) terms).
func Dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Solve solves a·x = b by Gaussian elimination with partial pivoting; a
// zero pivot leaves its unknown 0.
func Solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(slices.Clone(a[i]), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		if m[c][c] == 0 {
			continue
		}
		for r := range n {
			if r != c {
				k := m[r][c] / m[c][c]
				for j := c; j <= n; j++ {
					m[r][j] -= k * m[c][j]
				}
			}
		}
	}
	x := make([]float64, n)
	for i := range x {
		if m[i][i] != 0 {
			x[i] = m[i][n] / m[i][i]
		}
	}
	return x
}
