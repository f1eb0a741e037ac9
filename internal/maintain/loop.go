package maintain

import (
	"context"
	"log/slog"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// LoopOptions configure the scheduled sweep.
type LoopOptions struct {
	// Interval between sweeps; 0 is one hour.
	Interval time.Duration
	// Now is the clock the jobs decide by; nil is time.Now.
	Now func() time.Time
	// Tick, when set, drives the schedule instead of a ticker of
	// Interval (tests send on it).
	Tick <-chan time.Time
	Log  *slog.Logger
	// AfterSweep, when set, is told each sweep's reports.
	AfterSweep func([]Report, error)
}

// Loop returns the scheduled maintenance loop for core.Loops.Maintenance:
// the service's lifecycle owner (Run) starts it and stops it with the
// other loops. Each tick runs every job once; a job interrupted by
// shutdown resumes from its cursor at the next sweep (or the next
// `memgate maintain`).
func Loop(o LoopOptions) func(ctx context.Context, s *core.Service) {
	if o.Interval <= 0 {
		o.Interval = time.Hour
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, s *core.Service) {
		tick := o.Tick
		if tick == nil {
			t := time.NewTicker(o.Interval)
			defer t.Stop()
			tick = t.C
		}
		m := New(s, Options{Now: o.Now})
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
			reps, err := m.Sweep(ctx)
			if err != nil && ctx.Err() == nil {
				o.Log.Warn("maintenance sweep failed", "err", err)
			}
			for _, r := range reps {
				if r.Decayed+r.Changed+r.Inserted+r.Reviews > 0 {
					o.Log.Info("maintenance", "job", r.Job, "scanned", r.Scanned, "decayed", r.Decayed,
						"changed", r.Changed, "inserted", r.Inserted, "reviews", r.Reviews)
				}
			}
			if o.AfterSweep != nil {
				o.AfterSweep(reps, err)
			}
		}
	}
}
