package sdk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// The memory-stores API (docs/files.md): stores of path-addressed
// memories with versions, compatible with Anthropic's hosted API. The
// objects are passed through as JSON (StoreObject), since their shape is
// that API's.

// StoreObject is a memory store, memory or memory version as the API
// returns it (see openapi.json: MemoryStore, StoreMemory, MemoryVersion).
type StoreObject = json.RawMessage

// StorePage is one page of a memory-stores list.
type StorePage struct {
	Data     []StoreObject `json:"data"`
	NextPage *string       `json:"next_page"`
}

// StoreListOptions page and filter a memory-stores list; empty fields are
// unset. View is "basic" or "full".
type StoreListOptions struct {
	Limit                                 int
	Page, View, PathPrefix, Order, By, ID string
	Depth                                 int
	Operation                             string
}

func (o StoreListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Depth > 0 {
		q.Set("depth", strconv.Itoa(o.Depth))
	}
	set("page", o.Page)
	set("view", o.View)
	set("path_prefix", o.PathPrefix)
	set("order", o.Order)
	set("order_by", o.By)
	set("memory_id", o.ID)
	set("operation", o.Operation)
	return q
}

func storePath(store string, rest ...string) (string, error) {
	p, err := pathID("/v1/memory_stores/", store, "memory store id")
	if err != nil {
		return "", err
	}
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p, nil
}

func (c *Client) storeCall(ctx context.Context, method string, q url.Values, body any, parts ...string) (StoreObject, error) {
	p, err := storePath(parts[0], parts[1:]...)
	if err != nil {
		return nil, err
	}
	var res StoreObject
	err = c.do(ctx, method, p, q, body, &res)
	return res, err
}

// StoreRequest creates or updates a store.
type StoreRequest struct {
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// CreateMemoryStore creates a store: POST /v1/memory_stores.
func (c *Client) CreateMemoryStore(ctx context.Context, req StoreRequest) (StoreObject, error) {
	var res StoreObject
	err := c.do(ctx, http.MethodPost, "/v1/memory_stores", nil, req, &res)
	return res, err
}

// ListMemoryStores lists stores: GET /v1/memory_stores.
func (c *Client) ListMemoryStores(ctx context.Context, o StoreListOptions) (StorePage, error) {
	var res StorePage
	err := c.do(ctx, http.MethodGet, "/v1/memory_stores", o.query(), nil, &res)
	return res, err
}

// GetMemoryStore returns a store: GET /v1/memory_stores/{store}.
func (c *Client) GetMemoryStore(ctx context.Context, store string) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodGet, nil, nil, store)
}

// UpdateMemoryStore updates a store: POST /v1/memory_stores/{store}.
func (c *Client) UpdateMemoryStore(ctx context.Context, store string, req StoreRequest) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodPost, nil, req, store)
}

// DeleteMemoryStore deletes a store and its memories (their versions
// stay): DELETE /v1/memory_stores/{store}.
func (c *Client) DeleteMemoryStore(ctx context.Context, store string) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodDelete, nil, nil, store)
}

// ArchiveMemoryStore makes a store read-only: POST
// /v1/memory_stores/{store}/archive.
func (c *Client) ArchiveMemoryStore(ctx context.Context, store string) (StoreObject, error) {
	p, err := storePath(store)
	if err != nil {
		return nil, err
	}
	var res StoreObject
	err = c.do(ctx, http.MethodPost, p+"/archive", nil, nil, &res)
	return res, err
}

// CreateStoreMemory creates a memory at path: POST
// /v1/memory_stores/{store}/memories.
func (c *Client) CreateStoreMemory(ctx context.Context, store, path, content string) (StoreObject, error) {
	p, err := storePath(store)
	if err != nil {
		return nil, err
	}
	var res StoreObject
	err = c.do(ctx, http.MethodPost, p+"/memories", nil, map[string]string{"path": path, "content": content}, &res)
	return res, err
}

// ListStoreMemories lists memories: GET /v1/memory_stores/{store}/memories.
func (c *Client) ListStoreMemories(ctx context.Context, store string, o StoreListOptions) (StorePage, error) {
	p, err := storePath(store)
	if err != nil {
		return StorePage{}, err
	}
	var res StorePage
	err = c.do(ctx, http.MethodGet, p+"/memories", o.query(), nil, &res)
	return res, err
}

// GetStoreMemory returns a memory: GET
// /v1/memory_stores/{store}/memories/{memory}.
func (c *Client) GetStoreMemory(ctx context.Context, store, memory string) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodGet, nil, nil, store, "memories", memory)
}

// StoreMemoryUpdate changes a memory; Precondition is the API's
// {"type": "content_sha256", "content_sha256": ...} object.
type StoreMemoryUpdate struct {
	Content      *string         `json:"content,omitempty"`
	Path         *string         `json:"path,omitempty"`
	Precondition json.RawMessage `json:"precondition,omitempty"`
}

// UpdateStoreMemory updates a memory: POST
// /v1/memory_stores/{store}/memories/{memory}.
func (c *Client) UpdateStoreMemory(ctx context.Context, store, memory string, req StoreMemoryUpdate) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodPost, nil, req, store, "memories", memory)
}

// DeleteStoreMemory deletes a memory: DELETE
// /v1/memory_stores/{store}/memories/{memory}.
func (c *Client) DeleteStoreMemory(ctx context.Context, store, memory, expectedSHA256 string) (StoreObject, error) {
	q := url.Values{}
	if expectedSHA256 != "" {
		q.Set("expected_content_sha256", expectedSHA256)
	}
	return c.storeCall(ctx, http.MethodDelete, q, nil, store, "memories", memory)
}

// ListMemoryVersions lists versions, newest first: GET
// /v1/memory_stores/{store}/memory_versions (ID filters by memory).
func (c *Client) ListMemoryVersions(ctx context.Context, store string, o StoreListOptions) (StorePage, error) {
	p, err := storePath(store)
	if err != nil {
		return StorePage{}, err
	}
	var res StorePage
	err = c.do(ctx, http.MethodGet, p+"/memory_versions", o.query(), nil, &res)
	return res, err
}

// GetMemoryVersion returns a version: GET
// /v1/memory_stores/{store}/memory_versions/{version}.
func (c *Client) GetMemoryVersion(ctx context.Context, store, version string) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodGet, nil, nil, store, "memory_versions", version)
}

// RedactMemoryVersion erases a version's content: POST
// /v1/memory_stores/{store}/memory_versions/{version}/redact.
func (c *Client) RedactMemoryVersion(ctx context.Context, store, version string) (StoreObject, error) {
	return c.storeCall(ctx, http.MethodPost, nil, nil, store, "memory_versions", version, "redact")
}
