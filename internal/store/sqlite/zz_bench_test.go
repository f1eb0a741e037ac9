package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/storetest"
)

func BenchmarkZZInsertOnly(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		r := storetest.NewRecord(fmt.Sprintf("benchmark record %d: Alice prefers PostgreSQL for backend work", i), func(r *memory.Record) {
			r.Entities = []string{"person:alice", "technology:postgresql"}
			r.Scope = memory.Scope{UserID: "alice", ProjectID: "memgate"}
		})
		if err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertRecord(ctx, "bench", r) }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkZZEmptyTx(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for b.Loop() {
		if err := s.Tx(ctx, func(tx store.Tx) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkZZAuditOnly(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for b.Loop() {
		if err := s.Tx(ctx, func(tx store.Tx) error {
			_, err := tx.AppendAudit(ctx, "bench", storetest.NewAuditEntry("record.write", `{"record_id":"x","decision":"accepted"}`))
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
