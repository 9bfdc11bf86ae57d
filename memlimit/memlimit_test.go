package memlimit

import (
	"math"
	"runtime/debug"
	"testing"
)

// The defaults: robots.cache_bytes 256 MiB, usage.cache_bytes 64 MiB and
// the RSL cache's 16 MiB, 336 MiB in all, give 336 + 84 + 64 = 484 MiB
// (docs/configuration.md, memory_limit).
func TestAutoIsTheBoundsAQuarterMoreAndAMargin(t *testing.T) {
	for _, tc := range []struct {
		caches Caches
		want   int64
	}{
		{Caches{Robots: 256 << 20, TDMRep: 64 << 20, RSL: 16 << 20}, 484 << 20},
		{Caches{Robots: 1 << 30, TDMRep: 64 << 20, RSL: 16 << 20}, (1<<30+80<<20)*5/4 + 64<<20},
		{Caches{Robots: 1 << 20, TDMRep: 1 << 20, RSL: 16 << 20}, 18<<20 + 18<<20/4 + 64<<20},
	} {
		if got := Auto(tc.caches); got != tc.want {
			t.Errorf("Auto(%+v) = %s, want %s", tc.caches, Bytes(got), Bytes(tc.want))
		}
	}
	if Auto(Caches{Robots: 256 << 20, TDMRep: 64 << 20, RSL: 16 << 20}) != 484<<20 {
		t.Error("the documented default is not 484 MiB")
	}
}

// GOMEMLIMIT wins over the configuration, which wins over the automatic
// limit; off is no limit.
func TestDecidePrecedence(t *testing.T) {
	defaults := Caches{Robots: 256 << 20, TDMRep: 64 << 20, RSL: 16 << 20}
	running := debug.SetMemoryLimit(-1) // what the runtime has now: GOMEMLIMIT's, read at start
	for _, tc := range []struct {
		name       string
		env        string
		configured int64
		want       Decision
	}{
		{"nothing set: automatic", "", 0, Decision{484 << 20, SourceAuto}},
		{"a configured size", "", 1 << 30, Decision{1 << 30, SourceConfig}},
		{"configured off", "", -1, Decision{math.MaxInt64, SourceOff}},
		{"GOMEMLIMIT over the automatic limit", "300MiB", 0, Decision{running, SourceEnv}},
		{"GOMEMLIMIT over a configured size", "300MiB", 1 << 30, Decision{running, SourceEnv}},
		{"GOMEMLIMIT over off", "300MiB", -1, Decision{running, SourceEnv}},
	} {
		if got := Decide(tc.env, tc.configured, defaults); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Apply puts the limit in force in the runtime, except GOMEMLIMIT's,
// which the runtime set itself.
func TestApplySetsTheRuntimesLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	Apply(Decision{Limit: 484 << 20, Source: SourceAuto})
	if got := debug.SetMemoryLimit(-1); got != 484<<20 {
		t.Errorf("after Apply(auto): %s in force", Bytes(got))
	}
	Apply(Decision{Limit: math.MaxInt64, Source: SourceOff})
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("after Apply(off): %s in force", Bytes(got))
	}
	debug.SetMemoryLimit(300 << 20) // as GOMEMLIMIT=300MiB would at start
	Apply(Decision{Limit: 300 << 20, Source: SourceEnv})
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Errorf("after Apply(GOMEMLIMIT): %s in force", Bytes(got))
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[Decision]string{
		{484 << 20, SourceAuto}:      "484MiB (auto)",
		{math.MaxInt64, SourceOff}:   "none (memory_limit: off)",
		{300<<20 + 1<<19, SourceEnv}: "300.5MiB (GOMEMLIMIT)",
	} {
		if got := d.String(); got != want {
			t.Errorf("%+v: %q, want %q", d, got, want)
		}
	}
}

// Under a limit and with GOGC unset the collector's percentage is raised
// to GCPercent (the documented 400); GOGC, or no limit, leaves the
// runtime's.
func TestApplyGCRaisesThePercentageOnlyUnderALimitWithoutGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	if GCPercent != 400 {
		t.Fatalf("GCPercent = %d, the documented figure is 400", GCPercent)
	}
	for _, tc := range []struct {
		name string
		d    Decision
		gogc string
		want int
		set  bool
	}{
		{"auto limit", Decision{Limit: 484 << 20, Source: SourceAuto}, "", 400, true},
		{"GOMEMLIMIT", Decision{Limit: 700 << 20, Source: SourceEnv}, "", 400, true},
		{"GOGC set", Decision{Limit: 484 << 20, Source: SourceAuto}, "150", 100, false},
		{"no limit", Decision{Limit: math.MaxInt64, Source: SourceOff}, "", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			got, set := ApplyGC(tc.d, tc.gogc)
			running := debug.SetGCPercent(100)
			if got != tc.want || set != tc.set || running != tc.want {
				t.Errorf("ApplyGC = %d, %v; runtime has %d; want %d, %v", got, set, running, tc.want, tc.set)
			}
		})
	}
}
