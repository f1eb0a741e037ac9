package api

import (
	"net/http"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// backupRequest names the new backup directory under the server's backup
// directory (<data-dir>/backups); empty means a name from the time.
type backupRequest struct {
	Name string `json:"name"`
}

type backupResponse struct {
	Path     string              `json:"path"`
	Manifest core.BackupManifest `json:"manifest"`
}

// backup takes an online backup (POST /v1/admin/backup): operators only,
// audited, written on the server's disk and never sent over HTTP.
func (s *Server) backup(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req backupRequest
	if _, err := decodeOptional(r, &req); err != nil {
		return err
	}
	// A large database takes longer than the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	m, path, err := s.svc.BackupNamed(r.Context(), p, req.Name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, backupResponse{Path: path, Manifest: m})
}
