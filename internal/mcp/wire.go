package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK's JSON-RPC protocol errors quote the request: params that do
// not decode ("unmarshaling \"...\" into ..."), an unknown tool's name.
// memgate never repeats what a client sent, so every protocol error it
// sends carries a fixed message for its code; the code and any data the
// protocol defines (a missing resource's uri) are kept.

// protocolMessage is the message of a JSON-RPC error with code.
func protocolMessage(code int64, msg string) string {
	switch code {
	case jsonrpc.CodeParseError:
		return "parse error: the message is not valid JSON"
	case jsonrpc.CodeInvalidRequest:
		return "invalid request: not a JSON-RPC 2.0 request"
	case jsonrpc.CodeMethodNotFound:
		return "method not found"
	case jsonrpc.CodeInvalidParams:
		switch {
		case strings.HasPrefix(msg, "unknown tool"):
			return "unknown tool: see tools/list"
		case strings.HasPrefix(msg, "Resource not found"), strings.HasPrefix(msg, "resource not found"):
			return "Resource not found"
		}
		return "invalid params: they do not match this method's parameters"
	case jsonrpc.CodeInternalError:
		return "internal error"
	}
	if !strings.ContainsAny(msg, `"'`+"`") && len(msg) <= 120 {
		return msg // memgate's and the SDK's fixed texts
	}
	return "request failed"
}

// cleanMessage returns m with any error response's message replaced by
// protocolMessage.
func cleanMessage(m jsonrpc.Message) jsonrpc.Message {
	r, ok := m.(*jsonrpc.Response)
	if !ok || r.Error == nil {
		return m
	}
	out := &jsonrpc.Error{Message: r.Error.Error()}
	var we *jsonrpc.Error
	if errors.As(r.Error, &we) {
		out.Code, out.Data = we.Code, we.Data
	}
	out.Message = protocolMessage(out.Code, out.Message)
	c := *r
	c.Error = out
	return &c
}

// CleanResponseBody applies cleanMessage to a JSON-RPC response body
// (one message or a batch); a body it cannot read is returned as is.
func CleanResponseBody(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if !bytes.Contains(trimmed, []byte(`"error"`)) {
		return body
	}
	clean := func(raw []byte) ([]byte, bool) {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, false
		}
		out, err := jsonrpc.EncodeMessage(cleanMessage(m))
		return out, err == nil
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		for i, raw := range batch {
			c, ok := clean(raw)
			if !ok {
				return body
			}
			batch[i] = c
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return append(out, '\n')
	}
	out, ok := clean(trimmed)
	if !ok {
		return body
	}
	return append(out, '\n')
}

// cleanWriter cleans each message the stdio transport writes (one
// newline-delimited message or batch per Write); HTTP answers go through
// CleanResponseBody in the REST adapter.
type cleanWriter struct{ w io.Writer }

func (c cleanWriter) Write(b []byte) (int, error) {
	if _, err := c.w.Write(CleanResponseBody(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
