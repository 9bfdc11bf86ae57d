package admin

import (
	"sort"
	"sync"
	"time"
)

// TLSWarnEvery is how often a client's TLS failures to one host are
// logged (TLSFailures.Record).
const TLSWarnEvery = time.Minute

// maxTLSWarned bounds the client and host pairs whose last warning is
// remembered (keys of at most an address and a 253-byte host: under 4 MB).
const maxTLSWarned = 10000

// TLSFailures counts the failed handshakes of clients in intercepted
// tunnels by reason (wire.TLSFailureReason), for the status page, and
// remembers when each client and host was last logged. Its zero value is
// ready to use.
type TLSFailures struct {
	mu      sync.Mutex
	counts  map[string]int64
	warned  map[string]time.Time // client IP + " " + host
	lastErr string
}

// Record counts a failure for reason, explained by explain, of clientIP
// to host, and reports whether it should be logged now (not within
// TLSWarnEvery of the last time for that client and host).
func (f *TLSFailures) Record(reason, clientIP, host, explain string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts, f.warned = map[string]int64{}, map[string]time.Time{}
	}
	f.counts[reason]++
	f.lastErr = explain
	key := clientIP + " " + host
	if last, ok := f.warned[key]; ok && now.Sub(last) < TLSWarnEvery {
		return false
	}
	if len(f.warned) >= maxTLSWarned { // bounded: forget the old entries
		for k, t := range f.warned {
			if now.Sub(t) >= TLSWarnEvery {
				delete(f.warned, k)
			}
		}
		if len(f.warned) >= maxTLSWarned { // all recent (a flood): forget them all
			clear(f.warned)
		}
	}
	f.warned[key] = now
	return true
}

// Snapshot returns the counts by reason (largest first) and the last
// explanation.
func (f *TLSFailures) Snapshot() ([]TLSFailureCount, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]TLSFailureCount, 0, len(f.counts))
	for r, n := range f.counts {
		out = append(out, TLSFailureCount{Reason: r, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Count > out[j].Count || out[i].Count == out[j].Count && out[i].Reason < out[j].Reason
	})
	return out, f.lastErr
}
