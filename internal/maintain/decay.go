package maintain

import (
	"context"
	"math"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// Score is a record's decay score at now: 1 when just retrieved (or
// created, if never retrieved), halving every half-life of its type, and
// 1 for types that never decay (half-life 0). It is rounded to four
// decimals so that two runs at the same time agree exactly.
func Score(hl gate.HalfLives, r memory.Record, now time.Time) float64 {
	h := hl.Of(r.Type)
	if h <= 0 {
		return 1
	}
	ref := r.CreatedAt
	if r.LastRetrievedAt != nil && r.LastRetrievedAt.After(ref) {
		ref = *r.LastRetrievedAt
	}
	age := now.Sub(ref)
	if age <= 0 {
		return 1
	}
	s := math.Pow(0.5, float64(age)/float64(h))
	return math.Round(s*1e4) / 1e4
}

// Decay recomputes decay_score for every active record. It writes a
// score only where it changed: scores are bookkeeping on the head (no
// version), and each page that wrote any is audited as one
// maintenance.decay entry with its count.
func (m *Maintainer) Decay(ctx context.Context) (Report, error) {
	hl := m.svc.Policy().Maintenance.HalfLife
	now := memory.Canon(m.o.Now())
	return m.walk(ctx, JobDecay, []memory.Status{memory.Active}, func(_ string, rs []memory.Record) (core.MaintenanceBatch, error) {
		var b core.MaintenanceBatch
		for _, r := range rs {
			if s := Score(hl, r, now); s != r.DecayScore {
				if b.Decay == nil {
					b.Decay = map[string]float64{}
				}
				b.Decay[r.ID] = s
			}
		}
		return b, nil
	})
}

// Archive archives active records whose decay score, computed now, is
// below the policy's maintenance.archive_below. An archived record is a
// new version: hidden from default reads and search, kept with its
// history for audit, and restorable by an operator (core.Service.Restore).
func (m *Maintainer) Archive(ctx context.Context) (Report, error) {
	pol := m.svc.Policy().Maintenance
	now := memory.Canon(m.o.Now())
	return m.walk(ctx, JobArchive, []memory.Status{memory.Active}, func(_ string, rs []memory.Record) (core.MaintenanceBatch, error) {
		var b core.MaintenanceBatch
		if pol.ArchiveBelow <= 0 {
			return b, nil
		}
		for _, r := range rs {
			if pol.HalfLife.Of(r.Type) <= 0 {
				continue
			}
			s := Score(pol.HalfLife, r, now)
			if s >= pol.ArchiveBelow {
				continue
			}
			next := r
			next.Status, next.DecayScore = memory.Archived, s
			b.Changes = append(b.Changes, core.MaintenanceChange{Next: next, ExpectedVersion: r.Version,
				Event: "record.archive", Payload: map[string]any{"decay_score": s, "threshold": pol.ArchiveBelow}})
		}
		return b, nil
	})
}
