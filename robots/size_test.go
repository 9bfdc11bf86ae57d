package robots

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// File.Size agrees with what the heap keeps for parsed files, within a
// quarter: caches bound memory by it, so it must measure, not guess. The
// files range from a few rules to a 500 KiB file of short rules with
// escapes (whose canonical and decoded twins double the rules). A large
// file that is mostly comments keeps little, and Size says so: it is not
// the body's length.
func TestFileSizeIsWhatTheHeapKeeps(t *testing.T) {
	var rules strings.Builder
	rules.WriteString("User-agent: *\n")
	for i := 0; rules.Len() < MaxFileSize; i++ {
		fmt.Fprintf(&rules, "Disallow: /p%d/%%7Eu%d/*.php$\n", i, i)
	}
	comments := "User-agent: *\nDisallow: /private\n" + strings.Repeat("# a long comment line that parsing drops\n", 12000)
	small := "User-agent: *\nDisallow: /private\nAllow: /private/ok\nCrawl-delay: 2\nSitemap: https://example.com/s.xml\n\nUser-agent: FooBot\nDisallow: /\n"
	for _, c := range []struct {
		name string
		body string
		n    int
	}{{"small", small, 5000}, {"500 KiB of rules", rules.String(), 8}, {"20 KiB of rules", rules.String()[:20<<10], 500}} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			files := make([]*File, c.n)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range files {
				files[i] = Parse(body)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			kept := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(c.n)
			size := float64(files[0].Size())
			if size < 0.75*kept || size > 1.25*kept {
				t.Errorf("Size %.0f bytes, the heap keeps %.0f per file", size, kept)
			}
			runtime.KeepAlive(files)
		})
	}
	if size := Parse([]byte(comments)).Size(); size > 1024 || len(comments) < 400<<10 {
		t.Errorf("a %d-byte file of comments and one rule: Size %d, want what one rule keeps", len(comments), size)
	}
}
