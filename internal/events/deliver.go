package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/backoff"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/metrics"
	"github.com/memgate/memgate/internal/remote"
	"github.com/memgate/memgate/internal/store"
)

// Delivery is at least once: an endpoint's cursor moves past an event
// only in the transaction that logs its delivery (or gives up on it), so
// a crash between the POST and that commit repeats the POST, with the same
// event id. Each endpoint is served by one worker at a time, under a lease
// in the database (so replicas sharing PostgreSQL do not both deliver),
// in event order; a failing endpoint backs off on its own and never holds
// up writes or other endpoints.

// Options tune a Deliverer. Zero values take the defaults noted.
type Options struct {
	// Client sends deliveries; nil is a client that follows no redirects.
	Client *http.Client
	// Now is the clock (tests inject one); nil is time.Now.
	Now func() time.Time
	// Timeout bounds one POST; 0 is 10s.
	Timeout time.Duration
	// Poll is how often Run looks for work; 0 is 1s.
	Poll time.Duration
	// Concurrency bounds the endpoints served at once; 0 is 4.
	Concurrency int
	// MaxAttempts is how many failed attempts an event gets before the
	// endpoint gives up on it (logged as dead); 0 is 12.
	MaxAttempts int
	// BackoffBase and BackoffMax pace retries: base·2^(n-1), capped, with
	// jitter; 0 is 1s and 1h.
	BackoffBase, BackoffMax time.Duration
	// Batch is how many events one lease delivers at most; 0 is 100.
	Batch   int
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Timeout, 10*time.Second)
	def(&o.Poll, time.Second)
	def(&o.BackoffBase, time.Second)
	def(&o.BackoffMax, time.Hour)
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 12
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Deliverer sends the outbox's events to the registered endpoints.
type Deliverer struct {
	st    store.Store
	o     Options
	owner string
	wake  chan struct{}
	sem   chan struct{}

	mu       sync.Mutex
	inFlight map[string]bool // webhook ids being served by this process
}

// NewDeliverer returns a deliverer over st.
func NewDeliverer(st store.Store, o Options) *Deliverer {
	o = o.withDefaults()
	return &Deliverer{st: st, o: o, owner: "deliverer-" + memory.NewID(), wake: make(chan struct{}, 1),
		sem: make(chan struct{}, o.Concurrency), inFlight: map[string]bool{}}
}

// Wake nudges Run to look for work now (after a commit that appended
// events); it never blocks.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run serves endpoints until ctx ends, then waits for deliveries in
// flight. An endpoint still being served is not started again, so one slow
// endpoint occupies at most one worker.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(d.o.Poll)
	defer t.Stop()
	for {
		d.start(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
	}
}

// RunOnce serves every endpoint that is due once and waits for them.
func (d *Deliverer) RunOnce(ctx context.Context) error {
	var wg sync.WaitGroup
	err := d.start(ctx, &wg)
	wg.Wait()
	return err
}

// start launches a worker for each due endpoint not already served here,
// as far as the concurrency bound allows.
func (d *Deliverer) start(ctx context.Context, wg *sync.WaitGroup) error {
	hooks, err := d.st.ListWebhooks(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			d.o.Logger.Warn("listing webhooks failed", "err", err)
		}
		return err
	}
	now := d.o.Now()
	for _, w := range hooks {
		if w.NextAt.After(now) {
			continue
		}
		d.mu.Lock()
		busy := d.inFlight[w.ID]
		if !busy {
			select {
			case d.sem <- struct{}{}:
				d.inFlight[w.ID] = true
			default:
				busy = true // every worker is taken: next round
			}
		}
		d.mu.Unlock()
		if busy {
			continue
		}
		wg.Go(func() {
			defer func() {
				d.mu.Lock()
				delete(d.inFlight, w.ID)
				d.mu.Unlock()
				<-d.sem
			}()
			if err := d.serve(ctx, w.Workspace, w.ID); err != nil && ctx.Err() == nil {
				d.o.Logger.Warn("webhook delivery pass failed", "webhook_id", w.ID, "err", err)
			}
		})
	}
	return nil
}

// lease is how long one worker holds an endpoint without progress: one
// POST and its commit, each bounded by Timeout, plus as much slack. Every
// delivery renews it, so a batch may take longer, and an endpoint whose
// process died is taken over soon.
func (d *Deliverer) lease() time.Duration { return 3 * d.o.Timeout }

