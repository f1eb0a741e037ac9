package sdk

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
)

// Knowledge (docs/knowledge.md): documents, code and PDFs ingested as
// resource chunks, searched with citations, their cited lines read back.

// Document is one document to ingest. Give Content (text) or Binary
// (e.g. a PDF), not both.
type Document struct {
	// URI is where the document comes from; with the scope it makes the
	// resource id.
	URI string
	// MediaType is empty to go by the URI's extension.
	MediaType string
	Content   string
	Binary    []byte
	Scope     Scope
	// Access is the level the chunks are stored at; empty is the default.
	Access string
}

// ChunkResult is one chunk an ingestion wrote.
type ChunkResult struct {
	ID         string `json:"id"`
	Version    int    `json:"version"`
	Key        string `json:"key"`
	Citation   string `json:"citation"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason,omitempty"`
	Status     string `json:"status"`
	ApprovalID string `json:"approval_id,omitempty"`
	Retired    bool   `json:"retired,omitempty"`
}

// IngestResult answers one document's ingestion: created, updated (only
// changed chunks got new versions) or unchanged (nothing written).
type IngestResult struct {
	ResourceID  string        `json:"resource_id"`
	URI         string        `json:"uri"`
	MediaType   string        `json:"media_type"`
	SHA256      string        `json:"content_sha256"`
	Version     int           `json:"version"`
	Outcome     string        `json:"outcome"`
	Added       int           `json:"added"`
	Changed     int           `json:"changed"`
	Retired     int           `json:"retired"`
	Unchanged   int           `json:"unchanged"`
	Quarantined int           `json:"quarantined,omitempty"`
	Pending     int           `json:"pending_approval,omitempty"`
	Chunks      []ChunkResult `json:"chunks,omitempty"`
}

// ResourceInfo is an ingested document the caller can read.
type ResourceInfo struct {
	ResourceID string `json:"resource_id"`
	URI        string `json:"uri"`
	MediaType  string `json:"media_type"`
	SHA256     string `json:"content_sha256"`
	Version    int    `json:"version"`
	Chunks     int    `json:"chunks"`
	Scope      Scope  `json:"scope"`
}

// ResourceSearchRequest is a search over ingested documents.
type ResourceSearchRequest struct {
	Query string `json:"query"`
	K     int    `json:"k,omitempty"`
	Scope Scope  `json:"scope"`
	// GroupByDocument returns each document's best chunk only.
	GroupByDocument bool `json:"group_by_document,omitempty"`
	// Rerank false skips a configured rerank stage.
	Rerank  *bool    `json:"rerank,omitempty"`
	Signals []string `json:"signals,omitempty"`
	Explain bool     `json:"explain,omitempty"`
}

// ResourceHit is one chunk found, with its citation's parts.
type ResourceHit struct {
	RecordHit
	ResourceID  string   `json:"resource_id"`
	SourceURI   string   `json:"source_uri"`
	Heading     string   `json:"heading,omitempty"`
	Page        int      `json:"page,omitempty"`
	LineStart   int      `json:"line_start"`
	LineEnd     int      `json:"line_end"`
	RerankScore *float64 `json:"rerank_score,omitempty"`
}

// ResourceSearchResponse answers a knowledge search; Degraded names a
// stage (e.g. "rerank") that was down.
type ResourceSearchResponse struct {
	Route    string        `json:"route"`
	Signals  []string      `json:"signals"`
	Results  []ResourceHit `json:"results"`
	Degraded []string      `json:"degraded,omitempty"`
}

// SourceLines are the cited lines of the indexed version of a document.
type SourceLines struct {
	ResourceID string `json:"resource_id"`
	URI        string `json:"uri"`
	MediaType  string `json:"media_type"`
	Version    int    `json:"version"`
	From       int    `json:"from"`
	To         int    `json:"to"`
	TotalLines int    `json:"total_lines"`
	Text       string `json:"text"`
}

// ForgottenResource counts what forgetting a document erased.
type ForgottenResource struct {
	ResourceID string `json:"resource_id"`
	Forgotten  int    `json:"forgotten_chunks"`
	Remaining  int    `json:"remaining_chunks"`
}

// Ingest ingests one document through the gate: POST /v1/resources.
// Re-ingesting a changed document writes new versions of its changed
// chunks only; an unchanged one writes nothing.
func (c *Client) Ingest(ctx context.Context, doc Document) (IngestResult, error) {
	body := map[string]any{"uri": doc.URI, "scope": doc.Scope}
	if doc.MediaType != "" {
		body["media_type"] = doc.MediaType
	}
	if doc.Access != "" {
		body["access"] = doc.Access
	}
	if doc.Binary != nil {
		body["content_base64"] = base64.StdEncoding.EncodeToString(doc.Binary)
	} else {
		body["content"] = doc.Content
	}
	var res IngestResult
	err := c.do(ctx, http.MethodPost, "/v1/resources", nil, body, &res)
	return res, err
}

// Resources lists the ingested documents the caller can read: GET
// /v1/resources.
func (c *Client) Resources(ctx context.Context) ([]ResourceInfo, error) {
	var env struct {
		Resources []ResourceInfo `json:"resources"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/resources", nil, nil, &env)
	return env.Resources, err
}

// SearchResources searches ingested documents: POST /v1/resources/search.
func (c *Client) SearchResources(ctx context.Context, req ResourceSearchRequest) (ResourceSearchResponse, error) {
	var res ResourceSearchResponse
	if err := c.do(ctx, http.MethodPost, "/v1/resources/search", nil, req, &res); err != nil {
		return res, err
	}
	if res.Results == nil {
		return res, badResponse(http.MethodPost, "/v1/resources/search", http.StatusOK, `"results" is missing`)
	}
	return res, nil
}

// Source returns lines from..to (1-based, inclusive; 0, 0 for the whole
// document) of the version that was indexed: GET
// /v1/resources/{id}/source.
func (c *Client) Source(ctx context.Context, resourceID string, from, to int) (SourceLines, error) {
	var res SourceLines
	p, err := pathID("/v1/resources/", resourceID, "resource id")
	if err != nil {
		return res, err
	}
	var q url.Values
	if from > 0 {
		q = url.Values{"lines": {strconv.Itoa(from) + "-" + strconv.Itoa(max(to, from))}}
	}
	err = c.do(ctx, http.MethodGet, p+"/source", q, nil, &res)
	return res, err
}

// ForgetResource erases a document: every chunk, version, vector and
// index entry: DELETE /v1/resources/{id}.
func (c *Client) ForgetResource(ctx context.Context, resourceID string) (ForgottenResource, error) {
	var res ForgottenResource
	p, err := pathID("/v1/resources/", resourceID, "resource id")
	if err != nil {
		return res, err
	}
	err = c.do(ctx, http.MethodDelete, p, nil, nil, &res)
	return res, err
}
