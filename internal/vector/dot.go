package vector

// The scoring kernels. Every score in the package comes from dot or dot4,
// and both add the products in exactly the same order (two running sums,
// over the even and the odd coordinates, joined at the end), so a vector's
// score against a query is bit-identical whichever kernel computed it and
// wherever the vector sits in storage. That is what makes rankings
// independent of insertion order, and Exact and HNSW agree on every score.
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
