package pacing

import (
	"context"
	"testing"
	"time"
)

// The origin must not see two requests of a key closer than the interval,
// even when the first one reaches it late (it had to open a connection
// first, here for connect): the second goes out an interval after the
// first was sent, whether that send comes before or after its own slot.
func TestGateSpacesSendsNotReleases(t *testing.T) {
	const interval = 200 * time.Millisecond
	for name, connect := range map[string]time.Duration{
		"first sent before the second's slot": 120 * time.Millisecond,
		"first sent after the second's slot":  350 * time.Millisecond,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New(Options{MaxWait: time.Minute})
			first, err := p.Acquire(context.Background(), Request{Key: "k", Interval: interval})
			if err != nil {
				t.Fatal(err)
			}
			released := make(chan time.Time, 1)
			go func() {
				second, err := p.Acquire(context.Background(), Request{Key: "k", Interval: interval})
				if err != nil {
					t.Error(err)
				}
				released <- time.Now()
				second.Release()
			}()
			time.Sleep(connect) // the first request's connection set-up
			sent := time.Now()
			first.Sent()
			first.Release()
			if gap := (<-released).Sub(sent); gap < interval {
				t.Errorf("the second request went %v after the first was sent, want >= %v", gap, interval)
			}
		})
	}
}

// A gate no request is waiting at is forgotten an interval after its last
// send, so keys do not accumulate.
func TestGatesAreForgottenWhenIdle(t *testing.T) {
	p := New(Options{MaxWait: time.Minute})
	permit, err := p.Acquire(context.Background(), Request{Key: "k", Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	permit.Release()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := p.gates.m.Load("k"); !ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Error("the idle gate is still kept after 5 s")
}
