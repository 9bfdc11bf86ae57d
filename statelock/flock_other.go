//go:build !unix

package statelock

import "os"

// tryLock has no flock to take here.
func tryLock(*os.File) (bool, error) { return false, ErrUnsupported }
