// Package memlimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) from the byte bounds of robotsgate's caches, so
// that the process stays near what they keep instead of the twice that
// Go's collector lets the heap reach by default (GOGC=100: the heap grows
// to twice what is live before a collection). GOMEMLIMIT, when set, wins,
// as for any Go program; the configuration's memory_limit comes next.
//
// The limit is soft: the collector works harder as the heap nears it, and
// never lets that cost more than about half the CPU; the process can
// exceed it rather than stall.
package memlimit

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
)

// Margin is added to the caches' bounds and a quarter of them: the rest
// of the process (connections and their buffers, the status page's
// tables, the pacing schedule and pauses, leaf certificates, goroutines)
// and room for the collector to work without running all the time.
const Margin = 64 << 20

// Sources of a Decision.
const (
	// SourceEnv: GOMEMLIMIT, which the runtime read at start.
	SourceEnv = "GOMEMLIMIT"
	// SourceConfig: the configuration's memory_limit, a size.
	SourceConfig = "memory_limit"
	// SourceOff: memory_limit: off, no limit.
	SourceOff = "memory_limit: off"
	// SourceAuto: computed from the caches' bounds (Auto).
	SourceAuto = "auto"
)

// Caches are the byte bounds the automatic limit is computed from.
type Caches struct {
	// Robots is robots.cache_bytes, TDMRep usage.cache_bytes, RSL the RSL
	// licence cache's fixed bound.
	Robots, TDMRep, RSL int64
}

// Total is the sum of the bounds.
func (c Caches) Total() int64 { return c.Robots + c.TDMRep + c.RSL }

// Auto is the automatic limit for c: their bounds, a quarter more, and
// Margin.
func Auto(c Caches) int64 {
	t := c.Total()
	return t + t/4 + Margin
}

// Decision is the limit in force and where it comes from.
type Decision struct {
	// Limit is the soft limit in bytes; math.MaxInt64 means none.
	Limit int64
	// Source is one of the Source constants.
	Source string
}

// Decide picks the limit: GOMEMLIMIT when env holds one (env is the
// variable's value, "" when unset), else configured (> 0: a size; < 0:
// off; 0: automatic), else Auto(c).
func Decide(env string, configured int64, c Caches) Decision {
	switch {
	case env != "":
		return Decision{Limit: debug.SetMemoryLimit(-1), Source: SourceEnv}
	case configured < 0:
		return Decision{Limit: math.MaxInt64, Source: SourceOff}
	case configured > 0:
		return Decision{Limit: configured, Source: SourceConfig}
	}
	return Decision{Limit: Auto(c), Source: SourceAuto}
}

// Apply puts d in force (GOMEMLIMIT's is already) and returns the limit
// the runtime had before.
func Apply(d Decision) int64 {
	if d.Source == SourceEnv {
		return debug.SetMemoryLimit(-1)
	}
	return debug.SetMemoryLimit(d.Limit)
}

// GCPercent is the collector's percentage (GOGC) while a soft limit is
// in force and GOGC is not set: the heap may grow to five times what is
// live before a collection, where Go's default lets it grow to twice, and
// never past the limit, which decides once it is nearer. A proxy keeps
// little between requests (3 MB live under load) and allocates for each,
// so at the default the collector ran 18 times a second under 6,000
// requests/s, and its marking, assists and write barriers took about a
// tenth of the CPU; at 400 robotsgate needed 5–13 % less CPU per request
// for 12–20 MiB more peak RSS (docs/benchmarks.md, "The net/http floor").
// A heap that fills its caches meets the limit first, so its peak is the
// limit's, as before.
const GCPercent = 400

// ApplyGC sets the collector's percentage to GCPercent when d is a limit
// and gogc (GOGC's value, "" when unset) is empty; it returns the
// percentage in force and whether it set it. Without a limit the heap
// would have nothing but GOGC to bound it, so Go's default stays.
func ApplyGC(d Decision, gogc string) (percent int, set bool) {
	if gogc != "" || d.Limit == math.MaxInt64 {
		old := debug.SetGCPercent(100) // read it back: there is no getter
		debug.SetGCPercent(old)
		return old, false
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent, true
}

// String says the limit and its source, for the start-up log.
func (d Decision) String() string {
	if d.Limit == math.MaxInt64 {
		return "none (" + d.Source + ")"
	}
	return fmt.Sprintf("%s (%s)", Bytes(d.Limit), d.Source)
}

// Bytes formats n in MiB with one decimal when not whole ("484MiB",
// "300.5MiB"), in bytes below 1 MiB.
func Bytes(n int64) string {
	if n < 1<<20 {
		return strconv.FormatInt(n, 10) + "B"
	}
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + "MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB"
}
