package core

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// stateCollector reports what the database and the index hold at scrape
// time: open approvals by kind, jobs by state, the embedding backlog and
// index sizes. Database counts are cached for stateTTL so frequent
// scrapes (or several Prometheus servers) cost one query set at most that
// often; a count that fails is left out of the scrape, not reported as 0.
type stateCollector struct {
	s *Service

	approvals, jobs, backlog, docs, vectors *prometheus.Desc

	mu      sync.Mutex
	at      time.Time
	cached  stateCounts
	haveErr bool
}

type stateCounts struct {
	approvals, jobs  map[string]int
	backlog          int
	backlogKnown, ok bool
}

const stateTTL = 10 * time.Second

func newStateCollector(s *Service) *stateCollector {
	return &stateCollector{s: s,
		approvals: prometheus.NewDesc("memgate_approvals_pending", "Open approval items by kind.", []string{"kind"}, nil),
		jobs:      prometheus.NewDesc("memgate_jobs", "Durable jobs by state (queued, running, done, dead).", []string{"state"}, nil),
		backlog:   prometheus.NewDesc("memgate_embedding_backlog", "Records without a current vector of the configured embedder.", nil, nil),
		docs:      prometheus.NewDesc("memgate_index_documents", "Documents in the lexical search index.", nil, nil),
		vectors:   prometheus.NewDesc("memgate_index_vectors", "Vectors in the dense search index.", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.approvals, c.jobs, c.backlog, c.docs, c.vectors} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.counts()
	if st.ok {
		for _, k := range []memory.ApprovalKind{memory.ApprovalPending, memory.ApprovalQuarantine, memory.ApprovalConflict} {
			ch <- prometheus.MustNewConstMetric(c.approvals, prometheus.GaugeValue, float64(st.approvals[string(k)]), string(k))
		}
		for _, js := range []store.JobStatus{store.JobQueued, store.JobRunning, store.JobDone, store.JobDead} {
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(st.jobs[string(js)]), string(js))
		}
	}
	if st.backlogKnown {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(st.backlog))
	}
	if ix := c.s.index; ix != nil {
		is := ix.Stats()
		ch <- prometheus.MustNewConstMetric(c.docs, prometheus.GaugeValue, float64(is.Docs))
		ch <- prometheus.MustNewConstMetric(c.vectors, prometheus.GaugeValue, float64(is.Vectors))
	}
}

// counts returns the cached database counts, refreshed when stale.
func (c *stateCollector) counts() stateCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.at.IsZero() && now.Sub(c.at) < stateTTL {
		return c.cached
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st stateCounts
	var err1, err2 error
	st.approvals, err1 = c.s.store.CountOpenApprovals(ctx)
	st.jobs, err2 = c.s.store.CountJobs(ctx)
	st.ok = err1 == nil && err2 == nil
	if c.s.index != nil {
		if emb := c.s.index.Embedder(); emb != nil {
			have, total, err := c.s.store.CountVectors(ctx, emb.Model())
			st.backlog, st.backlogKnown = total-have, err == nil
		} else {
			st.backlogKnown = true // no embedder: nothing to embed
		}
	}
	if !st.ok && !c.haveErr {
		c.s.log.Warn("metrics: counting approvals or jobs failed", "err", firstErr(err1, err2))
	}
	c.haveErr = !st.ok
	c.cached, c.at = st, now
	return st
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
