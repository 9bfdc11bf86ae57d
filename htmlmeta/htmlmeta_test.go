package htmlmeta

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []Meta
	}{
		{"plain", `<!doctype html><html><head><meta name="robots" content="noai, noimageai"><title>x</title></head><body>`,
			[]Meta{{"robots", "noai, noimageai"}}},
		{"case and quoting", `<HTML><HEAD><META NAME=ROBOTS CONTENT=noai><Meta name='TDM-Reservation' content=' 1 '/></HEAD>`,
			[]Meta{{"robots", "noai"}, {"tdm-reservation", "1"}}},
		{"character references", `<meta name="&#114;obots" content="no&#97;i">`, []Meta{{"robots", "noai"}}},
		{"first of duplicate attributes", `<meta name="robots" name="x" content="noai" content="all">`, []Meta{{"robots", "noai"}}},
		{"no content or no name", `<meta name="robots"><meta content="noai"><meta name="" content="noai"><meta charset="utf-8">`, nil},
		{"comment", `<head><!-- <meta name="robots" content="noai"> --></head>`, nil},
		{"script", `<head><script>document.write('<meta name="robots" content="noai">')</script></head>`, nil},
		{"style and title", `<head><style><meta name="robots" content="noai"></style><title><meta name="robots" content="noai"></title>`, nil},
		{"attribute value", `<head><link title='<meta name="robots" content="noai">'></head>`, nil},
		{"stops at </head>", `<head><meta name="a" content="1"></head><meta name="robots" content="noai">`, []Meta{{"a", "1"}}},
		{"stops at <body>", `<meta name="a" content="1"><body><meta name="robots" content="noai">`, []Meta{{"a", "1"}}},
		{"no head tags", `<title>t</title><meta name="robots" content="noai"><p>text`, []Meta{{"robots", "noai"}}},
		{"not html", "\x00\xff<<>>\x1f<meta", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Scan(strings.NewReader(tc.doc), Limit)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Scan(%q) = %+v, %v; want %+v", tc.doc, got, err, tc.want)
			}
			// Short reads change nothing.
			if got, err := Scan(iotest.OneByteReader(strings.NewReader(tc.doc)), Limit); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("one byte at a time: %+v, %v", got, err)
			}
		})
	}
}

func TestScanLimit(t *testing.T) {
	tag := `<meta name="robots" content="noai">`
	pad := "<head>" + strings.Repeat("<link rel=x>", 100)
	doc := pad + tag
	// The whole tag within the limit counts; cut off by it, it does not.
	if got, _ := Scan(strings.NewReader(doc), int64(len(doc))); len(got) != 1 {
		t.Errorf("tag ending at the limit: %+v, want it", got)
	}
	for cut := len(pad); cut < len(doc); cut++ {
		r := &countingReader{r: strings.NewReader(doc)}
		if got, _ := Scan(r, int64(cut)); len(got) != 0 {
			t.Errorf("limit %d cuts the tag, yet Scan found %+v", cut, got)
		}
		if r.n > int64(cut) {
			t.Errorf("limit %d: read %d bytes", cut, r.n)
		}
	}
}

// A head that never ends is read up to the limit and no further.
func TestScanReadsAtMostLimit(t *testing.T) {
	r := &countingReader{r: io.MultiReader(strings.NewReader("<head>"), endless{})}
	if _, err := Scan(r, Limit); err != nil {
		t.Fatal(err)
	}
	if r.n != Limit {
		t.Errorf("read %d bytes, want %d", r.n, Limit)
	}
}

func TestScanError(t *testing.T) {
	boom := errors.New("boom")
	got, err := Scan(io.MultiReader(strings.NewReader(`<meta name=a content=1>`), iotest.ErrReader(boom)), Limit)
	if !errors.Is(err, boom) || !reflect.DeepEqual(got, []Meta{{"a", "1"}}) {
		t.Errorf("Scan = %+v, %v; want the tag read and the error", got, err)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestScanHeadLinks: ScanHead returns the head's <link> tags with a rel
// and an href, as a browser tokenizes them, at most MaxLinks of them,
// and stops where Scan stops.
func TestScanHeadLinks(t *testing.T) {
	many := "<head>" + strings.Repeat(`<link rel="stylesheet" href="/s.css">`, MaxLinks+5) + `<link rel="license" href="/l.xml">`
	for _, tc := range []struct {
		name, doc string
		want      []Link
	}{
		{"licence", `<head><link rel="License" href=" https://example.com/l.xml " type="Application/RSL+XML"></head>`,
			[]Link{{"license", "https://example.com/l.xml", "application/rsl+xml"}}},
		{"self-closing, unquoted, references", `<LINK REL=license HREF=/l&#46;xml />`, []Link{{"license", "/l.xml", ""}}},
		{"without rel or href", `<link href="/a"><link rel="license"><link rel="" href="/b">`, nil},
		{"in a comment or script", `<!-- <link rel="license" href="/a"> --><script><link rel="license" href="/b"></script>`, nil},
		{"stops at <body>", `<link rel="a" href="/a"><body><link rel="license" href="/l.xml">`, []Link{{"a", "/a", ""}}},
		{"bounded", many, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanHead(strings.NewReader(tc.doc), Limit)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "bounded" {
				if len(got.Links) != MaxLinks || got.Links[MaxLinks-1].Rel != "stylesheet" {
					t.Fatalf("%d links, the last %+v", len(got.Links), got.Links[len(got.Links)-1])
				}
				return
			}
			if !reflect.DeepEqual(got.Links, tc.want) {
				t.Errorf("links %+v, want %+v", got.Links, tc.want)
			}
		})
	}
}

// TestScanHeadSaysWhetherTheHeadEnded: Complete is true when </head>,
// <body> or the end of the document came within the limit, false when
// the limit cut the head (tags may follow it).
func TestScanHeadSaysWhetherTheHeadEnded(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		complete  bool
	}{
		{"</head>", "<head><title>x</title></head>" + strings.Repeat("x", 100), true},
		{"<body>", "<title>x</title><body>" + strings.Repeat("x", 100), true},
		{"the end of the document", "<head><title>x</title>", true},
		{"cut by the limit", "<head><script>" + strings.Repeat(" ", 100) + "</script></head>", false},
		{"exactly the limit, no end seen", "<head>" + strings.Repeat(" ", 64-6), false},
	} {
		h, err := ScanHead(strings.NewReader(tc.doc), 64)
		if err != nil || h.Complete != tc.complete {
			t.Errorf("%s: Complete %v (%v), want %v", tc.name, h.Complete, err, tc.complete)
		}
	}
}
