//go:build unix

package cli

import (
	"errors"
	"os"
	"syscall"
)

// errLocked: another process holds the lock.
var errLocked = errors.New("locked by another process")

// lockShared takes a shared advisory lock on path (created if absent)
// without waiting: every process that opens a data directory holds one,
// so restore (lockExclusive) can tell that none does.
func lockShared(path string) (unlock func(), err error) { return flockNB(path, syscall.LOCK_SH) }

// lockExclusive takes an exclusive lock on path without waiting;
// errLocked if any process holds a shared or exclusive one.
func lockExclusive(path string) (unlock func(), err error) { return flockNB(path, syscall.LOCK_EX) }

func flockNB(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, errLocked
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
