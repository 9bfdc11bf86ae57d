package htmlmeta

import (
	"bytes"
	"reflect"
	"testing"
	"testing/iotest"
)

// FuzzMetaScan: ScanHead never panics, never reads more than its limit, and
// what it finds (meta and link tags) depends only on the bytes within the limit: the document
// cut at the limit, or followed by anything else, gives the same tags, and
// so do reads of one byte at a time. A <meta> right after <head> within the
// limit is found whatever follows it.
func FuzzMetaScan(f *testing.F) {
	for _, s := range []string{
		`<!doctype html><html><head><meta name="robots" content="noai, noimageai"></head><body>`,
		`<HEAD><META NAME=tdm-reservation CONTENT=1><meta name=tdm-policy content="https://example.org/p">`,
		`<head><!-- <meta name="robots" content="noai"> --><script><meta name=x content=y></script>`,
		`<meta name="FooBot" content="noai"><body><meta name="robots" content="noai">`,
		`<meta name="a" content='b`,
		"<plaintext><meta name=a content=b>",
		"<head><![CDATA[<meta name=a content=b>]]></head>",
	} {
		f.Add([]byte(s), uint16(len(s)))
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, doc []byte, limit uint16) {
		lim := int64(limit)
		r := &countingReader{r: bytes.NewReader(doc)}
		got, err := ScanHead(r, lim)
		if err != nil {
			t.Fatalf("Scan of a byte slice failed: %v", err)
		}
		if r.n > lim {
			t.Fatalf("read %d bytes with a limit of %d", r.n, lim)
		}
		within := doc[:min(int64(len(doc)), lim)]
		cut, _ := ScanHead(bytes.NewReader(within), lim)
		more := got
		if int64(len(within)) == lim { // the limit cuts doc, or doc ends at it: bytes after it
			more, _ = ScanHead(bytes.NewReader(append(bytes.Clone(within), `"'><meta name="robots" content="noai"></head>`...)), lim)
		}
		slow, _ := ScanHead(iotest.OneByteReader(bytes.NewReader(doc)), lim)
		if !reflect.DeepEqual(got, cut) || !reflect.DeepEqual(got, more) || !reflect.DeepEqual(got, slow) {
			t.Fatalf("the tags depend on what follows the limit or on read sizes:\nwhole %+v\ncut   %+v\nmore  %+v\nslow  %+v", got, cut, more, slow)
		}
		for _, m := range got.Metas {
			if m.Name == "" {
				t.Fatalf("a tag without a name: %+v", m)
			}
		}
		if len(got.Links) > MaxLinks {
			t.Fatalf("%d links", len(got.Links))
		}
		for _, l := range got.Links {
			if l.Rel == "" || l.Href == "" {
				t.Fatalf("a link without rel or href: %+v", l)
			}
		}

		// Whatever follows, a <meta> right after <head> and within the
		// limit is found, and first: a Scan that found nothing would pass
		// every check above.
		const head = `<head><meta name="Robots" content=" noai ">`
		headed := append([]byte(head), doc...)
		found, err := Scan(bytes.NewReader(headed), int64(len(head))+lim)
		if err != nil || len(found) == 0 || found[0] != (Meta{Name: "robots", Content: "noai"}) {
			t.Fatalf("the <meta> right after <head> is not the first tag found in %q: %+v, %v", headed, found, err)
		}
	})
}
