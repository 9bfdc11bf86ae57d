package wire

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A connection hijacked from net/http's server hands its new owner what the
// server had read ahead first (else those bytes of a WebSocket would be
// lost), then the connection's own, and counts what is written to it (the
// audit record's bytes of a WebSocket).
func TestHijackedReplaysReadAheadAndCountsWrites(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	raw, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	deadline := time.Now().Add(5 * time.Second)
	client.SetDeadline(deadline)
	raw.SetDeadline(deadline)

	if _, err := io.WriteString(client, "GET-then-frames"); err != nil {
		t.Fatal(err)
	}
	// The server's reader has read past what it used: "GET" used,
	// "-then-frames" buffered.
	brw := bufio.NewReadWriter(bufio.NewReader(raw), bufio.NewWriter(raw))
	if _, err := brw.Peek(len("GET-then-frames")); err != nil {
		t.Fatal(err)
	}
	brw.Discard(len("GET"))

	var written atomic.Int64
	c := Hijacked(raw, brw, &written)
	if _, err := io.WriteString(client, "+more"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("-then-frames+more"))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %q: %v", got, err)
	}
	if string(got) != "-then-frames+more" {
		t.Errorf("the new owner read %q, want the read-ahead bytes first: %q", got, "-then-frames+more")
	}

	for _, s := range []string{"hello", ", world"} {
		if _, err := io.WriteString(c, s); err != nil {
			t.Fatal(err)
		}
	}
	if n := written.Load(); n != int64(len("hello, world")) {
		t.Errorf("counted %d bytes written, want %d", n, len("hello, world"))
	}
	echo := make([]byte, len("hello, world"))
	if _, err := io.ReadFull(client, echo); err != nil || string(echo) != "hello, world" {
		t.Errorf("the client read %q (%v), want %q", echo, err, "hello, world")
	}
}
