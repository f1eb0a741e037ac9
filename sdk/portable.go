package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Export and import of a whole workspace as canonical NDJSON (the same
// bytes as `memgate export`), streamed: neither is held in memory.

// ImportStats counts what an import wrote.
type ImportStats struct {
	Workspace        string `json:"workspace"`
	WorkspaceCreated bool   `json:"workspace_created"`
	Principals       int    `json:"principals"`
	Nodes            int    `json:"nodes"`
	Edges            int    `json:"edges"`
	Records          int    `json:"records"`
	Versions         int    `json:"versions"`
	Approvals        int    `json:"approvals"`
	PrincipalsKept   int    `json:"principals_kept"`
}

// stream sends a request whose body (if any) and answer are not JSON
// documents held in memory. The caller closes the answer's body.
func (c *Client) stream(ctx context.Context, method, path, accept string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.t.base+path, body)
	if err != nil {
		return nil, errors.New("memgate: cannot build request for " + method + " " + path)
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	if c.t.ua != "" {
		req.Header.Set("User-Agent", c.t.ua)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.t.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		return nil, c.t.errorFrom(resp, raw, []string{c.token})
	}
	return resp, nil
}

// Export writes the workspace's export to w (operators): GET /v1/export.
// A server failure after the first line cuts the stream, which then
// lacks its trailer; Import refuses such a file.
func (c *Client) Export(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.stream(ctx, http.MethodGet, "/v1/export", "application/x-ndjson", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(w, resp.Body)
}

// Import reads an export into this workspace, which must hold only
// operators (operators): POST /v1/import. It is atomic.
func (c *Client) Import(ctx context.Context, r io.Reader) (ImportStats, error) {
	resp, err := c.stream(ctx, http.MethodPost, "/v1/import", "application/json", r)
	if err != nil {
		return ImportStats{}, err
	}
	defer resp.Body.Close()
	var st ImportStats
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return st, err
	}
	if json.Unmarshal(raw, &st) != nil {
		return st, badResponse(http.MethodPost, "/v1/import", resp.StatusCode, "body is not valid JSON of the documented shape")
	}
	return st, nil
}
