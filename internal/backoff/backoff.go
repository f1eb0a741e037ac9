// Package backoff is memgate's one retry delay: exponential growth from a
// base, capped, with "equal jitter" (half the delay fixed, half random),
// so that clients and jobs failing together do not retry in lockstep,
// yet never retry at once. The remote model clients (embedder, LLM
// extractor), the job queue and the embedding loop all wait through it.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Exp is base·2^attempt (attempt counts from 0), at most ceil; a
// non-positive base gives ceil. It does not overflow for large attempts.
func Exp(base, ceil time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return max(ceil, 0)
	}
	d := base
	for range max(attempt, 0) {
		if d >= ceil || d > ceil/2 {
			return max(ceil, 0)
		}
		d *= 2
	}
	return min(d, max(ceil, 0))
}

// Jitter is d with equal jitter: uniform in [d/2, d].
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Delay is the wait before retry attempt+1: Jitter(Exp(base, ceil, attempt)).
func Delay(base, ceil time.Duration, attempt int) time.Duration {
	return Jitter(Exp(base, ceil, attempt))
}
