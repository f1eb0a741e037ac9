package backoff

import (
	"testing"
	"time"
)

func TestExp(t *testing.T) {
	for _, c := range []struct {
		base, ceil time.Duration
		attempt    int
		want       time.Duration
	}{
		{time.Second, time.Minute, 0, time.Second},
		{time.Second, time.Minute, 3, 8 * time.Second},
		{time.Second, time.Minute, 6, time.Minute},
		{time.Second, time.Minute, 1 << 20, time.Minute}, // no overflow
		{time.Duration(1) << 62, time.Duration(1<<63 - 1), 5, time.Duration(1<<63 - 1)},
		{0, time.Minute, 2, time.Minute},
		{time.Second, time.Minute, -1, time.Second},
	} {
		if got := Exp(c.base, c.ceil, c.attempt); got != c.want {
			t.Errorf("Exp(%v, %v, %d) = %v, want %v", c.base, c.ceil, c.attempt, got, c.want)
		}
	}
}

func TestJitterBounds(t *testing.T) {
	if Jitter(0) != 0 || Jitter(-time.Second) != 0 {
		t.Fatal("a non-positive delay is no wait")
	}
	d := 100 * time.Millisecond
	lo, hi := d, time.Duration(0)
	for range 2000 {
		j := Jitter(d)
		if j < d/2 || j > d {
			t.Fatalf("Jitter(%v) = %v, outside [%v, %v]", d, j, d/2, d)
		}
		lo, hi = min(lo, j), max(hi, j)
	}
	// Spread over the range, not a constant.
	if hi-lo < d/4 {
		t.Fatalf("2000 draws within [%v, %v]: not jittered", lo, hi)
	}
}
