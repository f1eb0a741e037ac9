package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
)

// importPath has its own body limit (limits.max_import_bytes): an import
// is one whole workspace, validated in memory before anything is written.
const importPath = "/v1/import"

// bodyLimit is the request body limit of a route.
func (s *Server) bodyLimit(rt Route) int64 {
	if rt.Path == importPath {
		return s.svc.Policy().Limits.MaxImportBytes
	}
	if rt.Path == resourcesPath && rt.Method == "POST" {
		// A document, base64-encoded in JSON at worst.
		return max(s.maxBody, int64(knowledge.DefaultMaxBytes)*4/3+64<<10)
	}
	return s.maxBody
}

// startedWriter notes whether any byte of the response went out, so an
// export that fails before its first line still gets a JSON error.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (sw *startedWriter) Write(b []byte) (int, error) {
	if !sw.started {
		sw.started = true
		h := sw.w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		sw.w.WriteHeader(http.StatusOK)
	}
	return sw.w.Write(b)
}

// exportWorkspace streams the caller's workspace as canonical NDJSON
// (SPEC §9), the same bytes as `memgate export`. The last line is the
// "end" trailer with the counts; a failure after the first line aborts the
// connection, so a client never mistakes a cut-off body for a whole
// export (and import refuses a file without its trailer).
func (s *Server) exportWorkspace(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	sw := &startedWriter{w: w}
	_, err := s.svc.Export(r.Context(), p, newDeadlineWriter(sw, w, s.streamWindow), s.exportProgress)
	if err == nil {
		return nil
	}
	if !sw.started {
		return err
	}
	s.log.Warn("export failed after its first line; aborting the response", "err", err)
	panic(http.ErrAbortHandler)
}

// importWorkspace reads an export into the caller's workspace, which must
// hold nothing but operators. Everything is validated before the single
// transaction that writes it: a bad line imports nothing and the error
// names the line.
func (s *Server) importWorkspace(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	if r.Body == nil {
		return fault.New(fault.InvalidArgument, "request body must hold an export (NDJSON)")
	}
	st, err := s.svc.Import(r.Context(), p, newDeadlineReader(r.Body, w, s.streamWindow), nil)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(err, nil, nil, true)
		}
		return err
	}
	// Drain what a client may have sent after the trailer so the
	// connection can be reused; Import has already refused trailing data.
	_, _ = io.Copy(io.Discard, r.Body)
	return writeJSON(w, http.StatusOK, st)
}
