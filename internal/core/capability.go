package core

// The access API for capability packages (internal/kgcompat) that keep
// their own view of the store: the same checks core's own read and write
// paths apply, exported as functions so that such a package asks core
// instead of restating a rule. Writes go through GraphTx (graphtx.go).

import (
	"context"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// NodeVisibleTo reports whether p may see n, which carries its grants
// (WithGrants): the graph's one access check.
func NodeVisibleTo(p memory.Principal, n memory.Node) bool { return nodeVisible(p, n) }

// EdgeVisibleTo reports whether p may see e, whose ends (with their
// grants) are from and to.
func EdgeVisibleTo(p memory.Principal, e memory.Edge, from, to memory.Node) bool {
	return edgeVisible(p, e, from, to)
}

// RecordLister is the one store read grants are computed from.
type RecordLister interface {
	ListRecords(ctx context.Context, ws string, q store.RecordQuery) ([]memory.Record, error)
}

// WithGrants returns n with its record grants, read from r when the store
// has none for it yet.
func WithGrants(ctx context.Context, r RecordLister, ws string, n memory.Node) (memory.Node, error) {
	return withGrants(ctx, r, ws, n)
}

// ReadAccess is the store filter of the records p may read by default
// (sensitive ones excluded).
func ReadAccess(p memory.Principal) store.AccessFilter { return accessFilter(p, false) }

// CanChange reports whether p may change (patch, invalidate) record r.
func CanChange(p memory.Principal, r memory.Record) bool { return canChange(p, r) }

// CheckGraphWriter checks that p may write the graph.
func CheckGraphWriter(p memory.Principal) error { return graphWriter(p) }

// IsRefusal reports whether err is the gate (or a validation) refusing a
// write, as opposed to a failure of the system.
func IsRefusal(err error) bool { return isRefusal(err) }

// StoreError converts store sentinels into faults; what names the object
// in not-found messages.
func StoreError(err error, what string) error { return storeErr(err, what) }

// LineError is an import's error for a bad line: invalid_argument naming
// the line (never echoing its text).
func LineError(line int, cause error, format string, args ...any) error {
	return lineErr(line, cause, format, args...)
}

// ScreenGraphWrite runs the PII screen over what a graph write would
// store (see screenGraphWrite): a hit is refused and audited as event.
func (s *Service) ScreenGraphWrite(ctx context.Context, p memory.Principal, event, keyField, key, propsField string, props []byte) error {
	return s.screenGraphWrite(ctx, p, event, keyField, key, propsField, props)
}

// Foreground marks a request in flight, so background embedding yields
// to it; call the function it returns when the request ends.
func (s *Service) Foreground() func() { return s.fgBegin() }

// Searchable reports whether the service has a search index (Search
// answers ranked queries).
func (s *Service) Searchable() bool { return s.index != nil }
