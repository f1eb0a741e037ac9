package retrieve

import (
	"context"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Source is what the engine reads from the store: the record heads and
// stored vectors it is built from, the change log it follows, and the
// embedding cache. It is the part of store.Reader this package uses, so a
// test can hand the engine a small fake and a reader of the code sees at
// once what the indexes depend on. Every store.Reader is a Source.
type Source interface {
	// ScanRecords, GetRecord and GetRecords: the heads the indexes hold.
	ScanRecords(ctx context.Context, fn func(ws string, r memory.Record) error) error
	GetRecord(ctx context.Context, ws, id string) (memory.Record, error)
	GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error)
	// ListChanges and ChangeHead: the change log that keeps the indexes
	// current across processes.
	ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error)
	ChangeHead(ctx context.Context) (int64, error)
	// ScanVectors, CountVectors and GetCachedEmbeddings: stored vectors.
	ScanVectors(ctx context.Context, model string, fn func(ws, id string, vec []float32) error) error
	CountVectors(ctx context.Context, model string) (have, total int, err error)
	GetCachedEmbeddings(ctx context.Context, model string, hashes []string) (map[string][]float32, error)
}

var _ Source = store.Reader(nil)
