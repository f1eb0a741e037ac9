package files

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Memory stores: the shapes of Anthropic's memory-stores API
// (/v1/memory_stores) over memory files. A store is a record (type
// resource, category memory_store); its memories are memory files whose
// scope's app_id is the store id, at /memories + the memory's path, so
// the memory tool run with that scope sees the same files. Ids carry the
// public API's prefixes: memstore_, mem_ and memver_ (record id and
// version).

// StoreCategory is the record category of memory stores.
const StoreCategory = "memory_store"

// Id prefixes of the public API.
const (
	StorePrefix   = "memstore_"
	MemoryPrefix  = "mem_"
	VersionPrefix = "memver_"
)

// Store is a memory store.
type Store struct {
	ID          string            `json:"id"`
	Type        string            `json:"type"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	ArchivedAt  *time.Time        `json:"archived_at"`
}

type storeMeta struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	ArchivedAt  *time.Time        `json:"archived_at,omitempty"`
}

// StoreRequest creates or updates a store.
type StoreRequest struct {
	Name        *string           `json:"name,omitempty"`
	Description *string           `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

func storeErr409(typ, msg string) *fault.Error {
	return fault.New(fault.Conflict, msg).With("type", typ)
}

func recordID(prefixed, prefix, what string) (string, error) {
	id, ok := strings.CutPrefix(prefixed, prefix)
	if !ok || !memory.ValidID(id) {
		return "", fault.New(fault.NotFound, what+" not found").With("type", "not_found_error")
	}
	return id, nil
}

func toStore(r memory.Record) (Store, bool) {
	if r.Type != memory.Resource || r.Category != StoreCategory || r.InvalidatedAt != nil {
		return Store{}, false
	}
	var m struct {
		S *storeMeta `json:"memory_store"`
	}
	if json.Unmarshal(r.Metadata, &m) != nil || m.S == nil {
		return Store{}, false
	}
	md := m.S.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return Store{ID: StorePrefix + r.ID, Type: "memory_store", Name: m.S.Name, Description: m.S.Description, Metadata: md,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ArchivedAt: m.S.ArchivedAt}, true
}

func storeMetaJSON(m storeMeta) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"memory_store": m})
	return raw
}

func checkStoreFields(req StoreRequest) error {
	if req.Name != nil && (len(*req.Name) < 1 || len(*req.Name) > 255) {
		return fault.Field("name", "must be 1-255 characters").With("type", "invalid_request_error")
	}
	if req.Description != nil && len(*req.Description) > 1024 {
		return fault.Field("description", "must be at most 1024 characters").With("type", "invalid_request_error")
	}
	if len(req.Metadata) > 16 {
		return fault.Field("metadata", "at most 16 keys").With("type", "invalid_request_error")
	}
	for k, v := range req.Metadata {
		if len(k) > 64 || len(v) > 512 {
			return fault.Field("metadata", "keys of at most 64 and values of at most 512 characters").With("type", "invalid_request_error")
		}
	}
	return nil
}

// CreateStore creates a memory store.
func (s *Service) CreateStore(ctx context.Context, p memory.Principal, req StoreRequest) (Store, error) {
	if req.Name == nil {
		return Store{}, fault.Field("name", "is required").With("type", "invalid_request_error")
	}
	if err := checkStoreFields(req); err != nil {
		return Store{}, err
	}
	m := storeMeta{Name: *req.Name, Metadata: req.Metadata}
	if req.Description != nil {
		m.Description = *req.Description
	}
	res, err := s.core.Write(ctx, p, core.WriteRequest{Type: memory.Resource, Category: StoreCategory, Content: m.Name,
		Metadata: storeMetaJSON(m), Addressed: true})
	if err != nil {
		return Store{}, err
	}
	st, _ := toStore(res.Record)
	return st, nil
}

func (s *Service) storeRecord(ctx context.Context, p memory.Principal, storeID string) (memory.Record, Store, error) {
	id, err := recordID(storeID, StorePrefix, "memory store")
	if err != nil {
		return memory.Record{}, Store{}, err
	}
	r, err := s.core.Get(ctx, p, id, core.GetOptions{})
	if err != nil {
		return memory.Record{}, Store{}, fault.New(fault.NotFound, "memory store not found").With("type", "not_found_error")
	}
	st, ok := toStore(r)
	if !ok {
		return memory.Record{}, Store{}, fault.New(fault.NotFound, "memory store not found").With("type", "not_found_error")
	}
	return r, st, nil
}

