// Package contextpack assembles the one bounded, sectioned context an
// agent asks for before a task (SPEC §11): constraints (hard rules and
// pinned memory files), procedures with their success rates, knowledge
// (records and resource chunks with citations), graph facts about the
// entities involved, and recent activity in the session.
//
// Everything is read through core's principal-checked read methods
// (Search, List, GetNode, Neighbors): assembly sees exactly what the
// caller could read one call at a time, never the store. The envelope is
// packed under a token budget it never exceeds, in an order that depends
// only on the memory state (so prompt caches hit), and renders as
// Markdown as well as JSON.
package contextpack

import (
	"context"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Reader is what assembly reads through. *core.Service implements it;
// each method applies the caller's access check.
type Reader interface {
	Search(ctx context.Context, p memory.Principal, req core.SearchRequest) (core.SearchResponse, error)
	List(ctx context.Context, p memory.Principal, req core.ListRequest) (core.ListResult, error)
	GetNode(ctx context.Context, p memory.Principal, ref string, includeArchived bool) (memory.Node, error)
	Neighbors(ctx context.Context, p memory.Principal, req core.NeighborRequest) ([]core.Neighbor, error)
}

// PinnedFile is a memory file pinned into every context of its scope.
type PinnedFile struct {
	// Path names the file, e.g. "AGENTS.md".
	Path    string `json:"path"`
	Content string `json:"content"`
	// Citation points back to the file, e.g. a mem:// URI of its record.
	Citation string `json:"citation,omitempty"`
}

// PinnedSource lists the pinned memory files p may read in scope, in a
// stable order. An implementation applies p's access check itself.
type PinnedSource interface {
	Pinned(ctx context.Context, p memory.Principal, scope memory.Scope) ([]PinnedFile, error)
}

// Defaults and bounds of a request.
const (
	DefaultBudget      = 2000
	MaxBudget          = 100000
	DefaultChunks      = 6
	DefaultFacts       = 10
	DefaultRecent      = 3
	DefaultProcedures  = 3
	DefaultConstraints = 20
	DefaultItemTokens  = 400
	maxSectionBound    = 50
	// ruleScan bounds the rules read (category "rule"), extractedScan the
	// newest extracted facts searched for rule tags.
	ruleScan      = 2000
	extractedScan = 500
	// factEntities bounds the entities whose graph neighbourhood is read.
	factEntities = 5
)

// Request asks for the context of a task.
type Request struct {
	// Query is the task or question the context is for.
	Query string       `json:"query"`
	Scope memory.Scope `json:"scope"`
	// BudgetTokens bounds the estimated tokens of the Markdown rendering
	// (default 2000).
	BudgetTokens int `json:"budget_tokens,omitempty"`
	// Per-section bounds (0 means the default).
	MaxConstraints int `json:"max_constraints,omitempty"`
	MaxProcedures  int `json:"max_procedures,omitempty"`
	MaxChunks      int `json:"max_chunks,omitempty"`
	MaxFacts       int `json:"max_facts,omitempty"`
	MaxRecent      int `json:"max_recent,omitempty"`
	// MaxItemTokens bounds one item; longer content is cut (default 400).
	MaxItemTokens int `json:"max_item_tokens,omitempty"`
}

// Section names, in envelope order.
const (
	SectionConstraints = "constraints"
	SectionProcedures  = "procedures"
	SectionKnowledge   = "knowledge"
	SectionFacts       = "facts"
	SectionRecent      = "recent"
)

// Item kinds.
const (
	KindPinned    = "pinned"
	KindRule      = "rule"
	KindProcedure = "procedure"
	KindRecord    = "record"
	KindChunk     = "chunk"
	KindFact      = "fact"
	KindActivity  = "activity"
)

// Item is one entry of a section.
type Item struct {
	Kind        string      `json:"kind"`
	ID          string      `json:"id,omitempty"`
	Type        memory.Type `json:"type,omitempty"`
	Path        string      `json:"path,omitempty"`
	Content     string      `json:"content"`
	Citation    string      `json:"citation,omitempty"`
	ResourceURI string      `json:"resource_uri,omitempty"`
	Score       float64     `json:"score,omitempty"`
	Confidence  float64     `json:"confidence,omitempty"`
	SuccessRate *float64    `json:"success_rate,omitempty"`
	UseCount    *int64      `json:"use_count,omitempty"`
	// Truncated is set when the content was cut to fit.
	Truncated bool `json:"truncated,omitempty"`
	Tokens    int  `json:"tokens"`
	line      string
}

// Section is one part of the envelope.
type Section struct {
	Name  string `json:"name"`
	Items []Item `json:"items"`
	// Tokens is the estimate of the section's Markdown, heading included.
	Tokens int `json:"tokens"`
	// Omitted counts candidates left out by the section bound or the
	// budget.
	Omitted int `json:"omitted,omitempty"`
}

// Sufficiency levels of the knowledge found.
const (
	SufficiencyLow     = "low"
	SufficiencyHealthy = "healthy"
	SufficiencyHigh    = "high"
)

// Envelope is the assembled context.
type Envelope struct {
	Query        string `json:"query"`
	BudgetTokens int    `json:"budget_tokens"`
	// Tokens is the estimate of the whole Markdown; never above the budget.
	Tokens int `json:"tokens"`
	// Sufficiency says whether the knowledge found looks enough for the
	// task: low, healthy or high (see docs/context.md).
	Sufficiency string    `json:"sufficiency"`
	Sections    []Section `json:"sections"`
	Markdown    string    `json:"markdown"`
	// Degraded names the parts that could not be read (e.g. "graph").
	Degraded []string `json:"degraded,omitempty"`
}

// Assembler builds envelopes.
type Assembler struct {
	r      Reader
	pinned PinnedSource
}

// New returns an assembler reading through r. pinned may be nil: no
// pinned files then.
func New(r Reader, pinned PinnedSource) *Assembler {
	return &Assembler{r: r, pinned: pinned}
}

func (req *Request) normalize() error {
	if req.Query == "" {
		return fault.Field("query", "is required")
	}
	if len(req.Query) > 4096 {
		return fault.Field("query", "at most 4096 bytes")
	}
	if req.BudgetTokens == 0 {
		req.BudgetTokens = DefaultBudget
	}
	if req.BudgetTokens < 1 || req.BudgetTokens > MaxBudget {
		return fault.Field("budget_tokens", "must be between 1 and 100000")
	}
	if req.MaxItemTokens == 0 {
		req.MaxItemTokens = DefaultItemTokens
	}
	if req.MaxItemTokens < 1 || req.MaxItemTokens > MaxBudget {
		return fault.Field("max_item_tokens", "must be between 1 and 100000")
	}
	for _, b := range []struct {
		name string
		v    *int
		def  int
	}{
		{"max_constraints", &req.MaxConstraints, DefaultConstraints},
		{"max_procedures", &req.MaxProcedures, DefaultProcedures},
		{"max_chunks", &req.MaxChunks, DefaultChunks},
		{"max_facts", &req.MaxFacts, DefaultFacts},
		{"max_recent", &req.MaxRecent, DefaultRecent},
	} {
		if *b.v == 0 {
			*b.v = b.def
		}
		if *b.v < 1 || *b.v > maxSectionBound {
			return fault.Field(b.name, "must be between 1 and 50")
		}
	}
	return nil
}

// Assemble builds the context of req as p.
func (a *Assembler) Assemble(ctx context.Context, p memory.Principal, req Request) (Envelope, error) {
	if err := req.normalize(); err != nil {
		return Envelope{}, err
	}
	c, err := a.gather(ctx, p, req)
	if err != nil {
		return Envelope{}, err
	}
	env := pack(req, c)
	env.Degraded = c.degraded
	return env, nil
}
