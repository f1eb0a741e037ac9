package core

import (
	"context"
	"errors"
	"io"

	"github.com/memgate/memgate/internal/memory"
)

// Migrate copies by's workspace from s into dst: s's export piped into
// dst's import, so a migration obeys exactly the rules of an export and an
// import (an empty or new target workspace; the import stops at the
// first bad line and writes nothing). exported and imported, when set,
// are the two halves' progress callbacks; they run concurrently.
func (s *Service) Migrate(ctx context.Context, by memory.Principal, dst *Service, exported, imported func(done int)) (ImportStats, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.Export(ctx, by, pw, exported)
		pw.CloseWithError(err) // nil closes normally
		done <- err
	}()
	stats, ierr := dst.Import(ctx, by, pr, imported)
	pr.CloseWithError(errors.New("import stopped")) // unblocks the export if the import failed early
	eerr := <-done
	switch {
	case ierr != nil && eerr != nil && errors.Is(ierr, eerr):
		return ImportStats{}, eerr // the import failed because its input did; nothing was written
	case ierr != nil:
		return ImportStats{}, ierr
	case eerr != nil:
		return ImportStats{}, eerr
	}
	return stats, nil
}
