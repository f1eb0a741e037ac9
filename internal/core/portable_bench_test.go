package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// benchRecords is the size of the export and import benchmarks: records
// of two versions each.
const benchRecords = 10000

// fillBench writes n records of two versions (write, then patch) straight
// through the store, with realistic sizes.
func fillBench(b *testing.B, s *Service, n int) {
	b.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for start := 0; start < n; start += 1000 {
		err := s.store.Tx(ctx, func(tx store.Tx) error {
			for i := start; i < min(start+1000, n); i++ {
				at := t0.Add(time.Duration(i) * time.Second)
				content := fmt.Sprintf("Record %d: the payments service %d retries failed webhooks with exponential backoff, "+
					"capped at five minutes, and alerts the on-call engineer after the fourth failure of customer %d.", i, i%97, i%1013)
				r := memory.Record{ID: memory.NewID(), Type: memory.Types[i%len(memory.Types)], Category: "technology",
					Content: content, ContentSHA256: memory.SHA256Hex(content),
					Metadata: json.RawMessage(`{"source":"bench","n":` + fmt.Sprint(i) + `}`),
					Entities: []string{fmt.Sprintf("system:payments-%d", i%97), fmt.Sprintf("customer:c%d", i%1013)},
					Version:  1, Status: memory.Active,
					Source:     memory.Source{Agent: "bench", Kind: memory.Observed, Confidence: 0.9, Evidence: []string{}},
					Scope:      memory.Scope{UserID: fmt.Sprintf("u%d", i%50), ProjectID: "payments"},
					IngestedAt: at, Access: memory.Public, Gate: memory.GateInfo{DecisionID: memory.NewID(), Decision: "accepted", Origin: "external"},
					DecayScore: 1, Path: memory.PathFast, CreatedAt: at, UpdatedAt: at}
				if err := tx.InsertRecord(ctx, memory.DefaultWorkspace, r); err != nil {
					return err
				}
				r.Version, r.UpdatedAt = 2, at.Add(time.Hour)
				r.Content += " Confirmed in the March incident review."
				r.ContentSHA256 = memory.SHA256Hex(r.Content)
				if err := tx.UpdateRecord(ctx, memory.DefaultWorkspace, r, 1); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExport(b *testing.B) {
	s, _, _ := newPortableService(b, true)
	fillBench(b, s, benchRecords)
	op := LocalOperator(memory.DefaultWorkspace)
	var size int64
	b.ResetTimer()
	for range b.N {
		st, err := s.Export(context.Background(), op, io.Discard, nil)
		if err != nil || st.Records != benchRecords {
			b.Fatal(st, err)
		}
		size = st.Bytes
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(size)/benchRecords, "bytes/record")
}

func BenchmarkImport(b *testing.B) {
	src, _, _ := newPortableService(b, true)
	fillBench(b, src, benchRecords)
	var data bytes.Buffer
	if _, err := src.Export(context.Background(), LocalOperator(memory.DefaultWorkspace), &data, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dst, _, _ := newPortableService(b, false)
		b.StartTimer()
		st, err := dst.Import(context.Background(), LocalOperator(memory.DefaultWorkspace), bytes.NewReader(data.Bytes()), nil)
		if err != nil || st.Records != benchRecords {
			b.Fatal(st, err)
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}
