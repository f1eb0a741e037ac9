//go:build !unix

package cli

// lockFile is a no-op where flock(2) is missing: the index snapshot's
// erasure and a save in another process are then not serialised, and a
// stale snapshot is caught only when the server catches up (it rewrites
// the file) or at the next start (the file is deleted); docs/erasure.md.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
