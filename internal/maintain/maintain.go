// Package maintain is memgate's memory maintenance: the jobs that keep a
// store healthy as it grows (SPEC §11) — decay and archive, consolidation,
// the conflicts sweep. The rules live here: which records a job touches
// and what it makes of them. Every write goes through the service's gated
// maintenance path (core.Service.ApplyMaintenance), which stamps the
// origin, audits and publishes; the jobs never touch the store's write
// side themselves.
//
// Every job is idempotent (a second run over an unchanged memory at the
// same time writes nothing) and resumable: it walks the records in pages,
// and each page's writes commit with a cursor in the database settings,
// so a job killed mid-way picks up after the last page it committed.
// Time comes from an injectable clock.
package maintain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Job names.
const (
	JobDecay       = "decay"
	JobArchive     = "archive"
	JobConsolidate = "consolidate"
	JobConflicts   = "conflicts"
)

// Jobs lists the jobs a scheduled sweep runs, in order; the sweep runs
// rescreen only when the screening rules changed.
var Jobs = []string{JobDecay, JobArchive, JobConsolidate, JobConflicts, JobRescreen, JobLessons}

// Options configure a Maintainer.
type Options struct {
	// Now is the clock policy decisions use; nil is time.Now.
	Now func() time.Time
	// Batch is how many records one page (one transaction) covers, at
	// most (and by default) store.MaxLimit.
	Batch int
	// DryRun computes what the jobs would do and writes nothing.
	DryRun bool
	// Progress, when set, is told after every page.
	Progress func(Progress)
}

// Maintainer runs maintenance jobs against one service.
type Maintainer struct {
	svc *core.Service
	o   Options
}

// New returns a Maintainer over svc.
func New(svc *core.Service, o Options) *Maintainer {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Batch <= 0 || o.Batch > store.MaxLimit {
		o.Batch = store.MaxLimit
	}
	return &Maintainer{svc: svc, o: o}
}

// Progress reports a running job.
type Progress struct {
	Job string
	// Scanned records so far, of about Total (live records when the job
	// started; 0 when unknown).
	Scanned, Total int
	// Changed counts the records written (or, in a dry run, that would
	// be).
	Changed int
	Elapsed time.Duration
}

// Rate is records scanned per second.
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Scanned) / p.Elapsed.Seconds()
}

// ETA estimates the time left (0 when unknown).
func (p Progress) ETA() time.Duration {
	r := p.Rate()
	if r <= 0 || p.Total <= p.Scanned {
		return 0
	}
	return time.Duration(float64(p.Total-p.Scanned) / r * float64(time.Second))
}

// Report says what one job run did.
type Report struct {
	Job     string `json:"job"`
	DryRun  bool   `json:"dry_run"`
	Resumed bool   `json:"resumed"` // it continued a run that was killed
	Scanned int    `json:"scanned"`
	// Decayed: decay scores updated; Changed: new versions (archived,
	// superseded); Inserted: new records (proposed beliefs); Reviews:
	// review items opened; Skipped: records that moved on meanwhile.
	Decayed  int      `json:"decayed"`
	Changed  int      `json:"changed"`
	Inserted int      `json:"inserted"`
	Reviews  int      `json:"reviews"`
	Skipped  int      `json:"skipped"`
	Approval []string `json:"approval_ids,omitempty"`
}

// Run runs one job by name.
func (m *Maintainer) Run(ctx context.Context, job string) (Report, error) {
	switch job {
	case JobDecay:
		return m.Decay(ctx)
	case JobArchive:
		return m.Archive(ctx)
	case JobConsolidate:
		return m.Consolidate(ctx)
	case JobConflicts:
		return m.Conflicts(ctx)
	case JobRescreen:
		return m.Rescreen(ctx)
	case JobLessons:
		return m.Lessons(ctx)
	}
	return Report{}, fault.Field("job", "must be one of "+strings.Join(Jobs, ", "))
}

// cursorKey is the database setting holding a job's resume point.
func cursorKey(job string) string { return "maintenance." + job + ".cursor" }

