package cli

import (
	"runtime"
	"testing"
)

// TestGCPercentFor: a quarter of a large live heap, at least 64 MB of
// garbage for a small one, never more than Go's default.
func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {16 << 20, 100}, {64 << 20, 100}, {128 << 20, 50}, {200 << 20, 32},
		{256 << 20, 25}, {1 << 30, 25}, {8 << 30, 25},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
	runtime.GC()
	if liveHeap() == 0 {
		t.Error("the live heap metric reads 0 in a running test after a collection")
	}
}
