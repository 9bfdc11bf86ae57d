package limits

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// usage.license_fetches_per_origin: at most limit fetches from an origin
// within the window; a reservation given back frees its place, and the
// window's end frees them all; another origin has its own count.
func TestOriginWindowCountsFetchesPerOriginAndMinute(t *testing.T) {
	var w OriginWindow
	a, b := origin.Origin{Scheme: "https", Host: "a.example", Port: 443}, origin.Origin{Scheme: "https", Host: "b.example", Port: 443}
	now := time.Now()
	if _, ok := w.Take(a, 2, now); !ok {
		t.Fatal("first fetch refused")
	}
	give, ok := w.Take(a, 2, now.Add(time.Second))
	if !ok {
		t.Fatal("second fetch refused")
	}
	if _, ok := w.Take(a, 2, now.Add(2*time.Second)); ok {
		t.Fatal("third fetch within the window allowed")
	}
	if _, ok := w.Take(b, 2, now.Add(2*time.Second)); !ok {
		t.Fatal("another origin's first fetch refused")
	}
	give()
	if _, ok := w.Take(a, 2, now.Add(3*time.Second)); !ok {
		t.Fatal("a fetch after a reservation was given back refused")
	}
	if _, ok := w.Take(a, 2, now.Add(OriginWindowLength)); !ok {
		t.Fatal("a fetch once the first left the window refused")
	}
}

// auth.failure_limit: an address with limit failures in the window is
// limited until the window ends; an invalid address or no limit never is.
func TestAuthFailuresLimitAnAddressForTheRestOfTheWindow(t *testing.T) {
	var f AuthFailures
	addr, other := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	now := time.Now()
	for i := range 3 {
		if _, limited := f.Limited(addr, 3, now); limited {
			t.Fatalf("limited after %d failures of 3", i)
		}
		f.Failed(addr, now.Add(time.Duration(i)*time.Second))
	}
	wait, limited := f.Limited(addr, 3, now.Add(10*time.Second))
	if !limited || wait != authFailureWindow-10*time.Second {
		t.Errorf("after 3 failures: limited %v for %v, want %v", limited, wait, authFailureWindow-10*time.Second)
	}
	if _, limited := f.Limited(other, 3, now); limited {
		t.Error("another address is limited")
	}
	if _, limited := f.Limited(addr, 0, now); limited {
		t.Error("limited without a limit")
	}
	if _, limited := f.Limited(addr, 3, now.Add(authFailureWindow)); limited {
		t.Error("still limited once the window ended")
	}
}

// robots.cold_fetches_per_client: at most limit cold lookups of one
// client at once; the next waits for a place, at most wait, then fails
// with resolver.ErrColdLimit; no bound, or no address, is no gate.
func TestColdGatesBoundAClientsLookupsAtOnce(t *testing.T) {
	var g ColdGates
	addr := netip.MustParseAddr("192.0.2.1")
	if g.Gate(addr, 0, time.Second) != nil || g.Gate(netip.Addr{}, 1, time.Second) != nil {
		t.Fatal("a gate without a bound or an address")
	}
	gate := g.Gate(addr, 1, 50*time.Millisecond)
	release, err := gate.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Acquire(context.Background()); !errors.Is(err, resolver.ErrColdLimit) {
		t.Fatalf("second lookup at once: %v, want ErrColdLimit", err)
	}
	freed := make(chan error)
	go func() {
		r, err := g.Gate(addr, 1, time.Minute).Acquire(context.Background())
		if err == nil {
			r()
		}
		freed <- err
	}()
	release()
	if err := <-freed; err != nil {
		t.Fatalf("a lookup waiting for a place: %v", err)
	}
	if n := len(g.clients); n != 0 {
		t.Errorf("%d clients kept with no lookup in flight", n)
	}
}
