// Package core is memgate's service layer: the one place where business
// rules live. REST, MCP, the gateway and the CLI are thin adapters over a
// *Service; every write goes through its gate path and every decision is
// audited in the same transaction as its effect.
package core

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/metrics"
	"github.com/memgate/memgate/internal/ratelimit"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/tracing"
)

// Options configure a Service.
type Options struct {
	Store   store.Store
	Policy  gate.Policy
	Logger  *slog.Logger     // nil discards
	Metrics *metrics.Metrics // nil disables
	Now     func() time.Time // nil is time.Now
	// Index is the search engine kept current by every committed change;
	// nil disables search and similarity checks.
	Index *retrieve.Engine
	// Jobs tune the durable job queue.
	Jobs JobOptions
	// Extraction configures conversation extraction (gateway flushes).
	Extraction ExtractionOptions
	// OnErased, when set, runs after every committed erasure (a record or
	// a subject forgotten, an approval item rejected or expired), before
	// the database files are scrubbed: it invalidates derived files that
	// may hold the erased text (the CLI deletes the search index snapshot).
	OnErased func()
	// ScrubWait is how long an erasure waits for the database files to be
	// scrubbed before answering unavailable (the scrub goes on; a retry
	// waits for it): 0 means 30 s, negative until the scrub ends.
	ScrubWait time.Duration
	// Loops select the background work Run does (see lifecycle.go).
	Loops Loops
	// Backups configure online backups (backup.go).
	Backups BackupOptions
	// Tracer provides the OpenTelemetry tracer of spans that start here
	// (jobs, MCP over stdio, HTTP requests); nil disables tracing.
	Tracer trace.TracerProvider
	// Webhooks tune webhook delivery (internal/events); Loops.Webhooks
	// runs it.
	Webhooks events.Options
}

// Service implements memgate's operations over a store.
type Service struct {
	store   store.Store // o.Store behind the write watch (see WriteReady)
	watch   *writeWatch
	policy  gate.Policy
	log     *slog.Logger
	metrics *metrics.Metrics
	now     func() time.Time
	limits  map[memory.PrincipalKind]*ratelimit.Limiter
	index   *retrieve.Engine

	touches   chan touch    // retrieval bookkeeping, drained by RunUsage
	embedWake chan struct{} // nudges RunEmbedder after writes
	embedCur  embedCursor   // where the embedding job's work list was read up to
	fg        foreground    // requests in flight, which background embedding yields to (yield.go)

	auditMu     sync.Mutex
	auditStatus AuditStatus

	jobs    *jobQueue
	extract ExtractionOptions
	graphMu sync.Mutex
	graph   graphSink
	// graphCatchMu serialises CatchUpGraph; indexCatchUps and
	// graphCatchUps let writers share catch-ups (follow.go).
	graphCatchMu  sync.Mutex
	indexCatchUps catchUps
	graphCatchUps catchUps
	handed        handOff // records written here, for the index's catch-up (follow.go)
	onErased      func()
	erasure       *erasure

	loops Loops
	life  lifecycle

	backups   BackupOptions
	deliverer *events.Deliverer
	tracer    trace.TracerProvider
}

// graphSink is the in-memory graph index, fed by LoadGraph and then only
// by CatchUpGraph (follow.go).
type graphSink interface {
	apply(ws string, fx graphEffects)
}

