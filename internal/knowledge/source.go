package knowledge

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// SourceResult is a range of lines of a resource's indexed text.
type SourceResult struct {
	ResourceID string `json:"resource_id"`
	URI        string `json:"uri"`
	MediaType  string `json:"media_type"`
	Version    int    `json:"version"`
	From       int    `json:"from"`
	To         int    `json:"to"`
	// TotalLines is the length of the indexed text.
	TotalLines int    `json:"total_lines"`
	Text       string `json:"text"`
}

// ParseLines parses "a-b" (or "a") into a 1-based inclusive range; ""
// is the whole document (0, 0).
func ParseLines(s string) (from, to int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	s = strings.ReplaceAll(strings.TrimPrefix(s, "L"), "-L", "-")
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || from < 1 || to < from {
		return 0, 0, fault.Field("lines", "must be a-b with 1 <= a <= b")
	}
	return from, to, nil
}

// ParseCitation splits res://<resource>#<heading>[#p<page>]#L<a>-L<b>
// into the resource id and line range (0, 0 when it names none).
func ParseCitation(uri string) (rid string, from, to int, err error) {
	rest, ok := strings.CutPrefix(uri, "res://")
	if !ok {
		return "", 0, 0, fault.Field("uri", "must be a res:// citation")
	}
	parts := strings.Split(rest, "#")
	rid = parts[0]
	if !validResourceID(rid) {
		return "", 0, 0, fault.Field("uri", "names no resource")
	}
	if last := parts[len(parts)-1]; len(parts) > 1 && strings.HasPrefix(last, "L") {
		from, to, err = ParseLines(last)
		if err != nil {
			return "", 0, 0, fault.Field("uri", "has a malformed line range")
		}
	}
	return rid, from, to, nil
}

func validResourceID(rid string) bool {
	h, ok := strings.CutPrefix(rid, "res_")
	if !ok || len(h) != 24 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Source returns lines from..to (0, 0: all) of the version of resource
// rid that is indexed now, rebuilt from its chunks. Every chunk the range
// touches is read through core's access check: a range that touches a
// chunk p may not read is not found, as is a resource p cannot see.
func (s *Service) Source(ctx context.Context, p memory.Principal, rid string, from, to int) (SourceResult, error) {
	if !validResourceID(rid) {
		return SourceResult{}, notFound()
	}
	s.mu.Lock()
	r, err := s.lookup(ctx, p.Workspace, rid)
	var chunks []chunkEntry
	var res SourceResult
	if r != nil {
		chunks = r.liveChunks()
		res = SourceResult{ResourceID: rid, URI: r.uri, MediaType: r.media, Version: r.version}
	}
	s.mu.Unlock()
	if err != nil {
		return SourceResult{}, err
	}
	if len(chunks) == 0 {
		return SourceResult{}, notFound()
	}
	total := 0
	for _, c := range chunks {
		total = max(total, c.meta.SpanEnd)
	}
	if from == 0 {
		from, to = 1, total
	}
	if to > total {
		return SourceResult{}, fault.Field("lines", "the indexed text has "+strconv.Itoa(total)+" lines").With("total_lines", total)
	}
	var out []string
	next := from
	for _, c := range chunks {
		if c.meta.SpanEnd < from || c.meta.SpanStart > to {
			continue
		}
		rec, err := s.core.Get(ctx, p, c.id, core.GetOptions{})
		if err != nil {
			if fault.CodeOf(err) == fault.NotFound {
				return SourceResult{}, notFound()
			}
			return SourceResult{}, err
		}
		m, ok := chunkOf(rec)
		if !ok || !live(rec) || m.SpanStart > next {
			return SourceResult{}, fault.New(fault.Conflict, "the resource is being re-ingested; retry").With("retry", true)
		}
		lines := strings.Split(rec.Content, "\n")
		for i := max(from, m.SpanStart); i <= min(to, m.SpanEnd); i++ {
			if i-m.SpanStart < len(lines) {
				out = append(out, lines[i-m.SpanStart])
			}
		}
		next = m.SpanEnd + 1
	}
	if len(out) != to-from+1 {
		return SourceResult{}, fault.New(fault.Conflict, "the resource is being re-ingested; retry").With("retry", true)
	}
	res.From, res.To, res.TotalLines, res.Text = from, to, total, strings.Join(out, "\n")
	return res, nil
}

// ResourceInfo describes one ingested resource.
type ResourceInfo struct {
	ResourceID string       `json:"resource_id"`
	URI        string       `json:"uri"`
	MediaType  string       `json:"media_type"`
	SHA256     string       `json:"content_sha256"`
	Version    int          `json:"version"`
	Chunks     int          `json:"chunks"`
	Scope      memory.Scope `json:"scope"`
}

// Resources lists the live resources of p's workspace that have a chunk
// p may read, by URI.
func (s *Service) Resources(ctx context.Context, p memory.Principal) ([]ResourceInfo, error) {
	s.mu.Lock()
	err := s.syncLocked(ctx)
	type cand struct {
		info  ResourceInfo
		first string
	}
	var cands []cand
	if err == nil {
		for _, r := range s.ix[p.Workspace] {
			lc := r.liveChunks()
			if len(lc) == 0 {
				continue
			}
			cands = append(cands, cand{ResourceInfo{ResourceID: r.id, URI: r.uri, MediaType: r.media, SHA256: r.docSHA, Version: r.version,
				Chunks: len(lc), Scope: r.scope}, lc[0].id})
		}
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []ResourceInfo
	for _, c := range cands {
		if _, err := s.core.Get(ctx, p, c.first, core.GetOptions{}); err != nil {
			if fault.CodeOf(err) == fault.NotFound {
				continue
			}
			return nil, err
		}
		out = append(out, c.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out, nil
}
