package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is safe for concurrent use so it can drive the race test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestBurstExhaustion(t *testing.T) {
	clk := newClock()
	l := New(1, 3, clk.Now)
	for i := range 3 {
		if ok, ra := l.Allow("a"); !ok || ra != 0 {
			t.Fatalf("request %d: ok=%v retryAfter=%v", i, ok, ra)
		}
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("request beyond burst allowed")
	}
}

func TestRefillRate(t *testing.T) {
	clk := newClock()
	l := New(10, 5, clk.Now) // one token per 100ms
	for range 5 {
		l.Allow("a")
	}
	steps := []struct {
		advance time.Duration
		allowed int
	}{
		{50 * time.Millisecond, 0},
		{50 * time.Millisecond, 1},
		{250 * time.Millisecond, 2}, // 2.5 tokens: half a token carries over
		{50 * time.Millisecond, 1},
		{time.Hour, 5}, // refill is capped at burst
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		n := 0
		for {
			ok, _ := l.Allow("a")
			if !ok {
				break
			}
			n++
		}
		if n != s.allowed {
			t.Errorf("step %d: allowed %d, want %d", i, n, s.allowed)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		rate    float64
		burst   int
		advance time.Duration // after draining the bucket
		want    time.Duration
	}{
		{"whole interval", 2, 1, 0, 500 * time.Millisecond},
		{"partly refilled", 2, 1, 200 * time.Millisecond, 300 * time.Millisecond},
		{"rounded up to ms", 3, 1, 0, 334 * time.Millisecond},
		{"slow rate", 1.0 / 60, 1, 0, time.Minute},
		{"at least 1ms", 1e6, 1, 0, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			l := New(tc.rate, tc.burst, clk.Now)
			for range tc.burst {
				l.Allow("k")
			}
			clk.Advance(tc.advance)
			ok, ra := l.Allow("k")
			if ok {
				t.Fatal("allowed with empty bucket")
			}
			if ra != tc.want {
				t.Errorf("retryAfter = %v, want %v", ra, tc.want)
			}
			// Waiting exactly retryAfter must be enough.
			clk.Advance(ra)
			if ok, ra := l.Allow("k"); !ok {
				t.Errorf("still refused after waiting retryAfter, new retryAfter %v", ra)
			}
		})
	}
}

func TestIndependentKeys(t *testing.T) {
	clk := newClock()
	l := New(1, 1, clk.Now)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("a refused")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("a allowed twice")
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("b refused because a is exhausted")
	}
}

func TestUnlimited(t *testing.T) {
	for _, rate := range []float64{0, -1} {
		l := New(rate, 1, nil)
		for range 1000 {
			if ok, ra := l.Allow("a"); !ok || ra != 0 {
				t.Fatalf("rate %v: refused (retryAfter %v)", rate, ra)
			}
		}
		if len(l.buckets) != 0 {
			t.Errorf("rate %v: unlimited limiter kept %d buckets", rate, len(l.buckets))
		}
	}
}

func TestDefaultBurst(t *testing.T) {
	tests := []struct {
		rate  float64
		burst int
		want  int
	}{
		{10, 0, 10},
		{2.5, -1, 3},
		{0.1, 0, 1},
		{5, 2, 2},
	}
	for _, tc := range tests {
		clk := newClock()
		l := New(tc.rate, tc.burst, clk.Now)
		n := 0
		for {
			ok, _ := l.Allow("a")
			if !ok {
				break
			}
			n++
		}
		if n != tc.want {
			t.Errorf("New(%v, %d): burst %d, want %d", tc.rate, tc.burst, n, tc.want)
		}
	}
}

func TestClockGoingBackwards(t *testing.T) {
	clk := newClock()
	l := New(1, 1, clk.Now)
	l.Allow("a")
	clk.Advance(-time.Hour)
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("backwards clock minted a token")
	}
	clk.Advance(time.Hour + 500*time.Millisecond)
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("allowed before a full interval of real time passed")
	}
	clk.Advance(500 * time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refused after the interval")
	}
}

func TestConcurrent(t *testing.T) {
	clk := newClock()
	const burst, keys, workers, perWorker = 50, 4, 16, 100
	l := New(1, burst, clk.Now)
	var allowed [keys]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				k := (w + i) % keys
				if ok, _ := l.Allow(string(rune('a' + k))); ok {
					allowed[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// The clock never moved, so each key admits exactly its burst.
	for k := range allowed {
		if got := allowed[k].Load(); got != burst {
			t.Errorf("key %d: allowed %d, want %d", k, got, burst)
		}
	}
}

func TestSweep(t *testing.T) {
	clk := newClock()
	l := New(1, 2, clk.Now) // an empty bucket is full again after 2s
	for _, k := range []string{"a", "b", "c"} {
		l.Allow(k)
	}
	// Drain "slow" fully; at 1 token/s it needs 2s to be full again.
	clk.Advance(59 * time.Second)
	l.Allow("slow")
	l.Allow("slow")
	if n := len(l.buckets); n != 4 {
		t.Fatalf("before sweep: %d buckets, want 4", n)
	}
	// One minute since the limiter was created: the next Allow sweeps.
	clk.Advance(time.Second)
	l.Allow("d")
	if _, ok := l.buckets["slow"]; !ok {
		t.Error("swept a bucket that was not yet full")
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := l.buckets[k]; ok {
			t.Errorf("idle bucket %q not swept", k)
		}
	}
	if n := len(l.buckets); n != 2 {
		t.Errorf("after sweep: %d buckets, want 2 (slow, d)", n)
	}
	// Sweeps are rate limited too: a minute has not passed since the last.
	clk.Advance(30 * time.Second)
	l.Allow("e")
	if n := len(l.buckets); n != 3 {
		t.Errorf("swept again too soon: %d buckets, want 3", n)
	}
	clk.Advance(30 * time.Second)
	l.Allow("f")
	if n := len(l.buckets); n != 1 {
		t.Errorf("second sweep: %d buckets, want 1 (f)", n)
	}
	// A swept key starts again with a full burst.
	if ok, _ := l.Allow("a"); !ok {
		t.Error("swept key refused")
	}
}
