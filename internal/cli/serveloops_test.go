package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/config"
)

// TestServeRunsMaintenance: serve's lifecycle owner gets the maintenance
// loop unless --maintenance-interval is 0; mcp never runs it.
func TestServeRunsMaintenance(t *testing.T) {
	cfg := config.Default()
	if serveLoops(&cfg, nil).Maintenance == nil {
		t.Fatal("serve does not run the maintenance sweep by default")
	}
	cfg.MaintenanceInterval = 0
	if serveLoops(&cfg, nil).Maintenance != nil {
		t.Fatal("--maintenance-interval 0 does not disable the sweep")
	}
	cfg.MaintenanceInterval = time.Minute
	if mcpLoops(&cfg).Maintenance != nil {
		t.Fatal("mcp runs the maintenance sweep")
	}
	neg := config.Default()
	neg.DataDir, neg.MaintenanceInterval = t.TempDir(), -time.Second
	if err := neg.Validate(); err == nil || !strings.Contains(err.Error(), "maintenance-interval") {
		t.Fatalf("a negative interval: %v", err)
	}
}
