package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/storetest"
)

func benchStore(b *testing.B) *Store {
	s := openTest(b, Options{})
	ctx := context.Background()
	if err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "bench", CreatedAt: time.Now()})
	}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkInsertRecordTx measures the write path: one transaction that
// inserts a record (head, version, two entities) and appends its audit entry.
func BenchmarkInsertRecordTx(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r := storetest.NewRecord(fmt.Sprintf("benchmark record %d: Alice prefers PostgreSQL for backend work", i), func(r *memory.Record) {
			r.Entities = []string{"person:alice", "technology:postgresql"}
			r.Scope = memory.Scope{UserID: "alice", ProjectID: "memgate"}
		})
		err := s.Tx(ctx, func(tx store.Tx) error {
			if err := tx.InsertRecord(ctx, "bench", r); err != nil {
				return err
			}
			_, err := tx.AppendAudit(ctx, "bench", storetest.NewAuditEntry("record.write",
				`{"record_id":"`+r.ID+`","decision":"accepted","content_sha256":"`+r.ContentSHA256+`"}`))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetRecord measures a point read on the read pool.
func BenchmarkGetRecord(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	r := storetest.NewRecord("read me", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertRecord(ctx, "bench", r) }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.GetRecord(ctx, "bench", r.ID); err != nil {
			b.Fatal(err)
		}
	}
}
