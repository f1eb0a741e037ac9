package cli

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The collector's pace for a process holding the search index. The index
// is a large, long-lived heap, mostly pointer-free arrays the collector
// does not scan, so a collection is cheap; the default GOGC=100 would let
// garbage grow to the size of the index before collecting, doubling the
// resident set of a large one. So garbage is collected when it reaches a
// quarter of the live heap — but never before gcHeadroomFloor of it: a
// quarter of a small heap (a new or small memory, tens of megabytes) is a
// few megabytes, and collecting that often made the collector about a
// quarter of the CPU of every write (issue 14: the same 2,400 writes took
// 1.75 s of CPU at 25%, 1.28 s at 100%). The pace follows the live heap
// as memory grows, re-read every gcPaceEvery.

const (
	gcHeadroomFloor = 64 << 20 // bytes of garbage allowed between collections, at least
	gcPaceEvery     = 30 * time.Second
	gcPercentMin    = 25  // large heaps: a quarter of the live heap
	gcPercentMax    = 100 // small heaps: Go's default
)

var gcPacer sync.Once

// startGCPacer sets the collector's pace from the live heap and keeps it
// current for the life of the process. Callers leave GOGC and GOMEMLIMIT,
// when the operator set them, alone.
func startGCPacer() {
	gcPacer.Do(func() {
		debug.SetGCPercent(gcPercentFor(liveHeap()))
		go func() {
			for range time.Tick(gcPaceEvery) {
				debug.SetGCPercent(gcPercentFor(liveHeap()))
			}
		}()
	})
}

// gcPercentFor is the GOGC that lets max(a quarter of live, the floor) of
// garbage accumulate, within [gcPercentMin, gcPercentMax].
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcPercentMax
	}
	return int(min(gcPercentMax, max(gcPercentMin, 100*uint64(gcHeadroomFloor)/live)))
}

// liveHeap is the heap the last collection found live (0 before one).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
