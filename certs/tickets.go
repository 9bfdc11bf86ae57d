package certs

import (
	"crypto/rand"
	"sync"
	"time"
)

// Session ticket keys: a new key every ticketKeyRotation, tickets accepted
// under the previous ticketKeysKept-1 keys too.
const (
	ticketKeyRotation = 24 * time.Hour
	ticketKeysKept    = 2
)

// ticketKeys holds the session ticket keys shared by every tls.Config of a
// Minter. goproxy builds a config per connection, and a config left to
// itself makes its own random keys, so without sharing no ticket could ever
// be redeemed on a later connection and every new connection would need a
// full handshake.
type ticketKeys struct {
	mu      sync.Mutex
	keys    [][32]byte // newest first; never modified once published
	rotated time.Time
}

// init creates the first key.
func (t *ticketKeys) init(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys = [][32]byte{newTicketKey()}
	t.rotated = now
}

// get returns the current keys for tls.Config.SetSessionTicketKeys,
// rotating first when the newest is ticketKeyRotation old. The slice must
// not be modified.
func (t *ticketKeys) get(now time.Time) [][32]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.rotated) >= ticketKeyRotation {
		keys := make([][32]byte, 0, ticketKeysKept)
		keys = append(keys, newTicketKey())
		keys = append(keys, t.keys[:min(len(t.keys), ticketKeysKept-1)]...)
		t.keys = keys
		t.rotated = now
	}
	return t.keys
}

// newTicketKey returns 32 random bytes (crypto/rand.Read cannot fail: it
// crashes the program rather than return an error).
func newTicketKey() [32]byte {
	var k [32]byte
	_, _ = rand.Read(k[:])
	return k
}
