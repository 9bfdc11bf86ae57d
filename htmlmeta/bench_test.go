package htmlmeta

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkScan measures the meta scan alone: a page whose head ends after
// about 2 KiB, and one whose head does not end within Limit (the most the
// scan reads and tokenizes).
func BenchmarkScan(b *testing.B) {
	head := `<title>A page</title><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
		`<meta name="description" content="` + strings.Repeat("words ", 100) + `">` +
		strings.Repeat(`<link rel="stylesheet" href="/static/site.css">`, 20) +
		`<script>window.dataLayer = window.dataLayer || [];</script>`
	page := []byte("<!doctype html><html><head>" + head + "</head><body>" + strings.Repeat("<p>text</p>", 20000))
	none := []byte("<!doctype html><html><head><style>" + strings.Repeat(".c{color:#123456}\n", Limit/18+100))
	for name, doc := range map[string][]byte{"2KiB": page, "none": none} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Scan(bytes.NewReader(doc), Limit)
			}
		})
	}
}