// GetStore returns a store.
func (s *Service) GetStore(ctx context.Context, p memory.Principal, storeID string) (Store, error) {
	_, st, err := s.storeRecord(ctx, p, storeID)
	return st, err
}

// UpdateStore changes a store's name, description or metadata (a
// metadata value of "" deletes the key), or archives it.
func (s *Service) UpdateStore(ctx context.Context, p memory.Principal, storeID string, req StoreRequest, archive bool) (Store, error) {
	if err := checkStoreFields(req); err != nil {
		return Store{}, err
	}
	r, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return Store{}, err
	}
	m := storeMeta{Name: st.Name, Description: st.Description, Metadata: st.Metadata, ArchivedAt: st.ArchivedAt}
	if req.Name != nil {
		m.Name = *req.Name
	}
	if req.Description != nil {
		m.Description = *req.Description
	}
	for k, v := range req.Metadata {
		if v == "" {
			delete(m.Metadata, k)
		} else {
			m.Metadata[k] = v
		}
	}
	if archive && m.ArchivedAt == nil {
		now := time.Now().UTC().Truncate(time.Microsecond)
		m.ArchivedAt = &now
	}
	v := r.Version
	content := m.Name
	res, err := s.core.Patch(ctx, p, r.ID, core.PatchRequest{ExpectedVersion: &v, Content: &content, Metadata: storeMetaJSON(m)})
	if err != nil {
		return Store{}, err
	}
	out, _ := toStore(res.Record)
	return out, nil
}

// DeleteStore deletes a store's memories and the store.
func (s *Service) DeleteStore(ctx context.Context, p memory.Principal, storeID string) error {
	r, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return err
	}
	fs, err := s.List(ctx, p, ListRequest{Scope: memory.Scope{AppID: st.ID}})
	if err != nil {
		return err
	}
	for _, f := range fs {
		if _, err := s.DeleteID(ctx, p, f.ID, ""); err != nil {
			return err
		}
	}
	v := r.Version
	_, err = s.core.Patch(ctx, p, r.ID, core.PatchRequest{ExpectedVersion: &v, Invalidate: true})
	return err
}

// Page is one page of a listing: data and the token of the next page.
type Page[T any] struct {
	Data     []T     `json:"data"`
	NextPage *string `json:"next_page"`
}

// ListStores lists the stores p may read, by creation, newest first.
func (s *Service) ListStores(ctx context.Context, p memory.Principal, limit int, page string) (Page[Store], error) {
	limit, err := pageLimit(limit, 100)
	if err != nil {
		return Page[Store]{}, err
	}
	out := Page[Store]{Data: []Store{}}
	cursor := page
	for len(out.Data) < limit {
		res, err := s.core.List(ctx, p, core.ListRequest{Types: []memory.Type{memory.Resource}, Category: StoreCategory, Cursor: cursor, Limit: limit})
		if err != nil {
			if fault.CodeOf(err) == fault.InvalidArgument {
				return Page[Store]{}, fault.Field("page", "is not a page token returned by this API").With("type", "invalid_request_error")
			}
			return Page[Store]{}, err
		}
		for _, r := range res.Records {
			if st, ok := toStore(r); ok && len(out.Data) < limit {
				out.Data = append(out.Data, st)
				cursor = r.ID
			}
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if len(out.Data) < limit {
			cursor = res.NextCursor
		}
	}
	out.NextPage = &cursor
	return out, nil
}

func pageLimit(limit, max int) (int, error) {
	if limit == 0 {
		return 20, nil
	}
	if limit < 1 || limit > max {
		return 0, fault.Field("limit", "must be between 1 and "+strconv.Itoa(max)).With("type", "invalid_request_error")
	}
	return limit, nil
}

func encodePage(s string) *string {
	t := base64.RawURLEncoding.EncodeToString([]byte(s))
	return &t
}

func decodePage(t string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", fault.Field("page", "is not a page token returned by this API").With("type", "invalid_request_error")
	}
	return string(raw), nil
}

// sortPaths orders paths for a listing.
func sortPaths(paths []string, desc bool) {
	slices.Sort(paths)
	if desc {
		slices.Reverse(paths)
	}
}
