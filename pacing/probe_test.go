package pacing

import (
	"context"
	"errors"
	"testing"
	"time"
)

// After a pause one request is the probe and the others wait for its
// answer: a success (an answer that starts no new pause) lets them go, a
// new pause holds them for it, a probe that ends unanswered hands over to
// the next request, clearing the origin lets them go; a request taking
// its second look after its Crawl-delay slot waits for a pause only. On
// the settable clock: each step is what the governor tells a request
// now.
func TestAfterAPauseOneProbeGoesFirst(t *testing.T) {
	const origin = "https://a.example"
	type step struct {
		do   string // take, again (the look after a slot), answer, drop, pause, other (a 503 to another request), advance, clear, released, waiting, holds, settled
		name string // the request (take, answer, drop, again, released, waiting)
		want string // take, again: probe, wait, go, paused
		d    time.Duration
	}
	take := func(name, want string) step { return step{do: "take", name: name, want: want} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"no pause: no probe", []step{take("a", "go"), take("b", "go"), {do: "settled"}}},
		{"held while paused", []step{{do: "pause"}, take("a", "paused"), {do: "holds"}}},
		{"a success lets the followers go", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), take("b", "wait"), take("c", "wait"), {do: "holds"},
			{do: "answer", name: "a"},
			{do: "released", name: "b"}, {do: "released", name: "c"},
			take("b", "go"), take("c", "go"), take("d", "go"), {do: "settled"},
		}},
		{"a pausing answer holds the followers for the new pause", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), take("b", "wait"),
			{do: "pause"}, {do: "answer", name: "a"}, // the probe's 429, observed before Answered
			{do: "released", name: "b"}, take("b", "paused"), {do: "holds"},
			{do: "advance", d: 2 * time.Second},
			take("b", "probe"), take("c", "wait"), // one probe again after the new pause
			{do: "answer", name: "b"}, {do: "released", name: "c"}, take("c", "go"), {do: "settled"},
		}},
		{"an unanswered probe hands over to the next request", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), take("b", "wait"), take("c", "wait"),
			{do: "drop", name: "a"},
			{do: "released", name: "b"}, {do: "released", name: "c"},
			take("b", "probe"), take("c", "wait"), {do: "waiting", name: "c"},
			{do: "answer", name: "a"}, {do: "waiting", name: "c"}, // the old probe's late word counts for nothing
			{do: "answer", name: "b"}, {do: "released", name: "c"}, take("c", "go"),
		}},
		{"a pause begun while the probe was out is not settled by its answer", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), take("b", "wait"),
			{do: "other"}, {do: "answer", name: "a"}, // a request sent before the probe got 503
			{do: "released", name: "b"}, take("b", "paused"),
			{do: "advance", d: 2 * time.Second}, take("b", "probe"),
		}},
		{"a probe held again by a new pause goes with the origin as it then is", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), take("b", "wait"),
			{do: "other"}, {do: "again", name: "a", want: "paused"}, {do: "waiting", name: "b"},
			{do: "advance", d: 2 * time.Second}, {do: "again", name: "a", want: "probe"},
			{do: "answer", name: "a"}, {do: "released", name: "b"}, take("b", "go"), {do: "settled"},
		}},
		{"after its slot a request waits for a new pause, not for the probe", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), {do: "again", name: "b", want: "go"},
			{do: "other"}, {do: "again", name: "b", want: "paused"},
		}},
		{"clearing the origin lets the followers go", []step{
			{do: "pause"}, {do: "advance", d: 2 * time.Second},
			take("a", "probe"), take("b", "wait"),
			{do: "clear"}, {do: "released", name: "b"}, take("b", "go"), {do: "settled"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, clock := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
			held := map[string]holding{}
			probes := map[string]*Probe{} // the probe each request became
			for i, s := range tt.steps {
				switch s.do {
				case "take", "again":
					var mine *Probe
					if s.do == "again" {
						mine = probes[s.name]
					}
					h := g.admit(origin, mine, s.do == "take")
					held[s.name] = h
					if h.probe != nil {
						probes[s.name] = h.probe
					}
					got := "go"
					switch {
					case h.paused:
						got = "paused"
					case h.wait != nil:
						got = "wait"
					case h.probe != nil:
						got = "probe"
					}
					if got != s.want {
						t.Fatalf("step %d: %s %s: %s, want %s", i, s.do, s.name, got, s.want)
					}
				case "answer":
					probes[s.name].end(true)
				case "drop":
					probes[s.name].end(false)
				case "pause":
					g.Observe(context.Background(), origin, Answer{Status: 429, RetryAfter: "1"})
				case "other":
					g.Observe(context.Background(), origin, Answer{Status: 503, RetryAfter: "1"})
				case "advance":
					clock.Advance(s.d)
				case "clear":
					_ = g.Clear(context.Background(), origin)
				case "released", "waiting":
					select {
					case <-held[s.name].wait:
						if s.do == "waiting" {
							t.Fatalf("step %d: %s no longer waits for the probe", i, s.name)
						}
					default:
						if s.do == "released" {
							t.Fatalf("step %d: %s still waits for the probe", i, s.name)
						}
					}
				case "holds", "settled":
					if got := g.Holds(origin); got != (s.do == "holds") {
						t.Fatalf("step %d: Holds %v", i, got)
					}
				}
			}
		})
	}
}

