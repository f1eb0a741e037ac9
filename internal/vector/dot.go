package vector

import "math"

// The scoring kernels. Every score in the package comes from dot or dot4
// (Exact) or from dotq or dot4q (HNSW, over quantised vectors), and all add
// the products in exactly the same order (two running sums, over the even
// and the odd coordinates, joined at the end), so a vector's score against
// a query is bit-identical whichever kernel computed it and wherever the
// vector sits in storage. That is what makes rankings independent of
// insertion order, and HNSW scores equal to the exact scores of the
// vectors it holds (the quantised ones).
//
// Go does not auto-vectorise, so speed comes from instruction-level
// parallelism and from avoiding bounds checks:
//   - dot4 scores four vectors against one query at once: each query element
//     is loaded once for four products (1.25 loads per multiply-add instead
//     of 2), eight independent sums keep both floating-point add ports busy
//     despite the add latency, and the four vectors' cache misses overlap,
//     which matters for HNSW's random accesses.
//   - loops step 4 elements at a time over sub-slices of exactly 4, which
//     the compiler proves in range once per step instead of per element.
//
// The kernels run under the index lock on memory only the index owns; they
// are excluded from race instrumentation (//go:norace), which otherwise
// makes `go test -race` over graph builds 20x slower. Races on index state
// are still detected through the instrumented code around them.

// dot returns the inner product of q and x (len(x) >= len(q)).
//
//go:norace
func dot(q, x []float32) float32 {
	n := len(q)
	x = x[:n]
	var s0, s1 float32
	i := 0
	for ; i <= n-4; i += 4 {
		qq := q[i : i+4 : i+4]
		xx := x[i : i+4 : i+4]
		s0 += qq[0] * xx[0]
		s1 += qq[1] * xx[1]
		s0 += qq[2] * xx[2]
		s1 += qq[3] * xx[3]
	}
	for ; i < n; i++ {
		s0 += q[i] * x[i]
	}
	return s0 + s1
}

// dot4 returns the inner products of q with a, b, c and d, each
// bit-identical to dot(q, ·).
//
//go:norace
func dot4(q, a, b, c, d []float32) (float32, float32, float32, float32) {
	n := len(q)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 float32
	i := 0
	for ; i <= n-4; i += 4 {
		qq := q[i : i+4 : i+4]
		aa := a[i : i+4 : i+4]
		bb := b[i : i+4 : i+4]
		cc := c[i : i+4 : i+4]
		dd := d[i : i+4 : i+4]
		a0 += qq[0] * aa[0]
		b0 += qq[0] * bb[0]
		c0 += qq[0] * cc[0]
		d0 += qq[0] * dd[0]
		a1 += qq[1] * aa[1]
		b1 += qq[1] * bb[1]
		c1 += qq[1] * cc[1]
		d1 += qq[1] * dd[1]
		a0 += qq[2] * aa[2]
		b0 += qq[2] * bb[2]
		c0 += qq[2] * cc[2]
		d0 += qq[2] * dd[2]
		a1 += qq[3] * aa[3]
		b1 += qq[3] * bb[3]
		c1 += qq[3] * cc[3]
		d1 += qq[3] * dd[3]
	}
	for ; i < n; i++ {
		qi := q[i]
		a0 += qi * a[i]
		b0 += qi * b[i]
		c0 += qi * c[i]
		d0 += qi * d[i]
	}
	return a0 + a1, b0 + b1, c0 + c1, d0 + d1
}

// The HNSW index stores each vector quantised (see quantize): int16
// values k and a power-of-two scale s, the vector being s·k. dotq and
// dot4q score them: they add the products q[i]·k[i] in the order dot does
// and leave the multiplication by s to the caller. As s is a power of two
// and every k[i] fits a float32 exactly, s·dotq(q, k) is bit-identical to
// dot(q, s·k) (barring underflow to subnormals): a quantised index ranks
// exactly as an exact index holding the dequantised vectors would.

