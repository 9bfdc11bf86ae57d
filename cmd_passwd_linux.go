package main

import "golang.org/x/sys/unix"

// echoOff turns off the echo of the terminal fd and returns what restores it.
func echoOff(fd int) (restore func(), err error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	old := *t
	t.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return nil, err
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, &old) }, nil
}