// New returns a service. It does not start background work; see Run.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	rl := o.Policy.RateLimit
	watch := &writeWatch{Store: o.Store}
	s := &Service{
		store:   watch,
		watch:   watch,
		policy:  o.Policy,
		log:     o.Logger,
		metrics: o.Metrics,
		now:     o.Now,
		limits: map[memory.PrincipalKind]*ratelimit.Limiter{
			memory.KindAgent:    ratelimit.New(rl.Agent.PerSecond, rl.Agent.Burst, o.Now),
			memory.KindOperator: ratelimit.New(rl.Operator.PerSecond, rl.Operator.Burst, o.Now),
			memory.KindUser:     ratelimit.New(rl.User.PerSecond, rl.User.Burst, o.Now),
		},
		auditStatus: AuditStatus{OK: true},
		index:       o.Index,
		touches:     make(chan touch, 1024),
		embedWake:   make(chan struct{}, 1),
		jobs:        newJobQueue(o.Jobs),
		extract:     o.Extraction,
		onErased:    o.OnErased,
		erasure:     newErasure(o.ScrubWait),
		loops:       o.Loops.withDefaults(),
		backups:     o.Backups,
		tracer:      tracing.Provider(o.Tracer),
	}
	s.jobs.handlers[FlushJobKind] = s.handleFlush
	wo := o.Webhooks
	if wo.Logger == nil {
		wo.Logger = o.Logger
	}
	if wo.Metrics == nil {
		wo.Metrics = o.Metrics
	}
	s.deliverer = events.NewDeliverer(o.Store, wo)
	if o.Metrics != nil {
		// A second service on the same registry (tests) keeps the
		// first's collector.
		_ = o.Metrics.Registry.Register(newStateCollector(s))
	}
	if o.Index != nil {
		o.Index.SetGraph(s.graphSignal)
	}
	return s
}

// TracerProvider returns the provider of the spans the transports start.
func (s *Service) TracerProvider() trace.TracerProvider { return s.tracer }

// Policy returns the policy in force.
func (s *Service) Policy() gate.Policy { return s.policy }

// Store returns the underlying store (for ops endpoints and tests).
func (s *Service) Store() store.Store { return s.watch.Store }

func (s *Service) clock() time.Time { return memory.Canon(s.now()) }

// storeErr converts store sentinels into faults. what names the object for
// not-found messages.
func storeErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fault.Wrap(fault.NotFound, err, "%s not found", what)
	case errors.Is(err, store.ErrVersionConflict):
		return fault.Wrap(fault.VersionConflict, err, "%s was modified concurrently: expected_version is not the current version", what)
	case errors.Is(err, store.ErrExists):
		return fault.Wrap(fault.Conflict, err, "%s already exists", what)
	case errors.Is(err, store.ErrUnavailable):
		return &fault.Error{Code: fault.Unavailable, Message: "database unavailable, retry later", RetryAfter: 5 * time.Second, Cause: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &fault.Error{Code: fault.Unavailable, Message: "request cancelled or timed out", RetryAfter: time.Second, Cause: err}
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return err
	}
	return fault.Wrap(fault.Internal, err, "internal error")
}

// tx runs fn in a store transaction and maps store errors to faults.
func (s *Service) tx(ctx context.Context, what string, fn func(store.Tx) error) error {
	defer s.fgBegin()()
	ctx, span := tracing.Start(ctx, "store.tx", attribute.String("memgate.object", what))
	defer span.End()
	err := storeErr(s.store.Tx(ctx, fn), what)
	if err != nil {
		tracing.Fail(span, string(fault.As(err).Code))
	}
	return err
}

func actorKind(p memory.Principal) string {
	switch p.Kind {
	case memory.KindOperator:
		return audit.ActorOperator
	case memory.KindAgent:
		return audit.ActorAgent
	case memory.KindUser:
		return audit.ActorUser
	}
	return audit.ActorSystem
}

// appendAudit writes one audit entry in tx. payload must hold no secrets
// and no content: ids, decisions, counts and hashes only.
func appendAudit(ctx context.Context, tx store.Tx, ws string, actor memory.Principal, id, event string, at time.Time, payload map[string]any) (audit.Entry, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return audit.Entry{}, err
	}
	if id == "" {
		id = memory.NewID()
	}
	return tx.AppendAudit(ctx, ws, audit.Entry{
		ID: id, TS: at, ActorKind: actorKind(actor), ActorID: actor.ID, Event: event, Payload: raw,
	})
}

// systemPrincipal is memgate acting on its own behalf (TTL expiry, jobs).
func systemPrincipal(ws string) memory.Principal {
	return memory.Principal{ID: "system", Workspace: ws, Kind: memory.KindSystem, Name: "memgate"}
}

func (s *Service) countDecision(decision, reason string) {
	if s.metrics != nil {
		s.metrics.GateDecisions.WithLabelValues(decision, reason).Inc()
	}
}

// every calls fn each interval until ctx ends: the loop of the Service's
// periodic background work.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
