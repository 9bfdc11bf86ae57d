package admin

import (
	"fmt"
	"testing"
	"time"
)

// The pairs of client and host remembered for rate-limiting warnings stay
// bounded even when all of them are recent (a flood of handshakes from
// many addresses to many names).
func TestTLSWarningsRememberBoundedPairs(t *testing.T) {
	var f TLSFailures
	now := time.Now()
	for i := range 3 * maxTLSWarned {
		f.Record("unknown_ca", fmt.Sprintf("10.0.%d.%d", i/256, i%256), fmt.Sprintf("h%d.example", i), "", now)
		if len(f.warned) > maxTLSWarned {
			t.Fatalf("%d pairs remembered after %d failures, bound %d", len(f.warned), i+1, maxTLSWarned)
		}
	}
}
