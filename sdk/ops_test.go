package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// TestOperationsRealServer drives the operations routes (backup, agent
// card, events, webhooks) through the SDK against a real server.
func TestOperationsRealServer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix,
		Backups: core.BackupOptions{Dir: filepath.Join(dir, "backups"), Version: "test"}})
	opTok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	t.Cleanup(func() { srv.Close(); svc.Close(); st.Close() })
	op, err := NewClient(srv.URL, opTok)
	if err != nil {
		t.Fatal(err)
	}

	card, err := op.AgentCard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Name   string            `json:"name"`
		Skills []json.RawMessage `json:"skills"`
	}
	if json.Unmarshal(card, &c) != nil || c.Name != "memgate" || len(c.Skills) == 0 {
		t.Fatalf("agent card: %s", card)
	}

	created, err := op.CreateWebhook(ctx, "https://hooks.example.com/memgate", []string{"record.quarantined"})
	if err != nil {
		t.Fatal(err)
	}
	if created.Secret == "" || created.Webhook.ID == "" {
		t.Fatalf("created webhook: %+v", created)
	}
	hooks, err := op.ListWebhooks(ctx)
	if err != nil || len(hooks) != 1 || hooks[0].ID != created.Webhook.ID {
		t.Fatalf("list webhooks: %+v %v", hooks, err)
	}
	page, err := op.WebhookDeliveries(ctx, created.Webhook.ID, "", 10)
	if err != nil || len(page.Deliveries) != 0 {
		t.Fatalf("deliveries before any delivery: %+v %v", page, err)
	}

	agent, err := op.CreateAgent(ctx, "writer", "standard")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := NewClient(srv.URL, agent.Token)
	if err != nil {
		t.Fatal(err)
	}
	// A secret in content is quarantined: one record.quarantined event.
	res, err := ag.Write(ctx, WriteRequest{Type: "belief", Content: "the deploy key is AKIAIOSFODNN7EXAMPLE"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != "quarantined" {
		t.Fatalf("decision %q, want quarantined", res.Decision)
	}
	es, err := op.Events(ctx, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for {
		ev, err := es.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(ev.Subject), "AKIA") {
			t.Fatalf("event carries content: %s", ev.Subject)
		}
		kinds = append(kinds, ev.Type)
	}
	es.Close()
	if !strings.Contains(strings.Join(kinds, ","), "record.quarantined") || es.LastSeq() < 1 {
		t.Fatalf("events %v (last seq %d), want a record.quarantined", kinds, es.LastSeq())
	}

	// Operator routes refuse an agent, with the server's code.
	if _, err := ag.CreateWebhook(ctx, "https://hooks.example.com/x", nil); StatusOf(err) != http.StatusForbidden {
		t.Fatalf("agent creating a webhook: %v, want 403", err)
	}
	if _, err := ag.Events(ctx, 0, false); StatusOf(err) != http.StatusForbidden {
		t.Fatalf("agent reading events: %v, want 403", err)
	}

	b, err := op.Backup(ctx, "sdk-test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.Path, "sdk-test") || len(b.Manifest.Files) == 0 || b.Manifest.Files[0].SHA256 == "" {
		t.Fatalf("backup: %+v", b)
	}
	if err := op.DeleteWebhook(ctx, created.Webhook.ID); err != nil {
		t.Fatal(err)
	}
	if hooks, err := op.ListWebhooks(ctx); err != nil || len(hooks) != 0 {
		t.Fatalf("after delete: %+v %v", hooks, err)
	}
	if err := op.DeleteWebhook(ctx, ""); err == nil {
		t.Fatal("DeleteWebhook with no id: no error")
	}
}
