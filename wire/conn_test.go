package wire

import (
	"errors"
	"net"
	"testing"
	"time"
)

// An idleConn stays open while traffic flows for longer than its timeout,
// and cuts a silent peer off between 15/16 of the timeout and a bound.
func TestIdleConnCutsOffOnlySilence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	raw, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 800 * time.Millisecond
	c := newIdleConn(raw, timeout)
	defer c.Close()

	buf := make([]byte, 1)
	start := time.Now()
	for time.Since(start) < 3*timeout {
		time.Sleep(timeout / 8) // the peer's pace: well inside the timeout
		if _, err := peer.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("read %v after the start, with traffic every %v: %v", time.Since(start), timeout/8, err)
		}
	}
	last := time.Now()
	_, err = c.Read(buf)
	silent := time.Since(last)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read from a silent peer: %v, want a timeout", err)
	}
	if silent < timeout*15/16 || silent > timeout+5*time.Second {
		t.Errorf("cut off after %v of silence, want between %v and about %v", silent, timeout*15/16, timeout)
	}
}
