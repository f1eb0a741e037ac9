package cli_test

import (
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
)

// TestWebhooksCommand: add prints the secret once; list never shows it;
// export leaves it out; deliveries reads
// the (empty) log; remove removes; bad input exits with a usage or input
// error naming the field.
func TestWebhooksCommand(t *testing.T) {
	dir := t.TempDir()
	var c core.WebhookCreated
	mustJSON(t, run(t, dir, nil, "webhooks", "add", "--kinds", "job.dead,audit.broken", "--json", "https://hooks.example.test/in?token=tok123"), &c)
	if c.Secret == "" || c.Webhook.ID == "" || len(c.Webhook.Kinds) != 2 {
		t.Fatalf("add: %+v", c)
	}
	r := run(t, dir, nil, "webhooks", "list")
	if r.code != 0 || !strings.Contains(r.stdout, c.Webhook.ID) || strings.Contains(r.stdout, c.Secret) {
		t.Fatalf("list: exit %d %q", r.code, r.stdout)
	}
	r = run(t, dir, nil, "export")
	if r.code != 0 || strings.Contains(r.stdout, c.Secret) || strings.Contains(r.stdout, c.Webhook.ID) {
		t.Fatalf("export (exit %d) holds the webhook", r.code)
	}
	var dp core.DeliveryPage
	mustJSON(t, run(t, dir, nil, "webhooks", "deliveries", "--webhook", c.Webhook.ID, "--json"), &dp)
	if len(dp.Deliveries) != 0 {
		t.Fatalf("deliveries of a new endpoint: %+v", dp)
	}
	if r := run(t, dir, nil, "webhooks", "add", "ftp://x"); r.code != 3 || !strings.Contains(r.stderr, "url") {
		t.Fatalf("bad url: exit %d %q", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "webhooks", "add", "--kinds", "record.created", "https://x.test"); r.code != 3 || !strings.Contains(r.stderr, "kinds") {
		t.Fatalf("bad kind: exit %d %q", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "webhooks", "remove", c.Webhook.ID); r.code != 0 {
		t.Fatalf("remove: exit %d %q", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "webhooks", "remove", c.Webhook.ID); r.code == 0 {
		t.Fatal("removing twice succeeded")
	}
}
