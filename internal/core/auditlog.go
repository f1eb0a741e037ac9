package core

import (
	"context"
	"errors"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// VerifyReport is the result of walking one workspace's audit chain.
type VerifyReport struct {
	Workspace string             `json:"workspace"`
	OK        bool               `json:"ok"`
	Entries   int64              `json:"entries"`
	Head      string             `json:"head"`
	Broken    *audit.BrokenError `json:"broken,omitempty"`
}

// VerifyAudit walks a workspace's whole chain and names the first broken
// entry.
func (s *Service) VerifyAudit(ctx context.Context, ws string) (VerifyReport, error) {
	if _, err := s.store.GetWorkspace(ctx, ws); err != nil {
		return VerifyReport{}, storeErr(err, "workspace")
	}
	var v audit.Verifier
	rep := VerifyReport{Workspace: ws, OK: true}
	after := int64(0)
	for {
		es, err := s.store.ListAudit(ctx, ws, after, 1000)
		if err != nil {
			return rep, storeErr(err, "audit log")
		}
		for _, e := range es {
			if err := v.Next(e); err != nil {
				var be *audit.BrokenError
				if errors.As(err, &be) {
					rep.OK, rep.Broken = false, be
					rep.Entries, rep.Head = v.Count(), v.Head()
					if err := s.reportBroken(ctx, ws, be); err != nil {
						s.log.Error("recording an audit.broken event failed", "workspace", ws, "err", err)
					}
					return rep, nil
				}
				return rep, err
			}
		}
		if len(es) < 1000 {
			break
		}
		after = es[len(es)-1].Seq
	}
	rep.Entries, rep.Head = v.Count(), v.Head()
	return rep, nil
}

// AuditStatus is the last verification of every workspace, for /readyz.
type AuditStatus struct {
	OK        bool           `json:"ok"`
	CheckedAt time.Time      `json:"checked_at"`
	Broken    []VerifyReport `json:"broken,omitempty"`
	Err       string         `json:"error,omitempty"`
}

// CheckAllAudit verifies every workspace's chain and records the outcome
// for LastAuditStatus.
func (s *Service) CheckAllAudit(ctx context.Context) AuditStatus {
	st := AuditStatus{OK: true, CheckedAt: s.clock()}
	wss, err := s.store.ListWorkspaces(ctx)
	if err != nil {
		st.OK, st.Err = false, "cannot list workspaces"
	}
	for _, w := range wss {
		rep, err := s.VerifyAudit(ctx, w.ID)
		if err != nil {
			st.OK, st.Err = false, "verification could not complete"
			break
		}
		if !rep.OK {
			st.OK = false
			st.Broken = append(st.Broken, rep)
		}
	}
	if ctx.Err() != nil {
		return s.LastAuditStatus() // shutting down: keep the last real answer
	}
	s.auditMu.Lock()
	s.auditStatus = st
	s.auditMu.Unlock()
	if s.metrics != nil {
		v := 0.0
		if st.OK {
			v = 1
		}
		s.metrics.AuditChainOK.Set(v)
	}
	if !st.OK {
		s.log.Error("audit chain verification failed", "broken_workspaces", len(st.Broken), "err", st.Err)
	}
	return st
}

// LastAuditStatus returns the outcome of the last CheckAllAudit.
func (s *Service) LastAuditStatus() AuditStatus {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	return s.auditStatus
}

// RunAuditChecks re-verifies every chain every interval until ctx ends.
func (s *Service) RunAuditChecks(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() { s.CheckAllAudit(ctx) })
}

// AuditPage is one page of the audit log.
type AuditPage struct {
	Entries []audit.Entry `json:"entries"`
	NextSeq int64         `json:"next_after,omitempty"`
}

// ListAudit pages through the operator's workspace's audit log.
func (s *Service) ListAudit(ctx context.Context, by memory.Principal, after int64, limit int) (AuditPage, error) {
	if err := requireOperator(by); err != nil {
		return AuditPage{}, err
	}
	if limit == 0 {
		limit = store.DefaultLimit
	}
	if limit < 0 || limit > store.MaxLimit || after < 0 {
		return AuditPage{}, fault.Field("limit", "must be between 1 and 500, after >= 0")
	}
	es, err := s.store.ListAudit(ctx, by.Workspace, after, limit)
	if err != nil {
		return AuditPage{}, storeErr(err, "audit log")
	}
	if es == nil {
		es = []audit.Entry{}
	}
	p := AuditPage{Entries: es}
	if len(es) == limit {
		p.NextSeq = es[len(es)-1].Seq
	}
	return p, nil
}
