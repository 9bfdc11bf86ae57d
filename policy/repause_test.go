package policy

import (
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
)

// Repause refuses (OriginPaused, with the time left) a request Pace let
// go when its origin was paused since; a request pauses do not apply to
// (a monitor client's, a client set to ignore them, robots.txt itself),
// or one to an origin not paused, goes on.
func TestRepauseRefusesWhatAPauseSinceWouldHold(t *testing.T) {
	g := pacing.NewGovernor(pacing.BackoffParams{}, pacing.AdaptiveParams{}, pacing.GovernorOptions{})
	e, err := New(Config{Governor: g})
	if err != nil {
		t.Fatal(err)
	}
	paused, err := origin.Parse("http://paused.example/")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := origin.Parse("http://other.example/")
	allowed := func(o origin.Origin, target string, c Client) *Decision {
		return &Decision{Verdict: Allow, Request: Request{Origin: o, Target: target, Client: c}}
	}
	if d := allowed(paused, "/page", Client{}); e.Repause(d) || d.Verdict != Allow {
		t.Fatalf("no origin paused: %v", d.Verdict)
	}
	now := time.Now()
	g.Apply(paused.String(), pacing.Pause{Until: now.Add(time.Minute), Status: 429, RetryAfter: "60", At: now})
	for _, tc := range []struct {
		name    string
		d       *Decision
		refused bool
	}{
		{"a request to the paused origin", allowed(paused, "/page", Client{}), true},
		{"its robots.txt", allowed(paused, "/robots.txt", Client{}), false},
		{"a monitor client's request", allowed(paused, "/page", Client{Mode: Monitor}), false},
		{"a client set to ignore pauses", allowed(paused, "/page", Client{IgnoreBackoff: true}), false},
		{"a request to another origin", allowed(other, "/page", Client{}), false},
	} {
		if got := e.Repause(tc.d); got != tc.refused || (tc.d.Verdict == OriginPaused) != tc.refused {
			t.Errorf("%s: Repause %v, verdict %v; want refused %v", tc.name, got, tc.d.Verdict, tc.refused)
		}
		if tc.refused && (tc.d.Pause == nil || tc.d.RetryAfter < 59*time.Second || tc.d.RetryAfter > 60*time.Second) {
			t.Errorf("%s: pause %v, Retry-After %v; want the pause and about 60 s", tc.name, tc.d.Pause, tc.d.RetryAfter)
		}
	}
}
