package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
)

// Knowledge (SPEC §17): documents, code and PDFs ingested as cited
// resource chunks; internal/knowledge holds the rules.

// resourcesPath has its own body limit: a document upload, up to the
// knowledge service's document limit.
const resourcesPath = "/v1/resources"

// resourceBody is the JSON form of POST /v1/resources: the document as
// text (content) or as base64 (content_base64, for PDFs).
type resourceBody struct {
	URI           string        `json:"uri"`
	MediaType     string        `json:"media_type,omitempty"`
	Content       *string       `json:"content,omitempty"`
	ContentBase64 *string       `json:"content_base64,omitempty"`
	Scope         memory.Scope  `json:"scope"`
	Access        memory.Access `json:"access,omitempty"`
}

// ingestResource ingests one document: a JSON body, or a multipart
// upload whose "file" part is the document and whose "uri", "media_type",
// "access" and "scope" (JSON) fields describe it.
func (s *Server) ingestResource(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	doc, err := decodeDocument(r)
	if err != nil {
		return err
	}
	res, err := s.knowledge.Ingest(r.Context(), p, doc)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	switch {
	case res.Outcome == knowledge.Unchanged:
		status = http.StatusOK
	case res.Pending > 0 || res.Quarantined > 0:
		status = http.StatusAccepted
	}
	w.Header().Set("Location", "/v1/resources/"+res.ResourceID)
	return writeJSON(w, status, res)
}

func decodeDocument(r *http.Request) (knowledge.Document, error) {
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		var b resourceBody
		if err := Decode(r, &b); err != nil {
			return knowledge.Document{}, err
		}
		doc := knowledge.Document{URI: b.URI, MediaType: b.MediaType, Scope: b.Scope, Access: b.Access}
		switch {
		case b.Content != nil && b.ContentBase64 != nil:
			return doc, fault.Field("content", "give content or content_base64, not both")
		case b.Content != nil:
			doc.Content = []byte(*b.Content)
		case b.ContentBase64 != nil:
			raw, err := base64.StdEncoding.DecodeString(*b.ContentBase64)
			if err != nil {
				return doc, fault.Field("content_base64", "must be standard base64")
			}
			doc.Content = raw
		default:
			return doc, fault.Field("content", "is required (or content_base64)")
		}
		return doc, nil
	}
	if params["boundary"] == "" {
		return knowledge.Document{}, fault.Field("Content-Type", "multipart/form-data needs a boundary")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return knowledge.Document{}, fault.Field("body", "must be multipart/form-data")
	}
	var doc knowledge.Document
	var gotFile bool
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return doc, bodyErr(err, "body", "is not valid multipart/form-data")
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return doc, bodyErr(err, part.FormName(), "could not be read")
		}
		switch part.FormName() {
		case "file":
			doc.Content, gotFile = data, true
			if doc.URI == "" && part.FileName() != "" {
				doc.URI = "upload:" + part.FileName()
			}
			if ct := part.Header.Get("Content-Type"); doc.MediaType == "" && ct != "" && ct != "application/octet-stream" {
				doc.MediaType = ct
			}
		case "uri":
			doc.URI = string(data)
		case "media_type":
			doc.MediaType = string(data)
		case "access":
			doc.Access = memory.Access(data)
		case "scope":
			if err := json.Unmarshal(data, &doc.Scope); err != nil {
				return doc, fault.Field("scope", "must be a JSON scope object")
			}
		default:
			return doc, fault.Field(part.FormName(), "is not a known field")
		}
	}
	if !gotFile {
		return doc, fault.Field("file", "is required")
	}
	if strings.HasPrefix(doc.MediaType, "text/plain") && knowledge.MediaTypeOf(doc.URI) != "" {
		doc.MediaType = "" // a browser's guess; the name says more
	}
	return doc, nil
}

// bodyErr maps a body read error: too large stays too large.
func bodyErr(err error, field, problem string) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &fault.Error{Code: fault.TooLarge, Message: "request body exceeds the limit", Details: map[string]any{"limit": mbe.Limit}}
	}
	return fault.Field(field, problem)
}

func (s *Server) listResources(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	list, err := s.knowledge.Resources(r.Context(), p)
	if err != nil {
		return err
	}
	if list == nil {
		list = []knowledge.ResourceInfo{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"resources": list})
}

// resourceSource returns the cited lines (?lines=a-b, default all) of
// the indexed version of a resource.
func (s *Server) resourceSource(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	from, to, err := knowledge.ParseLines(r.URL.Query().Get("lines"))
	if err != nil {
		return err
	}
	res, err := s.knowledge.Source(r.Context(), p, r.PathValue("id"), from, to)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

// forgetResource erases every chunk of a resource, every version.
func (s *Server) forgetResource(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	res, err := s.knowledge.Forget(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) searchResources(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req knowledge.SearchRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.knowledge.Search(r.Context(), p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}
