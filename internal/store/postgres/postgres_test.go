package postgres

import (
	"context"
	"testing"

	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/storetest"
)

// openTest opens a store on a fresh database of its own.
func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.URL(t), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	pgtest.ServerURL(t) // skip (or fail under CI) once, not per subtest
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}
