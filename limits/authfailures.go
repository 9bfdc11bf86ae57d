package limits

import (
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// authFailureWindow is the window auth.failure_limit counts failures in.
const authFailureWindow = time.Minute

// maxAuthTracked bounds the addresses whose failures are counted (least
// recently failed forgotten first): each entry is an address and two
// words.
const maxAuthTracked = 10000

// AuthFailures counts, per client address, the proxy credentials that
// failed (a wrong password, an unknown user) in the current window, so
// that guessing is limited to auth.failure_limit a minute an address. Its
// zero value is ready to use.
type AuthFailures struct {
	once   sync.Once
	mu     sync.Mutex
	counts *lru.Cache[netip.Addr, *failureWindow]
}

type failureWindow struct {
	start time.Time
	n     int
}

func (f *AuthFailures) init() {
	f.once.Do(func() { f.counts, _ = lru.New[netip.Addr, *failureWindow](maxAuthTracked) })
}

// Limited reports whether addr has had limit failures in the window, and
// how long until it may try again.
func (f *AuthFailures) Limited(addr netip.Addr, limit int, now time.Time) (time.Duration, bool) {
	if limit <= 0 || !addr.IsValid() {
		return 0, false
	}
	f.init()
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.counts.Peek(addr)
	if !ok || now.Sub(w.start) >= authFailureWindow || w.n < limit {
		return 0, false
	}
	return w.start.Add(authFailureWindow).Sub(now), true
}

// Failed counts a failure of addr.
func (f *AuthFailures) Failed(addr netip.Addr, now time.Time) {
	if !addr.IsValid() {
		return
	}
	f.init()
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.counts.Get(addr)
	if !ok || now.Sub(w.start) >= authFailureWindow {
		f.counts.Add(addr, &failureWindow{start: now, n: 1})
		return
	}
	w.n++
}
