//go:build unix

package statelock

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting; held says
// another open file description holds it.
func tryLock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
