package upstream

import (
	"context"
	"net"
	"testing"
	"time"
)

// notAnsweredWatch is how long a test watches that IsOwn keeps waiting:
// a negative property, with no event to end the watch early.
const notAnsweredWatch = 100 * time.Millisecond

// A connection that comes back to robotsgate can be accepted before the
// dial that made it returns: IsOwn waits for the dials to its destination
// and then knows it, while a client's connection is not taken for one of
// robotsgate's own, and a closed connection is forgotten.
func TestOwnConnectionsAreKnownEvenBeforeTheirDialReturns(t *testing.T) {
	o := NewOwnConns()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dest := addrPort(ln.Addr().String())
	release := make(chan struct{})
	dial := o.Wrap(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		<-release // connected, but the dial has not returned yet
		return c, err
	})
	dialed := make(chan net.Conn, 1)
	go func() {
		c, err := dial(context.Background(), "tcp", dest.String())
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	looped, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer looped.Close()
	answer := make(chan bool, 1)
	go func() { answer <- o.IsOwn(addrPort(looped.RemoteAddr().String()), dest) }()
	select {
	case v := <-answer:
		t.Fatalf("IsOwn answered %v before the dial returned", v)
	case <-time.After(notAnsweredWatch):
	}
	close(release)
	if !<-answer {
		t.Fatal("robotsgate's own connection was not recognised")
	}

	client, err := net.Dial("tcp", dest.String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if o.IsOwn(addrPort(client.LocalAddr().String()), dest) {
		t.Error("a client's connection was taken for robotsgate's own")
	}
	own := <-dialed
	local := addrPort(own.LocalAddr().String())
	own.Close()
	own.Close()
	if o.IsOwn(local, dest) || len(o.local) != 0 {
		t.Errorf("a closed connection is still known: %v", o.local)
	}
}
