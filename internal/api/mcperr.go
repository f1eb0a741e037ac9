package api

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/mcp"
)

// The MCP SDK answers transport-level failures (a malformed JSON-RPC
// payload, a wrong Content-Type or Accept, a body over the limit, a wrong
// method) with plain-text http.Error bodies, some of which quote the
// request. Every such answer is put into the one error envelope, with a
// fixed message per case and never the SDK's text.

// mcpErrorWriter holds back the MCP handler's answers so that finish can
// rewrite them: a non-JSON error answer becomes the error envelope, and a
// JSON-RPC answer gets its protocol errors' messages cleaned
// (mcp.CleanResponseBody). Other answers (event streams) pass through.
type mcpErrorWriter struct {
	http.ResponseWriter
	status  int          // the held-back error status, 0 when not held back
	jsonOK  int          // the held-back status of a JSON-RPC answer
	body    bytes.Buffer // the held-back body
	started bool
}

func (w *mcpErrorWriter) WriteHeader(code int) {
	if w.started {
		return
	}
	w.started = true
	isJSON := strings.HasPrefix(w.Header().Get("Content-Type"), "application/json")
	switch {
	case code >= 400 && !isJSON:
		w.status = code
	case code < 300 && isJSON:
		w.jsonOK = code
	default:
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *mcpErrorWriter) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.status != 0:
		if w.body.Len() < 512 {
			w.body.Write(b[:min(len(b), 512)]) // read for its reason only
		}
		return len(b), nil
	case w.jsonOK != 0:
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes through for streamed answers.
func (w *mcpErrorWriter) Flush() {
	if w.status == 0 && w.jsonOK == 0 {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func (w *mcpErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes what was held back.
func (w *mcpErrorWriter) finish(maxBody int64) {
	switch {
	case w.jsonOK != 0:
		body := mcp.CleanResponseBody(w.body.Bytes())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.ResponseWriter.WriteHeader(w.jsonOK)
		_, _ = w.ResponseWriter.Write(body)
	case w.status != 0:
		w.Header().Del("Content-Length")
		fe := mcpTransportError(w.status, w.body.String(), maxBody)
		_ = writeJSON(w.ResponseWriter, w.status, errorOf(fe.Code, fe.Message, fe.Details))
	}
}

// mcpTransportError is the fault for an MCP transport failure: the code
// for its status and a fixed message; reason tells the cases apart.
func mcpTransportError(status int, sdkText string, maxBody int64) *fault.Error {
	reason := func(r, msg string) *fault.Error {
		return &fault.Error{Code: fault.InvalidArgument, Message: msg, Details: map[string]any{"reason": r}}
	}
	switch status {
	case http.StatusMethodNotAllowed:
		return &fault.Error{Code: fault.MethodNotAllowed, Message: "MCP over HTTP takes POST requests",
			Details: map[string]any{"allow": []string{http.MethodPost}}}
	case http.StatusUnsupportedMediaType:
		return reason("content_type", "an MCP request needs Content-Type: application/json")
	case http.StatusRequestEntityTooLarge:
		return &fault.Error{Code: fault.TooLarge, Message: "request body exceeds the limit", Details: map[string]any{"limit": maxBody}}
	case http.StatusNotFound:
		return fault.New(fault.NotFound, "no such MCP session")
	case http.StatusForbidden:
		return fault.New(fault.PermissionDenied, "MCP request refused")
	case http.StatusUnauthorized:
		return fault.New(fault.Unauthenticated, "missing, invalid or revoked token")
	}
	if status >= 500 {
		return fault.New(fault.Internal, "internal error")
	}
	switch {
	case strings.HasPrefix(sdkText, "Accept must"):
		return reason("accept", "an MCP request needs Accept: application/json, text/event-stream")
	case strings.HasPrefix(sdkText, "POST requires a non-empty body"):
		return reason("empty_body", "an MCP request needs a JSON-RPC message in its body")
	case strings.Contains(sdkText, "protocol version"):
		return reason("protocol_version", "unsupported MCP protocol version")
	case strings.Contains(sdkText, "batching"):
		return reason("batch", "JSON-RPC batches are not supported by this MCP protocol version")
	case strings.Contains(sdkText, "Mcp-Session-Id"), strings.Contains(sdkText, "Last-Event-ID"):
		return reason("session", "this MCP server is stateless: no sessions or stream replay")
	}
	return reason("malformed_payload", "the body is not a valid JSON-RPC message")
}