// serve delivers the events an endpoint has not yet had, in order, until
// they run out or one fails; it reads them a batch at a time.
func (d *Deliverer) serve(ctx context.Context, ws, id string) error {
	var w store.Webhook
	var ok bool
	err := d.st.Tx(ctx, func(tx store.Tx) error {
		var err error
		w, ok, err = tx.ClaimWebhook(ctx, ws, id, d.owner, d.o.Now(), d.lease())
		return err
	})
	if err != nil || !ok {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = d.st.Tx(rctx, func(tx store.Tx) error { return tx.ReleaseWebhook(rctx, ws, id, d.owner) })
	}()
	cursor, attempts := w.Cursor, w.Attempts
	saved := cursor
	for ctx.Err() == nil {
		evs, err := d.st.ListEvents(ctx, ws, cursor, d.o.Batch)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if len(w.Kinds) > 0 && !slices.Contains(w.Kinds, e.Kind) {
				cursor = e.Seq // not subscribed: skipped, saved with the next delivery
				continue
			}
			if ctx.Err() != nil {
				break
			}
			attempts++
			dl := d.post(ctx, w, e, attempts)
			u := store.WebhookUpdate{Cursor: cursor, Attempts: attempts, NextAt: dl.At, LeaseUntil: dl.At.Add(d.lease())}
			switch {
			case dl.Outcome == store.DeliveryDelivered:
				u.Cursor, u.Attempts = e.Seq, 0
			case attempts >= d.o.MaxAttempts:
				dl.Outcome = store.DeliveryDead
				u.Cursor, u.Attempts = e.Seq, 0
			default:
				u.NextAt = dl.At.Add(d.backoff(attempts, dl.retryAfter))
			}
			if err := d.commit(ctx, w, dl.Delivery, u); err != nil {
				return err
			}
			d.o.Metrics.ObserveWebhook(dl.Outcome)
			if dl.Outcome == store.DeliveryFailed {
				return nil
			}
			cursor, attempts, saved = u.Cursor, 0, u.Cursor
		}
		if len(evs) < d.o.Batch {
			break // caught up
		}
	}
	if cursor != saved {
		// Skipped events after the last delivery: save the position.
		return d.st.Tx(ctx, func(tx store.Tx) error {
			now := d.o.Now()
			return tx.AdvanceWebhook(ctx, ws, id, d.owner, store.WebhookUpdate{Cursor: cursor, NextAt: now, LeaseUntil: now.Add(d.lease())})
		})
	}
	return nil
}

// commit logs an attempt and moves the endpoint's cursor in one
// transaction; it outlives a cancelled ctx briefly so a delivery that
// happened is recorded.
func (d *Deliverer) commit(ctx context.Context, w store.Webhook, dl store.Delivery, u store.WebhookUpdate) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.Timeout)
	defer cancel()
	return d.st.Tx(cctx, func(tx store.Tx) error {
		if err := tx.InsertDelivery(cctx, dl); err != nil {
			return err
		}
		return tx.AdvanceWebhook(cctx, w.Workspace, w.ID, d.owner, u)
	})
}

type attempt struct {
	store.Delivery
	retryAfter time.Duration
}

// post sends one event to w and describes the attempt. The response body
// is read (so the connection can be reused) and dropped: it is the
// receiver's and never logged.
func (d *Deliverer) post(ctx context.Context, w store.Webhook, e store.Event, n int) attempt {
	a := attempt{Delivery: store.Delivery{ID: memory.NewID(), Workspace: w.Workspace, WebhookID: w.ID, EventID: e.ID,
		EventSeq: e.Seq, EventKind: e.Kind, Attempt: n, Outcome: store.DeliveryFailed}}
	body, _ := json.Marshal(PayloadOf(e))
	start := d.o.Now()
	rctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		a.At, a.Error = start, "invalid endpoint URL"
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "memgate-webhooks")
	req.Header.Set(EventIDHeader, e.ID)
	req.Header.Set(EventTypeHeader, e.Kind)
	req.Header.Set(DeliveryIDHeader, a.ID)
	req.Header.Set(SignatureHeader, Sign(w.Secret, start, body))
	resp, err := d.o.Client.Do(req)
	a.At = d.o.Now()
	a.Duration = max(a.At.Sub(start), 0)
	if err != nil {
		a.Error = transportError(err)
		return a
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	a.StatusCode = resp.StatusCode
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		a.Outcome = store.DeliveryDelivered
		return a
	}
	a.Error = "HTTP " + strconv.Itoa(resp.StatusCode)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		a.retryAfter, _ = remote.RetryAfter(resp.Header.Get("Retry-After"), a.At)
	}
	return a
}

// transportError describes a failed request without its URL, whose query
// may hold a receiver's token.
func transportError(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return "request failed: " + msg
}

// backoff is the wait after failed attempt n: base·2^(n-1), capped, with
// equal jitter (the shared internal/backoff), or what the receiver's
// Retry-After asked if longer.
func (d *Deliverer) backoff(n int, retryAfter time.Duration) time.Duration {
	return max(backoff.Delay(d.o.BackoffBase, d.o.BackoffMax, n-1), min(retryAfter, d.o.BackoffMax))
}
