package robots

import (
	"strconv"
	"strings"
	"testing"
)

// hostileFile is nearly MaxFileSize of "Disallow: /*b<n>x" rules: against a
// path of b1b1…, each rule's search meets a candidate at every other octet.
func hostileFile() *File {
	var sb strings.Builder
	sb.WriteString("User-agent: *\nAllow: /public-pages-of-the-site/\n")
	for i := 0; sb.Len() < MaxFileSize-40; i++ {
		sb.WriteString("Disallow: /*b" + strconv.Itoa(i) + "x\n")
	}
	return Parse([]byte(sb.String()))
}

// TestTooCostlyIsRefused: a file built so that judging a path would examine
// far more than MaxMatchWork octets gets the conservative verdict, with no
// rule, instead of costing milliseconds per request; paths it can judge
// within the bound are judged as usual.
func TestTooCostlyIsRefused(t *testing.T) {
	f := hostileFile()
	g := f.Group("bot")
	costly := "/" + strings.Repeat("b1", 1023) + "b"
	tests := []struct {
		name, target string
		strict       bool
		allowed      bool
		tooCostly    bool
	}{
		{"hostile path", costly, false, false, true},
		{"hostile path, strict", costly, true, false, true},
		{"a longer rule decides first", "/public-pages-of-the-site/" + costly[1:], false, true, false},
		{"short path", "/b1b1", false, true, false},
		{"rule found", "/b12x", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := g.Decide(tt.target)
			if tt.strict {
				d = g.DecideStrict(tt.target)
			}
			if d.Allowed != tt.allowed || d.TooCostly != tt.tooCostly {
				t.Errorf("Decide = %v (too costly %v), want allowed %v too costly %v", d, d.TooCostly, tt.allowed, tt.tooCostly)
			}
			if d.TooCostly && (d.Matched || !strings.Contains(d.String(), "too costly")) {
				t.Errorf("too costly decision %q matched %v", d, d.Matched)
			}
		})
	}
}

// TestCorpusStaysFarBelowMaxMatchWork: no query of the real-world corpus
// needs even a fiftieth of MaxMatchWork (the largest needs about 40 KB), so
// the bound only ever stops files built to exhaust their reader.
func TestCorpusStaysFarBelowMaxMatchWork(t *testing.T) {
	c := LoadCorpus(t)
	files := make([]*File, len(c.Files))
	for i, f := range c.Files {
		files[i] = Parse(f.Body)
	}
	for _, q := range c.Queries {
		if d := files[q.File].Group(q.Agent).decide(q.Path, MaxMatchWork/50); d.TooCostly {
			t.Errorf("%s %s %q needs more than %d octets", c.Files[q.File].Name, q.Agent, q.Path, MaxMatchWork/50)
		}
	}
}
