package listener

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// logSignal is a slog handler that signals each record whose message
// contains a word, so that a test waits for what the listener logged
// rather than for time to pass.
type logSignal struct {
	words map[string]chan struct{} // written before the listener logs, then only read
}

func newLogSignal(words ...string) *logSignal {
	l := &logSignal{words: map[string]chan struct{}{}}
	for _, w := range words {
		l.words[w] = make(chan struct{}, 64)
	}
	return l
}

func (l *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSignal) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logSignal) WithGroup(string) slog.Handler            { return l }
func (l *logSignal) Handle(_ context.Context, r slog.Record) error {
	for w, ch := range l.words {
		if strings.Contains(r.Message, w) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// wait waits for a record containing word.
func (l *logSignal) wait(t *testing.T, word string) {
	t.Helper()
	select {
	case <-l.words[word]:
	case <-time.After(10 * time.Second):
		t.Fatalf("no log line saying %q within 10s", word)
	}
}

func listen(t *testing.T, opts Options) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(ln, opts)
	t.Cleanup(func() { l.Close() })
	return l
}

// dialFrom connects to l from the loopback address src.
func dialFrom(t *testing.T, l *Listener, src string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// acceptOne accepts the next connection admitted, in the background.
func acceptOne(l *Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

func got(t *testing.T, ch <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("Accept failed")
		}
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("Accept returned nothing within 10s")
	}
	return nil
}

// closedByServer reports whether the server closed c (EOF or a reset),
// waiting at most 5s.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// A connection beyond max_per_listener is closed at once and counted;
// once a connection closes, its place is taken by the next one.
func TestConnectionsBeyondTheListenerCapAreClosed(t *testing.T) {
	l := listen(t, Options{What: "test", MaxConns: 2})
	var kept []net.Conn
	for range 2 {
		ch := acceptOne(l)
		dialFrom(t, l, "127.0.0.1")
		kept = append(kept, got(t, ch))
	}
	ch := acceptOne(l)
	over := dialFrom(t, l, "127.0.0.1")
	if !closedByServer(over) {
		t.Fatal("the third connection was not closed")
	}
	if s := l.Stats(); s.OverListenerCap != 1 || s.Open != 2 {
		t.Errorf("stats %+v, want 1 over the listener's cap and 2 open", s)
	}
	kept[0].Close()
	kept[0].Close() // twice: its place is given back once
	dialFrom(t, l, "127.0.0.1")
	got(t, ch)
	if s := l.Stats(); s.Open != 2 || s.OverListenerCap != 1 {
		t.Errorf("stats %+v after one closed and one more came, want 2 open", s)
	}
}

// max_per_client caps each client address on its own: a second client
// is served while the first one is at its cap.
func TestConnectionsBeyondAClientsCapAreClosed(t *testing.T) {
	l := listen(t, Options{What: "test", MaxPerClient: 2})
	for range 2 {
		ch := acceptOne(l)
		dialFrom(t, l, "127.0.0.2")
		got(t, ch)
	}
	ch := acceptOne(l)
	if over := dialFrom(t, l, "127.0.0.2"); !closedByServer(over) {
		t.Fatal("the client's third connection was not closed")
	}
	other := dialFrom(t, l, "127.0.0.1")
	c := got(t, ch)
	if c.RemoteAddr().String() != other.LocalAddr().String() {
		t.Errorf("accepted %s, want the other client's %s", c.RemoteAddr(), other.LocalAddr())
	}
	if s := l.Stats(); s.OverClientCap != 1 || s.Open != 3 {
		t.Errorf("stats %+v, want 1 over the client's cap and 3 open", s)
	}
}

// IPv6 clients are counted by /64.
func TestClientKeyIsTheIPv6Slash64(t *testing.T) {
	a := clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 1})
	b := clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9"), Port: 2})
	c := clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 2})
	if a != b || a == c {
		t.Errorf("keys %v %v %v: want the first two equal (one /64), the third apart", a, b, c)
	}
	if v4 := clientKey(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 1}); v4.String() != "192.0.2.1" {
		t.Errorf("a mapped IPv4 client is counted as %v", v4)
	}
}

// Close ends an Accept waiting in its backoff, and Accept returns
// net.ErrClosed after Close.
func TestAcceptAfterCloseReturnsErrClosed(t *testing.T) {
	l := listen(t, Options{What: "test"})
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if l.Err() != nil {
		t.Errorf("a closed listener reports %v", l.Err())
	}
}

// failingListener's Accept fails with its error until told to stop; it
// stands for the kernel's answer, which tests cannot order at will.
type failingListener struct {
	net.Listener
	mu   sync.Mutex
	err  error
	left int
}

func (f *failingListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	if f.left > 0 {
		f.left--
		err := f.err
		f.mu.Unlock()
		return nil, err
	}
	f.mu.Unlock()
	return f.Listener.Accept()
}

// An error retrying cannot mend stops the listener: Accept returns it,
// and Err says so from then on.
func TestAPermanentErrorStopsTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	perm := &net.OpError{Op: "accept", Net: "tcp", Err: errors.New("invalid argument")}
	l := New(&failingListener{Listener: ln, err: perm, left: 1}, Options{What: "the test listener", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, err := l.Accept(); !errors.Is(err, perm.Err) {
		t.Fatalf("Accept: %v, want the permanent error", err)
	}
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "the test listener has stopped") {
		t.Errorf("Err after a permanent error: %v", err)
	}
	if s := l.Stats(); s.Accepting || s.AcceptErrors != 1 {
		t.Errorf("stats %+v, want not accepting, 1 error", s)
	}
}

func TestFitLowersCapsToTheDescriptorLimit(t *testing.T) {
	cases := []struct {
		name   string
		want   Caps
		n      int
		limit  uint64
		caps   Caps
		fitted bool
	}{
		{"fits", Caps{4096, 256}, 3, 1 << 20, Caps{4096, 256}, false},
		{"limit unknown", Caps{4096, 256}, 3, 0, Caps{4096, 256}, false},
		{"no cap chosen", Caps{0, 0}, 3, 512, Caps{0, 0}, false},
		// (512 - 128) / (3 listeners × 2 descriptors) = 64; a quarter per client.
		{"ulimit -n 512", Caps{4096, 256}, 3, 512, Caps{64, 16}, true},
		{"client cap already lower", Caps{4096, 8}, 3, 512, Caps{64, 8}, true},
		{"no client cap", Caps{4096, 0}, 3, 512, Caps{64, 16}, true},
		{"nothing left", Caps{4096, 256}, 3, 100, Caps{1, 1}, true},
		// docs/operations.md: the defaults with two listeners need 16,512.
		{"the defaults' budget", Caps{4096, 256}, 2, 16512, Caps{4096, 256}, false},
		{"one descriptor short", Caps{4096, 256}, 2, 16511, Caps{4095, 256}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caps, fitted := Fit(c.want, c.n, c.limit)
			if caps != c.caps || fitted != c.fitted {
				t.Errorf("Fit(%+v, %d, %d) = %+v, %v; want %+v, %v", c.want, c.n, c.limit, caps, fitted, c.caps, c.fitted)
			}
		})
	}
}

// The backoff of a failing Accept is net/http's: 5 ms, doubling, at most
// 1 s.
func TestAcceptBackoffIsNetHTTPs(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 10 {
		d = nextDelay(d)
		got = append(got, d)
	}
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
		80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("backoff %v, want %v", got, want)
	}
}
