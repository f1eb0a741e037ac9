package embed

import "testing"

func BenchmarkLoadGloVe(b *testing.B) {
	for b.Loop() {
		loadRealGloVe(b)
	}
}
