//go:build unix

package cli

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path (created if absent),
// waiting for it; unlock releases it. Two processes, or two opens in one
// process, exclude each other.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
