package robots

import (
	"slices"
	"testing"
	"time"
)

// A group's Visit-time lines are its own (merged like its other lines),
// in file order, and lines that do not read as HHMM-HHMM are dropped.
func TestVisitTimesBelongToTheirGroup(t *testing.T) {
	f := Parse([]byte(`User-agent: a
Visit-time: 0600-0845
Disallow: /x
Visit-time: 2200 - 0130 UTC

User-agent: b
Visit-time: 0900-1700
Visit-time: 9-17
Visit-time: 0900-0900
Visit-time: 0960-1000
Disallow:

User-agent: *
Disallow:
`))
	tests := []struct {
		agent string
		want  []string
		lines []int
	}{
		{"a", []string{"0600-0845", "2200-0130"}, []int{2, 4}},
		{"b", []string{"0900-1700"}, []int{7}},
		{"other", nil, nil},
	}
	for _, tt := range tests {
		var got []string
		var lines []int
		for _, w := range f.Group(tt.agent).VisitTimes() {
			got, lines = append(got, w.String()), append(lines, w.Line)
		}
		if !slices.Equal(got, tt.want) || !slices.Equal(lines, tt.lines) {
			t.Errorf("%s: VisitTimes %v at lines %v, want %v at %v", tt.agent, got, lines, tt.want, tt.lines)
		}
	}
}

// Open says whether a moment is inside a window and, when not, how long
// until the next window starts, across midnight too; the start is
// included, the end excluded. Expectations are worked out by hand.
func TestVisitWindowsOpen(t *testing.T) {
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	morning := VisitWindows{{Start: 6 * time.Hour, End: 8*time.Hour + 45*time.Minute}}
	night := VisitWindows{{Start: 22 * time.Hour, End: 90 * time.Minute}}
	tests := []struct {
		name string
		ws   VisitWindows
		t    time.Time
		open bool
		wait time.Duration
	}{
		{"no windows: always open", nil, at(3, 0), true, 0},
		{"at the start", morning, at(6, 0), true, 0},
		{"inside", morning, at(8, 44), true, 0},
		{"at the end", morning, at(8, 45), false, 21*time.Hour + 15*time.Minute},
		{"before", morning, at(5, 30), false, 30 * time.Minute},
		{"after: tomorrow's", morning, at(12, 0), false, 18 * time.Hour},
		{"past midnight, late", night, at(23, 0), true, 0},
		{"past midnight, early", night, at(1, 29), true, 0},
		{"past midnight, closed", night, at(1, 30), false, 20*time.Hour + 30*time.Minute},
		{"nearest of two", append(slices.Clone(morning), night...), at(9, 0), false, 13 * time.Hour},
		{"another zone is UTC", morning, at(5, 0).In(time.FixedZone("UTC+2", 7200)), false, time.Hour},
	}
	for _, tt := range tests {
		open, wait := tt.ws.Open(tt.t)
		if open != tt.open || wait != tt.wait {
			t.Errorf("%s: Open(%v) = %v, %v; want %v, %v", tt.name, tt.t, open, wait, tt.open, tt.wait)
		}
	}
}
