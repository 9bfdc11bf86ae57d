package report

import "time"

// binWidths are the widths a timeline's bins take, each a multiple of the
// one before, so that bins merge into wider ones without splitting.
var binWidths = []time.Duration{
	100 * time.Millisecond, 200 * time.Millisecond, time.Second, 2 * time.Second, 10 * time.Second,
	20 * time.Second, time.Minute, 2 * time.Minute, 10 * time.Minute, 20 * time.Minute, time.Hour,
	2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
	28 * 24 * time.Hour, 364 * 24 * time.Hour,
}

// maxBins bounds a timeline's bins: past it, they merge into wider ones.
const maxBins = 1024

// timeline counts records per bin of time, allowed, refused and other,
// in at most maxBins bins whatever the period: the bins widen as the
// period grows. Bins are aligned on multiples of their width since the
// Unix epoch.
type timeline struct {
	width int   // index into binWidths
	start int64 // index of bins[0], in units of the width since the epoch
	bins  []Bin // consecutive bins from start
	any   bool  // a record was added
}

// add counts a record at t.
func (tl *timeline) add(t time.Time, allowed, refused bool) {
	for {
		w := int64(binWidths[tl.width])
		i := floorDiv(t.UnixNano(), w)
		if !tl.any {
			tl.start, tl.bins, tl.any = i, []Bin{{}}, true
		}
		lo, hi := min(tl.start, i), max(tl.start+int64(len(tl.bins))-1, i)
		if hi-lo+1 > maxBins && tl.width+1 < len(binWidths) {
			tl.widen()
			continue
		}
		if i < tl.start {
			grown := make([]Bin, tl.start-i, int64(len(tl.bins))+tl.start-i)
			tl.bins, tl.start = append(grown, tl.bins...), i
		}
		for int64(len(tl.bins)) <= i-tl.start {
			tl.bins = append(tl.bins, Bin{})
		}
		b := &tl.bins[i-tl.start]
		switch {
		case allowed:
			b.Allowed++
		case refused:
			b.Refused++
		default:
			b.Other++
		}
		return
	}
}

// widen merges the bins into bins of the next width.
func (tl *timeline) widen() { tl.rebin(tl.width + 1) }

// rebin merges the bins into bins of binWidths[width] (not narrower).
func (tl *timeline) rebin(width int) {
	if width <= tl.width {
		return
	}
	if !tl.any {
		tl.width = width
		return
	}
	old, nw := int64(binWidths[tl.width]), int64(binWidths[width])
	start := floorDiv(tl.start*old, nw)
	end := floorDiv((tl.start+int64(len(tl.bins))-1)*old, nw)
	bins := make([]Bin, end-start+1)
	for j, b := range tl.bins {
		k := floorDiv((tl.start+int64(j))*old, nw) - start
		bins[k].Allowed += b.Allowed
		bins[k].Refused += b.Refused
		bins[k].Other += b.Other
	}
	tl.width, tl.start, tl.bins = width, start, bins
}

// state returns the timeline with at most maxShown bins (merged as
// needed), for the report.
func (tl timeline) state(maxShown int) Timeline {
	tl.bins = append([]Bin(nil), tl.bins...)
	for len(tl.bins) > maxShown && tl.width+1 < len(binWidths) {
		tl.widen()
	}
	if !tl.any {
		return Timeline{BinSeconds: binWidths[tl.width].Seconds(), Bins: []Bin{}}
	}
	w := binWidths[tl.width]
	return Timeline{
		Start:      time.Unix(0, tl.start*int64(w)).UTC(),
		BinSeconds: w.Seconds(),
		Bins:       tl.bins,
	}
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
