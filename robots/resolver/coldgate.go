package resolver

import (
	"context"
	"errors"
)

// ColdGate bounds the cold lookups one caller may have in flight (lookups
// that wait for a fetch): a client that asks for thousands of new origins
// at once must not start thousands of fetches. Acquire waits for a place
// (as long as its context allows) and returns the function that gives it
// back, or an error wrapping ErrColdLimit.
type ColdGate interface {
	Acquire(ctx context.Context) (release func(), err error)
}

// ErrColdLimit is the error of a lookup that found no place in its
// caller's ColdGate in time.
var ErrColdLimit = errors.New("too many lookups of uncached origins in flight for this client")

type coldGateKey struct{}

// WithColdGate returns a context whose lookups of uncached origins (by
// Resolve, and by caches built on the resolver such as doccache's) pass g
// first.
func WithColdGate(ctx context.Context, g ColdGate) context.Context {
	return context.WithValue(ctx, coldGateKey{}, g)
}

// ColdGateOf returns ctx's ColdGate (WithColdGate), nil when it has none:
// for work a request's lookups lead to later, under another context (the
// RSL licences its response names), that must pass the same gate.
func ColdGateOf(ctx context.Context) ColdGate {
	g, _ := ctx.Value(coldGateKey{}).(ColdGate)
	return g
}

// enterCold passes ctx's ColdGate, if any, for a lookup that must wait for
// a fetch.
func enterCold(ctx context.Context) (release func(), err error) {
	g, ok := ctx.Value(coldGateKey{}).(ColdGate)
	if !ok {
		return func() {}, nil
	}
	return g.Acquire(ctx)
}

// EnterCold passes ctx's ColdGate, if any, for a lookup that must wait
// for a fetch (for caches built on the resolver).
func EnterCold(ctx context.Context) (release func(), err error) { return enterCold(ctx) }