// pageFunc decides one page of records of a workspace: the batch to
// write (its Workspace, Job, Cursor fields are filled in by walk).
type pageFunc func(ws string, rs []memory.Record) (core.MaintenanceBatch, error)

// walk pages through the records of statuses in every workspace, newest
// id first, calls decide per page and writes its batch with the resume
// cursor. A run that finds a cursor starts after it.
func (m *Maintainer) walk(ctx context.Context, job string, statuses []memory.Status, decide pageFunc) (Report, error) {
	rep := Report{Job: job, DryRun: m.o.DryRun}
	st := m.svc.Store()
	key := cursorKey(job)
	var fromWS, fromID string
	if !m.o.DryRun {
		c, err := m.svc.MaintenanceCursor(ctx, key)
		if err != nil {
			return rep, err
		}
		if c != "" {
			fromWS, fromID, _ = strings.Cut(c, "\t")
			rep.Resumed = true
		}
	}
	wss, err := st.ListWorkspaces(ctx)
	if err != nil {
		return rep, fault.Wrap(fault.Unavailable, err, "listing workspaces")
	}
	_, total, err := st.CountVectors(ctx, "")
	if err != nil {
		total = 0 // only the ETA needs it
	}
	start := time.Now()
	for _, w := range wss {
		if fromWS != "" && w.ID < fromWS {
			continue
		}
		before := ""
		if w.ID == fromWS {
			before = fromID
		}
		for {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			rs, err := st.ListRecords(ctx, w.ID, store.RecordQuery{
				Statuses: statuses, Access: allAccess, IncludeInvalidated: true, Before: before, Limit: m.o.Batch,
			})
			if err != nil {
				return rep, fault.Wrap(fault.Unavailable, err, "listing records")
			}
			if len(rs) == 0 {
				break
			}
			before = rs[len(rs)-1].ID
			b, err := decide(w.ID, rs)
			if err != nil {
				return rep, err
			}
			rep.Scanned += len(rs)
			b.Workspace, b.Job = w.ID, job
			if b.Origin == "" {
				b.Origin = memory.OriginMaintenance
			}
			if m.o.DryRun {
				rep.Decayed += len(b.Decay)
				rep.Changed += len(b.Changes)
				rep.Inserted += len(b.Inserts)
				rep.Reviews += len(b.Approvals)
			} else {
				b.CursorKey, b.Cursor = key, w.ID+"\t"+before
				res, err := m.svc.ApplyMaintenance(ctx, b)
				if err != nil {
					return rep, err
				}
				rep.Decayed += res.Decayed
				rep.Changed += res.Changed
				rep.Inserted += res.Inserted
				rep.Skipped += res.Skipped
				rep.Reviews += len(res.ApprovalIDs)
				rep.Approval = append(rep.Approval, res.ApprovalIDs...)
			}
			if m.o.Progress != nil {
				m.o.Progress(Progress{Job: job, Scanned: rep.Scanned, Total: total,
					Changed: rep.Decayed + rep.Changed + rep.Inserted + rep.Reviews, Elapsed: time.Since(start)})
			}
			if len(rs) < m.o.Batch {
				break
			}
		}
	}
	if !m.o.DryRun {
		if err := m.svc.PutMaintenanceCursor(ctx, key, ""); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// allAccess admits every access level: maintenance is memgate's own
// bookkeeping over the whole store, not a read on anyone's behalf.
var allAccess = store.AccessFilter{Levels: memory.AccessLevels}

// Sweep runs every job once, in order, and returns their reports.
func (m *Maintainer) Sweep(ctx context.Context) ([]Report, error) {
	var out []Report
	for _, j := range Jobs {
		if j == JobRescreen {
			due, err := m.rescreenDue(ctx)
			if err != nil {
				return out, err
			}
			if !due {
				continue
			}
		}
		r, err := m.Run(ctx, j)
		if err != nil {
			return out, fmt.Errorf("maintenance %s: %w", j, err)
		}
		out = append(out, r)
	}
	return out, nil
}
