package mem0compat

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// criteria is what mem0 filters select, in memgate's terms: scope keys
// (memgate filters before ranking) and metadata equality (applied to
// the candidates).
type criteria struct {
	e    Entities
	meta map[string]any
}

// entityKeys maps mem0 filter keys to the entity id they set.
var entityKeys = map[string]func(*Entities) *string{
	"user_id":  func(e *Entities) *string { return &e.UserID },
	"agent_id": func(e *Entities) *string { return &e.AgentID },
	"app_id":   func(e *Entities) *string { return &e.AppID },
	"run_id":   func(e *Entities) *string { return &e.RunID },
}

// parseFilters reads mem0's filters: entity ids (a string, "*" meaning
// any), metadata (an object of exact values) and AND of such. OR, NOT
// and the comparison operators are refused naming the field.
func parseFilters(at string, raw json.RawMessage, c *criteria) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return fault.Field(at, "must be a JSON object")
	}
	for k, v := range obj {
		field := at + "." + k
		if set, ok := entityKeys[k]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return fault.Field(field, "must be a string (operators are not supported)")
			}
			if s == "*" {
				continue
			}
			p := set(&c.e)
			if *p != "" && *p != s {
				return fault.Field(field, "conflicts with another filter on the same key")
			}
			*p = s
			continue
		}
		switch k {
		case "metadata":
			var m map[string]any
			if json.Unmarshal(v, &m) != nil {
				return fault.Field(field, "must be a JSON object of exact values")
			}
			if c.meta == nil {
				c.meta = map[string]any{}
			}
			for mk, mv := range m {
				c.meta[mk] = mv
			}
		case "AND":
			var parts []json.RawMessage
			if json.Unmarshal(v, &parts) != nil {
				return fault.Field(field, "must be an array of filter objects")
			}
			for i, part := range parts {
				if err := parseFilters(field+"["+strconv.Itoa(i)+"]", part, c); err != nil {
					return err
				}
			}
		default:
			return fault.Field(field, "is not supported by memgate's mem0 API (supported: user_id, agent_id, app_id, run_id, metadata, AND)")
		}
	}
	return nil
}

// metaMatches reports whether a record's metadata holds every wanted
// key at an equal value.
func metaMatches(raw json.RawMessage, want map[string]any) bool {
	if len(want) == 0 {
		return true
	}
	var have map[string]any
	if json.Unmarshal(raw, &have) != nil {
		return false
	}
	for k, v := range want {
		if hv, ok := have[k]; !ok || !reflect.DeepEqual(hv, v) {
			return false
		}
	}
	return true
}

// SearchRequest is the body of POST /v3/memories/search/. Fields the
// client sends that memgate has no use for (output_format, rerank, ...)
// are ignored.
type SearchRequest struct {
	Query     string          `json:"query"`
	Filters   json.RawMessage `json:"filters,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	TopK      *int            `json:"top_k,omitempty"`
	Threshold *float64        `json:"threshold,omitempty"`
}

// SearchResponse is {"results": [...]}, best first; score is memgate's
// relevance (0..1, comparable across queries).
type SearchResponse struct {
	Results []Memory `json:"results"`
}

// Search ranks memories by meaning (memgate's hybrid search).
func (s *Service) Search(ctx context.Context, p memory.Principal, req SearchRequest) (SearchResponse, error) {
	if req.Query == "" {
		return SearchResponse{}, fault.Field("query", "is required")
	}
	var c criteria
	if err := parseFilters("filters", req.Filters, &c); err != nil {
		return SearchResponse{}, err
	}
	if len(req.Metadata) > 0 && string(req.Metadata) != "null" {
		if err := parseFilters("metadata", json.RawMessage(`{"metadata":`+string(req.Metadata)+`}`), &c); err != nil {
			return SearchResponse{}, fault.Field("metadata", "must be a JSON object of exact values")
		}
	}
	k := 10
	if req.TopK != nil {
		if *req.TopK < 1 || *req.TopK > core.MaxK {
			return SearchResponse{}, fault.Field("top_k", "must be between 1 and "+strconv.Itoa(core.MaxK))
		}
		k = *req.TopK
	}
	sr := core.SearchRequest{Query: req.Query, K: k, Types: readableTypes, Scope: c.e.scope()}
	if len(c.meta) > 0 {
		// Metadata is matched on the candidates: ask for more.
		sr.K = min(core.MaxK, k*5)
	}
	if req.Threshold != nil {
		if *req.Threshold < 0 || *req.Threshold > 1 {
			return SearchResponse{}, fault.Field("threshold", "must be between 0 and 1")
		}
		sr.MinRelevance = *req.Threshold
	}
	res, err := s.svc.Search(ctx, p, sr)
	if err != nil {
		return SearchResponse{}, err
	}
	out := SearchResponse{Results: []Memory{}}
	for _, h := range res.Results {
		if !metaMatches(h.Record.Metadata, c.meta) {
			continue
		}
		m := toMemory(h.Record)
		score := h.Relevance
		m.Score = &score
		out.Results = append(out.Results, m)
		if len(out.Results) == k {
			break
		}
	}
	return out, nil
}

// ListRequest is the body of POST /v3/memories/ (get all).
type ListRequest struct {
	Filters json.RawMessage `json:"filters,omitempty"`
}

// Page is mem0's paginated list.
type Page struct {
	Count    int      `json:"count"`
	Next     *string  `json:"next"`
	Previous *string  `json:"previous"`
	Results  []Memory `json:"results"`
}

// MaxPageSize bounds page_size.
const MaxPageSize = 1000

// List returns one page (1-based) of the memories the filters select,
// newest first. self is the URL the next and previous links are built on.
func (s *Service) List(ctx context.Context, p memory.Principal, req ListRequest, page, pageSize int, self string) (Page, error) {
	if page < 1 {
		return Page{}, fault.Field("page", "must be a positive integer")
	}
	if pageSize < 1 || pageSize > MaxPageSize {
		return Page{}, fault.Field("page_size", "must be between 1 and "+strconv.Itoa(MaxPageSize))
	}
	var c criteria
	if err := parseFilters("filters", req.Filters, &c); err != nil {
		return Page{}, err
	}
	rs, err := s.scan(ctx, p, c.e.scope(), c.meta)
	if err != nil {
		return Page{}, err
	}
	out := Page{Count: len(rs), Results: []Memory{}}
	lo := (page - 1) * pageSize
	for i := lo; i < len(rs) && i < lo+pageSize; i++ {
		out.Results = append(out.Results, toMemory(rs[i]))
	}
	link := func(n int) *string {
		u := self + "?page=" + strconv.Itoa(n) + "&page_size=" + strconv.Itoa(pageSize)
		return &u
	}
	if lo+pageSize < len(rs) {
		out.Next = link(page + 1)
	}
	if page > 1 {
		out.Previous = link(page - 1)
	}
	return out, nil
}
