// Package ratelimit throttles requests per principal (agent, user or
// operator token) so that one noisy or runaway client cannot starve the
// others or flood the gate and store. Each key gets its own token bucket;
// callers turn a refusal into a rate_limited error carrying retryAfter.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// tokenSlack absorbs floating-point error in refills; a billionth of a
// token is too little to let anyone through meaningfully early.
const tokenSlack = 1e-9

// sweepInterval bounds how often Allow pays for a full scan of the buckets.
const sweepInterval = time.Minute

// Limiter is a set of token buckets, one per key, all with the same rate
// and burst. It is safe for concurrent use.
type Limiter struct {
	rate  float64 // tokens per second; <= 0 means unlimited
	burst float64
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time // when tokens was last brought up to date
}

// New returns a limiter allowing perSecond requests per second per key,
// with bursts of up to burst requests. perSecond <= 0 (or NaN) disables
// limiting.
// A burst below 1 could never admit anything, so it defaults to one
// second's worth of tokens (at least 1). now is the clock; nil means
// time.Now.
func New(perSecond float64, burst int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	b := float64(burst)
	if burst < 1 {
		b = math.Max(1, math.Ceil(perSecond))
	}
	return &Limiter{
		rate:      perSecond,
		burst:     b,
		now:       now,
		buckets:   make(map[string]*bucket),
		lastSweep: now(),
	}
}

// Allow takes a token from key's bucket. When the bucket is empty it
// returns false and how long until a token will be available, rounded up
// to whole milliseconds so a caller that waits that long is never early.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	if !(l.rate > 0) { // also catches NaN, which would poison the arithmetic
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	if t.Sub(l.lastSweep) >= sweepInterval {
		l.sweep(t)
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, last: t}
		l.buckets[key] = b
	} else {
		b.tokens = l.refill(b, t)
		// A clock that steps backwards must not mint tokens, and keeping
		// the later time stops it from doing so once the clock recovers.
		if t.After(b.last) {
			b.last = t
		}
	}
	// Float refill arithmetic can land a hair below 1 at exactly the
	// retryAfter we promised; the slack keeps that promise.
	if b.tokens >= 1-tokenSlack {
		b.tokens = math.Max(0, b.tokens-1)
		return true, 0
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / l.rate * float64(time.Second)))
	return false, roundUpMillis(wait)
}

// refill returns b's token count as of t without modifying b.
func (l *Limiter) refill(b *bucket, t time.Time) float64 {
	elapsed := t.Sub(b.last)
	if elapsed <= 0 {
		return b.tokens
	}
	return math.Min(l.burst, b.tokens+elapsed.Seconds()*l.rate)
}

// sweep drops buckets that have refilled completely: a full bucket behaves
// exactly like a missing one, so forgetting it changes no decision and
// keeps memory proportional to recently active keys. Survivors are copied
// into a fresh map because Go maps never give back space after deletes.
func (l *Limiter) sweep(t time.Time) {
	l.lastSweep = t
	keep := make(map[string]*bucket)
	for k, b := range l.buckets {
		if l.refill(b, t) < l.burst {
			keep[k] = b
		}
	}
	if len(keep) < len(l.buckets) {
		l.buckets = keep
	}
}

func roundUpMillis(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 || d <= 0 {
		d += time.Millisecond - r
	}
	return d
}
