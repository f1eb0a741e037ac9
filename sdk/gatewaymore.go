package sdk

import (
	"context"
	"log/slog"
	"net/http"
)

// The gateway's remaining routes: overriding and deleting a memory, and
// uploading a document as resource chunks. Like the others, they carry
// the user's id and key in the body and are never retried.

// Identity is the user and group every gateway request names.
type Identity struct {
	UserID    string `json:"user_id"`
	UserKey   string `json:"user_key"`
	AppID     string `json:"app_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
}

// String never shows the key.
func (i Identity) String() string {
	return "{user_id:" + redact(i.UserID) + " user_key:" + redact(i.UserKey) + "}"
}

// GoString is String.
func (i Identity) GoString() string { return i.String() }

// LogValue is String.
func (i Identity) LogValue() slog.Value { return slog.StringValue(i.String()) }

// UpdateResult is the new version of an overridden memory.
type UpdateResult struct {
	ID       string `json:"id"`
	Version  int    `json:"version"`
	Decision string `json:"decision"`
	Text     string `json:"text"`
}

// Update overrides a memory's text (a new version): POST /memories/update.
func (g *GatewayClient) Update(ctx context.Context, who Identity, memoryID, text string) (UpdateResult, error) {
	body := struct {
		Identity
		MemoryID string `json:"memory_id"`
		Text     string `json:"text"`
	}{who, memoryID, text}
	var res UpdateResult
	_, err := g.t.do(ctx, call{method: http.MethodPost, path: "/memories/update", body: body, secrets: []string{who.UserKey}}, &res)
	return res, err
}

// DeleteResult says a memory was deleted (a tombstone remains).
type DeleteResult struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// Delete deletes a memory: POST /memories/delete.
func (g *GatewayClient) Delete(ctx context.Context, who Identity, memoryID string) (DeleteResult, error) {
	body := struct {
		Identity
		MemoryID string `json:"memory_id"`
	}{who, memoryID}
	var res DeleteResult
	_, err := g.t.do(ctx, call{method: http.MethodPost, path: "/memories/delete", body: body, secrets: []string{who.UserKey}}, &res)
	return res, err
}

// Resource is a text or Markdown document to store as chunks.
type Resource struct {
	Name        string `json:"name"`
	URI         string `json:"uri,omitempty"`
	ContentType string `json:"content_type,omitempty"` // text/plain or text/markdown
	Content     string `json:"content"`
}

// ResourceChunk is one stored chunk of a resource.
type ResourceChunk struct {
	ID          string `json:"id"`
	ResourceURI string `json:"resource_uri"`
	Heading     string `json:"heading,omitempty"`
}

// ResourceResult lists a resource's chunks.
type ResourceResult struct {
	ResourceURI string          `json:"resource_uri"`
	Chunks      []ResourceChunk `json:"chunks"`
}

// AddResource uploads a document as resource chunks: POST
// /memories/resources.
func (g *GatewayClient) AddResource(ctx context.Context, who Identity, r Resource) (ResourceResult, error) {
	body := struct {
		Identity
		Resource
	}{who, r}
	var res ResourceResult
	_, err := g.t.do(ctx, call{method: http.MethodPost, path: "/memories/resources", body: body, secrets: []string{who.UserKey}}, &res)
	return res, err
}
