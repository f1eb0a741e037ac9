package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestResourcesRealServer ingests a document through the SDK against a
// real server, finds its section with a res:// citation, reads the cited
// lines back, re-ingests it unchanged (nothing written) and forgets it.
func TestResourcesRealServer(t *testing.T) {
	ctx := context.Background()
	url, opTok := realServer(t)
	op := must[*Client](t, "client")(NewClient(url, opTok))
	agent := must[CreatedPrincipal](t, "create agent")(op.CreateAgent(ctx, "reader", "standard"))
	c := must[*Client](t, "client")(NewClient(url, agent.Token))
	scope := Scope{ProjectID: "docs"}
	doc := Document{URI: "https://wiki.example/runbook.md", Scope: scope,
		Content: "# Runbook\n\nGeneral notes.\n\n## Rotating the pager\n\nThe pager rotates every Tuesday at noon.\nHand over in the ops channel.\n"}
	res := must[IngestResult](t, "ingest")(c.Ingest(ctx, doc))
	if res.Outcome != "created" || res.ResourceID == "" || len(res.Chunks) < 2 {
		t.Fatalf("ingest = %+v", res)
	}
	again := must[IngestResult](t, "re-ingest")(c.Ingest(ctx, doc))
	if again.Outcome != "unchanged" || again.Added+again.Changed+again.Retired != 0 {
		t.Fatalf("unchanged re-ingest = %+v", again)
	}
	list := must[[]ResourceInfo](t, "resources")(c.Resources(ctx))
	if len(list) != 1 || list[0].ResourceID != res.ResourceID || list[0].Chunks != len(res.Chunks) {
		t.Fatalf("resources = %+v", list)
	}
	found := must[ResourceSearchResponse](t, "search")(c.SearchResources(ctx, ResourceSearchRequest{Query: "when does the pager rotate", Scope: scope}))
	if len(found.Results) == 0 {
		t.Fatal("the pager section was not found")
	}
	top := found.Results[0]
	if !strings.HasPrefix(top.Citation, "res://") || !strings.Contains(top.Citation, "#L") || top.Heading == "" {
		t.Fatalf("top hit cites %q (heading %q)", top.Citation, top.Heading)
	}
	lines := must[SourceLines](t, "source")(c.Source(ctx, top.ResourceID, top.LineStart, top.LineEnd))
	if !strings.Contains(lines.Text, "every Tuesday at noon") || lines.From != top.LineStart || lines.To != top.LineEnd {
		t.Fatalf("cited lines %d-%d = %q", lines.From, lines.To, lines.Text)
	}
	if _, err := c.Source(ctx, "", 0, 0); err == nil {
		t.Fatal("an empty resource id was sent")
	}
	gone := must[ForgottenResource](t, "forget")(c.ForgetResource(ctx, res.ResourceID))
	if gone.Forgotten != len(res.Chunks) {
		t.Fatalf("forget = %+v, want %d chunks", gone, len(res.Chunks))
	}
	_, err := c.Source(ctx, res.ResourceID, 0, 0)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("source of a forgotten document: %v", err)
	}
}
