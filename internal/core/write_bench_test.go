package core

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// The cost of a write with the search index attached, one writer and
// several: the index follows the change log before Write returns, so
// this is where that catch-up shows (issue 13, item 5).
func BenchmarkWrite(b *testing.B) {
	s, _, _ := newPortableService(b, true)
	ctx := context.Background()
	op := LocalOperator(memory.DefaultWorkspace)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: fmt.Sprintf("benchmark fact number %d about the billing cluster", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteParallel(b *testing.B) {
	s, _, _ := newPortableService(b, true)
	ctx := context.Background()
	op := LocalOperator(memory.DefaultWorkspace)
	var n atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: fmt.Sprintf("parallel fact number %d about the search cluster", i)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
