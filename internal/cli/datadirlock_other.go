//go:build !unix

package cli

import "errors"

var errLocked = errors.New("locked by another process")

// Without flock(2) a restore cannot tell whether a server is using the
// data directory: docs/backup.md asks to stop it first.
func lockShared(string) (unlock func(), err error)    { return func() {}, nil }
func lockExclusive(string) (unlock func(), err error) { return func() {}, nil }
