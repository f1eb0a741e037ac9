package memory

import (
	"encoding/json"
	"strconv"
	"strings"
)

// ChunkLocator is what a knowledge chunk's metadata says about where it
// comes from (internal/knowledge writes it).
type ChunkLocator struct {
	ResourceID string `json:"resource_id"`
	Heading    string `json:"heading,omitempty"`
	Page       int    `json:"page,omitempty"`
	LineStart  int    `json:"line_start"`
	LineEnd    int    `json:"line_end"`
}

// ResourceCitation is the citation of lines a..b of a resource under a
// heading path or declaration (SPEC §5):
// res://<resource>#<heading path>#L<a>-L<b>, with "#p<page>" before the
// line range for PDFs. '%' and '#' in the heading are percent-encoded so
// the citation splits back at '#'.
func ResourceCitation(resource, heading string, page, a, b int) string {
	var sb strings.Builder
	sb.WriteString("res://" + resource + "#")
	sb.WriteString(strings.NewReplacer("%", "%25", "#", "%23").Replace(heading))
	if page > 0 {
		sb.WriteString("#p" + strconv.Itoa(page))
	}
	sb.WriteString("#L" + strconv.Itoa(a) + "-L" + strconv.Itoa(b))
	return sb.String()
}

// chunkCitation returns the res:// citation of a knowledge chunk, or "".
func chunkCitation(r Record) string {
	if r.Type != Resource || r.Category != "chunk" {
		return ""
	}
	var l ChunkLocator
	if json.Unmarshal(r.Metadata, &l) != nil || l.ResourceID == "" || l.LineStart <= 0 {
		return ""
	}
	return ResourceCitation(l.ResourceID, l.Heading, l.Page, l.LineStart, l.LineEnd)
}
