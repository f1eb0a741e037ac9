package mcp

import (
	"context"
	"encoding/base64"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
)

// Knowledge (internal/knowledge) over MCP: ingest a document, search
// documents with res:// citations, and read the cited lines.

type ingestIn struct {
	URI           string   `json:"uri" jsonschema:"where the document comes from (file:///..., https://...); with the scope it identifies the document, so ingesting it again updates it"`
	Content       string   `json:"content,omitempty" jsonschema:"the document as text (Markdown, plain text, HTML or source code)"`
	ContentBase64 string   `json:"content_base64,omitempty" jsonschema:"the document as base64, for PDFs"`
	MediaType     string   `json:"media_type,omitempty" jsonschema:"e.g. text/markdown, text/x-go, application/pdf; default: by the URI's extension, else text/plain"`
	Access        string   `json:"access,omitempty" jsonschema:"access level of the chunks: public (default), agent, user, system or sensitive"`
	Scope         *scopeIn `json:"scope,omitempty" jsonschema:"whose document: scope keys, all optional"`
}

type searchDocsIn struct {
	Query           string   `json:"query" jsonschema:"what to look for in ingested documents and code"`
	K               int      `json:"k,omitempty" jsonschema:"how many hits (default 10, at most 100)"`
	GroupByDocument bool     `json:"group_by_document,omitempty" jsonschema:"return only the best chunk of each document"`
	Scope           *scopeIn `json:"scope,omitempty" jsonschema:"restrict to a scope"`
}

type docHit struct {
	Citation   string  `json:"citation"`
	ResourceID string  `json:"resource_id"`
	SourceURI  string  `json:"source_uri"`
	Heading    string  `json:"heading,omitempty"`
	Page       int     `json:"page,omitempty"`
	LineStart  int     `json:"line_start"`
	LineEnd    int     `json:"line_end"`
	Content    string  `json:"content"`
	Score      float64 `json:"score"`
	RecordID   string  `json:"record_id"`
}

type docHits struct {
	Results  []docHit `json:"results"`
	Degraded []string `json:"degraded,omitempty"`
}

type citeIn struct {
	Citation string `json:"citation" jsonschema:"a res:// citation from a search hit, e.g. res://res_...#Setup > Linux#L10-L24"`
}

func (s *server) addKnowledgeTools(srv *sdk.Server) {
	kn := s.knowledge
	add(srv, &sdk.Tool{
		Name:  "resource_ingest",
		Title: "Ingest a document",
		Description: "Ingest a document, source file or PDF as cited resource chunks (Markdown by heading, code by declaration, PDF by page). " +
			"Every chunk passes the gate (it may be accepted, queued for review or quarantined, and the answer says which); " +
			"ingesting a changed document updates only its changed chunks, an unchanged one writes nothing.",
		Annotations: writeHints(false),
	}, handler(s, "resource_ingest", func(ctx context.Context, p memory.Principal, in ingestIn) (knowledge.Result, error) {
		doc := knowledge.Document{URI: in.URI, MediaType: in.MediaType, Access: memory.Access(in.Access), Scope: in.Scope.scope()}
		switch {
		case in.Content != "" && in.ContentBase64 != "":
			return knowledge.Result{}, fault.Field("content", "give content or content_base64, not both")
		case in.ContentBase64 != "":
			raw, err := base64.StdEncoding.DecodeString(in.ContentBase64)
			if err != nil {
				return knowledge.Result{}, fault.Field("content_base64", "must be standard base64")
			}
			doc.Content = raw
		default:
			doc.Content = []byte(in.Content)
		}
		return kn.Ingest(ctx, p, doc)
	}))
	add(srv, &sdk.Tool{
		Name:  "resource_search",
		Title: "Search documents",
		Description: "Search ingested documents and code. Each hit cites its lines as res://<resource>#<heading or declaration>#L<a>-L<b> " +
			"(with #p<page> for PDFs); resource_cite returns exactly those lines." + untrustedDoc,
		Annotations: readHints(),
	}, handler(s, "resource_search", func(ctx context.Context, p memory.Principal, in searchDocsIn) (docHits, error) {
		res, err := kn.Search(ctx, p, knowledge.SearchRequest{Query: in.Query, K: in.K, GroupByDocument: in.GroupByDocument, Scope: in.Scope.scope()})
		if err != nil {
			return docHits{}, err
		}
		out := docHits{Results: []docHit{}, Degraded: res.Degraded}
		for _, h := range res.Results {
			out.Results = append(out.Results, docHit{Citation: h.Citation, ResourceID: h.ResourceID, SourceURI: h.SourceURI, Heading: h.Heading,
				Page: h.Page, LineStart: h.LineStart, LineEnd: h.LineEnd, Content: h.Record.Content, Score: h.Score, RecordID: h.Record.ID})
		}
		return out, nil
	}))
	add(srv, &sdk.Tool{
		Name:        "resource_cite",
		Title:       "Read cited lines",
		Description: "Return exactly the lines a res:// citation names, from the version of the document that is indexed." + untrustedDoc,
		Annotations: readHints(),
	}, handler(s, "resource_cite", func(ctx context.Context, p memory.Principal, in citeIn) (knowledge.SourceResult, error) {
		rid, from, to, err := knowledge.ParseCitation(in.Citation)
		if err != nil {
			return knowledge.SourceResult{}, err
		}
		return kn.Source(ctx, p, rid, from, to)
	}))
}
