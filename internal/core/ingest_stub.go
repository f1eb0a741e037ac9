package core

import (
	"context"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

type ExtractionOptions struct{}

func (s *Service) handleFlush(ctx context.Context, j store.Job) (jobCommit, error) {
	return func(ctx context.Context, tx store.Tx) (any, []memory.Record, error) {
		return map[string]int{}, nil, nil
	}, nil
}
