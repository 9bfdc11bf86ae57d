package pacing

import "time"

// When an origin's pause ends, the requests held for it do not all go at
// once: that burst, right after the origin asked for less, would earn
// the next 429. One request goes first, the probe; the others (and those
// that arrive meanwhile) wait for its answer, within what is left of
// MaxWait. An answer that pauses the origin again is a new pause, waited
// for (or refused) like the first; any other answer settles the origin
// and lets them all go (each still to its Crawl-delay slot). A probe
// that gets no answer (a network error, its client gone, the request
// refused before it was sent) ends without settling: the next request
// becomes the probe. In a fleet each instance sends its own probe; a
// pause any of them records holds them all.
//
// Each change of an origin's pause (pauseEntry.gen) unsettles it. A
// probe remembers the gen it last saw the origin unpaused at and only
// an answer under that same gen settles: an answer to a probe sent
// before a later pause (another request's 429 while it was in flight)
// says nothing about that pause.

// Probe is the request that goes first to its origin after a pause; its
// Permit ends it (Permit.Answered, Permit.Release).
type Probe struct {
	e    *pauseEntry
	gen  uint64
	done chan struct{} // closed when the probe ends
}

// end ends the probe, settling its origin when answered (after the
// governor observed the answer). Calls after the first do nothing.
func (pr *Probe) end(answered bool) {
	if pr == nil {
		return
	}
	pr.e.mu.Lock()
	pr.e.endProbe(pr, answered)
	pr.e.mu.Unlock()
}

// endProbe ends pr if it is e's probe in flight; e.mu is held. An answer
// under the gen the probe went with settles e.
func (e *pauseEntry) endProbe(pr *Probe, answered bool) {
	if pr == nil || e.probe != pr {
		return
	}
	e.probe = nil
	if answered && pr.gen == e.gen {
		e.unsettled = false
	}
	close(pr.done)
}

// holding is what holds a request to an origin now: its pause (paused),
// or the answer of its probe in flight (probe closed at that answer);
// else the request goes, as the origin's probe when probe is set.
type holding struct {
	pause  Pause
	paused bool
	wait   <-chan struct{}
	probe  *Probe
}

// admit tells what holds a request to origin now; mine is the probe the
// request already is (its second look, after its slot), nil when none.
// Without join only a pause holds it, and it does not become the probe.
func (g *Governor) admit(origin string, mine *Probe, join bool) holding {
	if g == nil || g.active.Load() == 0 {
		return holding{}
	}
	v, ok := g.pauses.Load(origin)
	if !ok {
		return holding{}
	}
	e := v.(*pauseEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.p.Active(g.now()):
		return holding{pause: e.p, paused: true}
	case !e.unsettled:
		return holding{}
	case mine != nil && e.probe == mine:
		mine.gen = e.gen // it goes with the origin as it sees it now
		return holding{probe: mine}
	case !join:
		return holding{}
	case e.probe != nil:
		return holding{pause: e.p, wait: e.probe.done}
	}
	e.probe = &Probe{e: e, gen: e.gen, done: make(chan struct{})}
	return holding{probe: e.probe}
}

// Holds reports whether a request to origin would be held, or sent as
// its probe, now: it is paused, or its pause ended and no probe's answer
// has settled it yet.
func (g *Governor) Holds(origin string) bool {
	if g == nil || g.active.Load() == 0 {
		return false
	}
	v, ok := g.pauses.Load(origin)
	if !ok {
		return false
	}
	e := v.(*pauseEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.unsettled || e.p.Active(g.now())
}

// AwaitsProbe returns origin's last pause when it is over but no probe's
// answer has settled the origin yet: a request now is held for that answer
// (or goes as the probe, when none is in flight). False while the pause
// is in force (Paused) and once settled.
func (g *Governor) AwaitsProbe(origin string) (Pause, bool) {
	if g == nil || g.active.Load() == 0 {
		return Pause{}, false
	}
	v, ok := g.pauses.Load(origin)
	if !ok {
		return Pause{}, false
	}
	e := v.(*pauseEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.p, e.unsettled && !e.p.Active(g.now())
}

// probeRetry is the Retry-After of a request refused because its
// origin's probe was not answered within its wait: soon, the answer is
// due.
const probeRetry = time.Second
