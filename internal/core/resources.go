package core

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/memgate/memgate/internal/chunk"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// ResourceRequest uploads a document for a gateway user.
type ResourceRequest struct {
	AppID, ProjectID string
	Name             string
	// URI cites the document; default memgate://resources/<id>/<name>.
	URI      string
	Markdown bool
	Content  string
}

// ResourceChunk is one stored chunk.
type ResourceChunk struct {
	ID          string `json:"id"`
	ResourceURI string `json:"resource_uri"`
	Heading     string `json:"heading,omitempty"`
}

// ResourceResult answers an upload.
type ResourceResult struct {
	ResourceURI string          `json:"resource_uri"`
	Chunks      []ResourceChunk `json:"chunks"`
}

// GatewayResource stores a document as resource records, one per chunk
// (Markdown split by heading, then under a soft token maximum), each
// citing "<uri>#<n>". The whole document is one transaction: all chunks
// or none.
func (s *Service) GatewayResource(ctx context.Context, p memory.Principal, req ResourceRequest) (ResourceResult, error) {
	if err := s.rateLimit(p); err != nil {
		return ResourceResult{}, err
	}
	docID := memory.NewID()
	uri := req.URI
	if uri == "" {
		uri = "memgate://resources/" + docID + "/" + url.PathEscape(req.Name)
	}
	pieces := chunk.Split(req.Content, req.Markdown, chunk.DefaultMaxTokens)
	if len(pieces) == 0 {
		return ResourceResult{}, fault.Field("content", "holds no text")
	}
	now := s.clock()
	res := ResourceResult{ResourceURI: uri}
	err := s.tx(ctx, "resource", func(tx store.Tx) error {
		res.Chunks = nil
		for i, c := range pieces {
			curi := uri + "#" + strconv.Itoa(i+1)
			meta, _ := json.Marshal(map[string]any{"resource_uri": curi, "document_uri": uri, "name": req.Name,
				"document_id": docID, "heading": c.Heading, "chunk": i + 1, "chunks": len(pieces)})
			wr, err := s.writeIn(ctx, tx, p, WriteRequest{Type: memory.Resource, Category: "document", Content: c.Text,
				Metadata: meta, Source: &SourceInput{Kind: memory.Told},
				Scope: memory.Scope{UserID: userOf(p), AppID: req.AppID, ProjectID: req.ProjectID}}, now)
			if err != nil {
				if isRefusal(err) {
					fe := *fault.As(err)
					fe.Message = "chunk " + strconv.Itoa(i+1) + ": " + fe.Message
					return &fe
				}
				return err
			}
			res.Chunks = append(res.Chunks, ResourceChunk{ID: wr.Record.ID, ResourceURI: curi, Heading: c.Heading})
		}
		return nil
	})
	if err != nil {
		return ResourceResult{}, err
	}
	s.logMoved(ctx)
	return res, nil
}