// dotq returns the inner product of q and x (len(x) >= len(q)).
//
//go:norace
func dotq(q []float32, x []int16) float32 {
	n := len(q)
	x = x[:n]
	var s0, s1 float32
	i := 0
	for ; i <= n-4; i += 4 {
		qq := q[i : i+4 : i+4]
		xx := x[i : i+4 : i+4]
		s0 += qq[0] * float32(xx[0])
		s1 += qq[1] * float32(xx[1])
		s0 += qq[2] * float32(xx[2])
		s1 += qq[3] * float32(xx[3])
	}
	for ; i < n; i++ {
		s0 += q[i] * float32(x[i])
	}
	return s0 + s1
}

// dot4q returns the inner products of q with a, b, c and d, each
// bit-identical to dotq(q, ·).
//
//go:norace
func dot4q(q []float32, a, b, c, d []int16) (float32, float32, float32, float32) {
	n := len(q)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 float32
	i := 0
	for ; i <= n-4; i += 4 {
		qq := q[i : i+4 : i+4]
		aa := a[i : i+4 : i+4]
		bb := b[i : i+4 : i+4]
		cc := c[i : i+4 : i+4]
		dd := d[i : i+4 : i+4]
		a0 += qq[0] * float32(aa[0])
		b0 += qq[0] * float32(bb[0])
		c0 += qq[0] * float32(cc[0])
		d0 += qq[0] * float32(dd[0])
		a1 += qq[1] * float32(aa[1])
		b1 += qq[1] * float32(bb[1])
		c1 += qq[1] * float32(cc[1])
		d1 += qq[1] * float32(dd[1])
		a0 += qq[2] * float32(aa[2])
		b0 += qq[2] * float32(bb[2])
		c0 += qq[2] * float32(cc[2])
		d0 += qq[2] * float32(dd[2])
		a1 += qq[3] * float32(aa[3])
		b1 += qq[3] * float32(bb[3])
		c1 += qq[3] * float32(cc[3])
		d1 += qq[3] * float32(dd[3])
	}
	for ; i < n; i++ {
		qi := q[i]
		a0 += qi * float32(a[i])
		b0 += qi * float32(b[i])
		c0 += qi * float32(c[i])
		d0 += qi * float32(d[i])
	}
	return a0 + a1, b0 + b1, c0 + c1, d0 + d1
}

// quantMax is the largest magnitude of a quantised value.
const quantMax = math.MaxInt16

// quantize sets dst to the int16 values of v and returns their scale s, a
// power of two: v ≈ s·dst, each value rounded to the nearest multiple of
// s, with s the smallest power of two (at least 2^-126, so it is a normal
// float32) that keeps every value within ±32767. The rounding error is at
// most s/2 ≤ max|v|/2^15 per element, about 1e-5 of a unit vector's
// largest element. Values that are not finite quantise to 0.
func quantize(v []float32, dst []int16) float32 {
	var m float64
	for _, x := range v {
		if a := math.Abs(float64(x)); a > m && !math.IsInf(a, 0) {
			m = a
		}
	}
	if m == 0 {
		clear(dst[:len(v)])
		return 1
	}
	_, e := math.Frexp(m) // m = f·2^e, f in [0.5, 1)
	e -= 15               // m/2^e in [2^14, 2^15)
	if math.RoundToEven(math.Ldexp(m, -e)) > quantMax {
		e++
	}
	e = max(e, -126)
	for i, x := range v {
		r := math.RoundToEven(math.Ldexp(float64(x), -e))
		if !(r >= -quantMax && r <= quantMax) { // NaN, ±Inf
			r = 0
		}
		dst[i] = int16(r)
	}
	return float32(math.Ldexp(1, e))
}

// dequantize sets dst to s·k.
func dequantize(k []int16, s float32, dst []float32) {
	dst = dst[:len(k)]
	for i, x := range k {
		dst[i] = float32(x) * s
	}
}
