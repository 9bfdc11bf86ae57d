package rsl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/origin"
)

// BenchmarkParse measures Parse of the sample licence and of one near
// MaxDocumentSize with many content elements; BenchmarkJudge a Match and
// Judge against the latter (the work per request of a cached licence),
// and reports its Size (what the cache's byte bound counts).
func BenchmarkParse(b *testing.B) {
	for name, doc := range map[string][]byte{"sample": []byte(sample), "large": large()} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJudge(b *testing.B) {
	doc, err := Parse(large())
	if err != nil {
		b.Fatal(err)
	}
	o := origin.Origin{Scheme: "https", Host: "example.com", Port: 443}
	b.ReportAllocs()
	for b.Loop() {
		m := doc.Match(o, "/section/999/article", false)
		if m.Content == nil || !m.Content.Judge(UsageAITrain, Client{}, Options{}).Refused {
			b.Fatal("no refusal")
		}
	}
	b.ReportMetric(float64(doc.Size()), "size-bytes")
}

// large is a licence of about 450 KiB: a <content> per section.
func large() []byte {
	var sb strings.Builder
	sb.WriteString(`<rsl xmlns="https://rslstandard.org/rsl">`)
	for i := 0; sb.Len() < MaxDocumentSize-1000; i++ {
		fmt.Fprintf(&sb, `<content url="/section/%d/*"><license><permits type="usage">search, ai-input</permits><prohibits type="usage">ai-train</prohibits></license></content>`, i)
	}
	sb.WriteString(`</rsl>`)
	return []byte(sb.String())
}
