package main

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/robotsgate/robotsgate/proxy"
)

// The README's table of decision values lists exactly the decisions the
// code makes (proxy.Decisions), no more, no fewer.
func TestReadmeListsEveryDecision(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| [^|]+ \\| [^|]+ \\|$").FindAllSubmatch(readme, -1) {
		documented = append(documented, string(m[1]))
	}
	var code []string
	for _, d := range proxy.Decisions() {
		code = append(code, d.Name)
	}
	code = slices.Compact(code) // trap-denied covers two verdicts
	if !slices.Equal(documented, code) {
		t.Errorf("README decisions %q,\nthe code's %q", documented, code)
	}
}