// Through the Pacer on the real clock: the requests held by a 200 ms
// pause do not all go when it ends: one does, the others only once it
// answered (Permit.Answered) and with the wait counted as paused; a
// follower whose max_wait ends before the answer is refused with a
// *PausedError that says so (Retry-After 1 s); an unanswered probe
// (Release) lets exactly one other go first. Timings have 150 ms of
// slack for a loaded machine.
func TestPacerSendsOneProbeAfterAPause(t *testing.T) {
	const (
		origin  = "https://a.example"
		pause   = 200 * time.Millisecond
		window  = 150 * time.Millisecond // how long "not let through" is watched
		holders = 3
	)
	type result struct {
		permit Permit
		err    error
		at     time.Time
	}
	tests := []struct {
		name     string
		maxWait  time.Duration
		end      func(Permit) // what becomes of the probe
		wantNext int          // requests let through right after it ended
		refused  bool         // the followers are refused instead
	}{
		{"answered: all followers go", 5 * time.Second, Permit.Answered, holders, false},
		{"unanswered: one follower probes next", 5 * time.Second, Permit.Release, 1, false},
		{"no answer within max_wait: followers refused", pause + window, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGovernor(testBackoff(), AdaptiveParams{}, GovernorOptions{})
			g.Apply(origin, Pause{Until: time.Now().Add(pause), Status: 429, At: time.Now()})
			p := New(Options{MaxWait: tt.maxWait, Governor: g})
			results := make(chan result, holders+1)
			for range holders + 1 {
				go func() {
					permit, err := p.Acquire(context.Background(), Request{Key: origin + " *", PauseKey: origin})
					results <- result{permit, err, time.Now()}
				}()
			}
			probe := <-results
			if probe.err != nil || probe.permit.probe == nil || probe.permit.Paused < pause-gapSlack {
				t.Fatalf("first let through: %+v, want the probe, held for the pause", probe)
			}
			if tt.refused {
				for range holders {
					r := <-results
					var paused *PausedError
					if !errors.As(r.err, &paused) || !paused.Probing || paused.RetryAfter != time.Second {
						t.Errorf("follower: %v, want a *PausedError waiting for the probe, Retry-After 1s", r.err)
					}
					if took := r.at.Sub(probe.at); took < window-gapSlack {
						t.Errorf("follower refused %v after the probe went, want after max_wait", took)
					}
				}
				probe.permit.Release()
				return
			}
			select {
			case r := <-results:
				t.Fatalf("a follower went %v after the probe, before its answer (%v)", r.at.Sub(probe.at), r.err)
			case <-time.After(window):
			}
			tt.end(probe.permit)
			for i := range tt.wantNext {
				r := <-results
				if r.err != nil || r.permit.Paused < pause+window-gapSlack || r.permit.Pause.Status != 429 {
					t.Fatalf("follower %d: %v, paused %v (%+v), want held for the pause and the probe", i, r.err, r.permit.Paused, r.permit.Pause)
				}
				defer r.permit.Release()
				if tt.wantNext == 1 {
					if r.permit.probe == nil {
						t.Fatal("the follower let through after an unanswered probe is not the probe")
					}
					select {
					case r := <-results:
						t.Fatalf("another follower went before the new probe's answer (%v)", r.err)
					case <-time.After(window):
					}
					r.permit.Answered()
					for range holders - 1 {
						if r := <-results; r.err != nil {
							t.Fatal(r.err)
						}
					}
				}
			}
		})
	}
}

// A paced request that holds the origin's only concurrency permit
// (pacing.max_concurrency 1) while it sleeps for its slot, when a pause
// begins and ends meanwhile, goes at its slot: it does not wait for the
// probe, which waits for its permit (a standstill until max_wait). Then
// the probe goes once it gave the permit back.
func TestPacedRequestHoldingAPermitDoesNotWaitForTheProbe(t *testing.T) {
	const origin = "https://a.example"
	g := NewGovernor(testBackoff(), AdaptiveParams{}, GovernorOptions{})
	store := &notifyStore{Store: NewMemory(MemoryOptions{}), reserved: make(chan Reservation, 4)}
	p := New(Options{MaxWait: 2 * time.Second, Governor: g, Store: store, MaxConcurrency: 1})
	req := Request{Key: origin + " *", Interval: 300 * time.Millisecond, Origin: origin, PauseKey: origin}
	first, err := p.Acquire(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	<-store.reserved
	first.Release() // sent now: the next slot is 300 ms away
	type result struct {
		permit Permit
		err    error
	}
	paced, probe := make(chan result, 1), make(chan result, 1)
	start := time.Now()
	go func() {
		permit, err := p.Acquire(context.Background(), req)
		paced <- result{permit, err}
	}()
	<-store.reserved // it holds the permit and sleeps for its slot
	g.Apply(origin, Pause{Until: time.Now().Add(100 * time.Millisecond), Status: 503, At: time.Now()})
	go func() {
		permit, err := p.Acquire(context.Background(), req)
		probe <- result{permit, err}
	}()
	r := <-paced
	if r.err != nil || time.Since(start) > time.Second {
		t.Fatalf("the paced request: %v after %v, want let through at its slot (300ms)", r.err, time.Since(start))
	}
	r.permit.Sent()
	r.permit.Release()
	if pr := <-probe; pr.err != nil || pr.permit.probe == nil {
		t.Fatalf("the request after the pause: %v, probe %v; want the probe", pr.err, pr.permit.probe != nil)
	} else {
		pr.permit.Release()
	}
}
