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
