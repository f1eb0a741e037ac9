package core

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Ownership of "agent" records follows principal ids: an import whose
// writer is not a principal of the target (here its principal line is
// gone, as in an export trimmed by hand or made elsewhere) gives the
// record to no one, and an agent created later under the writer's name
// reads nothing of it. An imported writer keeps its records, and gets
// credentials by rotation.
func TestImportedOwnershipFollowsPrincipalIDs(t *testing.T) {
	ctx := context.Background()
	src, _, _ := newPortableService(t, true)
	op, err := src.CLIOperator(ctx, memory.DefaultWorkspace)
	if err != nil || op.ID == "cli" {
		t.Fatalf("CLIOperator = %+v, %v; want the bootstrap operator", op, err)
	}
	alice, err := src.CreateAgent(ctx, op, "alice", memory.Standard)
	if err != nil {
		t.Fatal(err)
	}
	w, err := src.Write(ctx, alice.Principal, WriteRequest{Type: memory.Decision, Content: "Alice's private plan", Access: memory.AgentOnly})
	if err != nil {
		t.Fatal(err)
	}
	var exp bytes.Buffer
	if _, err := src.Export(ctx, op, &exp, nil); err != nil {
		t.Fatal(err)
	}

	// Without alice's principal line.
	var trimmed []string
	for _, l := range strings.Split(strings.TrimSuffix(exp.String(), "\n"), "\n") {
		switch {
		case strings.Contains(l, `"kind":"principal"`) && strings.Contains(l, `"name":"alice"`):
			continue
		case strings.HasPrefix(l, `{"counts":`):
			l = strings.Replace(l, `"principals":2`, `"principals":1`, 1)
		}
		trimmed = append(trimmed, l)
	}
	dst, _, _ := newPortableService(t, true)
	dop, _ := dst.CLIOperator(ctx, memory.DefaultWorkspace)
	if _, err := dst.Import(ctx, dop, strings.NewReader(strings.Join(trimmed, "\n")+"\n"), nil); err != nil {
		t.Fatalf("import: %v", err)
	}
	imposter, err := dst.CreateAgent(ctx, dop, "alice", memory.Trusted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Get(ctx, imposter.Principal, w.Record.ID, GetOptions{IncludeSensitive: true}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("a new agent named like the writer reads the imported record: %v", err)
	}
	page, err := dst.List(ctx, imposter.Principal, ListRequest{IncludeSensitive: true})
	if err != nil || len(page.Records) != 0 {
		t.Fatalf("a new agent named like the writer lists %d records (%v)", len(page.Records), err)
	}
	if _, err := dst.Forget(ctx, imposter.Principal, w.Record.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("a new agent named like the writer may forget the record: %v", err)
	}

	// With it: the imported alice owns her record, once rotated in.
	full, _, _ := newPortableService(t, true)
	fop, _ := full.CLIOperator(ctx, memory.DefaultWorkspace)
	if _, err := full.Import(ctx, fop, bytes.NewReader(exp.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	rot, err := full.RotateAgent(ctx, fop, "alice")
	if err != nil || rot.ID != alice.ID {
		t.Fatalf("rotate the imported alice: %+v %v", rot, err)
	}
	p, err := full.Authenticate(ctx, rot.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.Get(ctx, p, w.Record.ID, GetOptions{}); err != nil {
		t.Fatalf("the imported writer cannot read its record: %v", err)
	}
	if _, err := full.CreateAgent(ctx, fop, "alice", memory.Standard); !fault.Is(err, fault.Conflict) {
		t.Fatalf("re-creating an imported name: %v, want conflict (rotate instead)", err)
	}
}
