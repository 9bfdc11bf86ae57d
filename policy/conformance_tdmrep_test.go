package policy

import (
	"testing"

	"github.com/robotsgate/robotsgate/tdmrep"
)

// TestConformanceTDMRep: the W3C TDM Reservation Protocol, as its
// Community Group Final Report says (w3c/tdm-reservation-protocol,
// spec/index.html of 2024-12-14), cited by section anchor.
func TestConformanceTDMRep(t *testing.T) {
	const tr = "tdm-reservation"
	page := func(metas string) string {
		return "<!doctype html><html><head><title>t</title>" + metas + "</head><body>text</body></html>"
	}
	file := func(json string) map[string]string { return map[string]string{tdmrep.Path: json} }
	runConformance(t, []confCase{
		{name: "#sec-tdm-file the first matching location applies", target: "/a/open/x",
			files: file(`[{"location": "/a/open/", "tdm-reservation": 0}, {"location": "/a/", "tdm-reservation": 1}]`), want: Allow},
		{name: "#sec-tdm-file a reserved location refuses the TDM purposes", target: "/a/x",
			files: file(`[{"location": "/a/open/", "tdm-reservation": 0}, {"location": "/a/", "tdm-reservation": 1}]`),
			want:  UsageDenied, why: "tdm-reservation 1"},
		{name: "#sec-tdm-file no match leaves tdm-reservation unset", target: "/b/x", files: file(`[{"location": "/a/", "tdm-reservation": 1}]`), want: Allow},
		{name: "#sec-tdm-reservation it concerns TDM: search is not refused", files: file(`[{"location": "/", "tdm-reservation": 1}]`),
			purposes: []string{"search"}, want: Allow},
		{name: "#sec-tdm-file a file that is not there (404) is no reservation", files: map[string]string{}, want: Allow},
		{name: "robotsgate: a file that cannot be fetched (503) is unknown (usage.on_unknown: refuse)", files: file(unavailable),
			want: UsageUnknown, why: "tdmrep.json could not be fetched"},
		{name: "#sec-tdm-header tdm-reservation: 1 refuses", header: []string{tr, "1"}, want: UsageDenied, why: "tdm-reservation: 1"},
		{name: "#sec-tdm-header tdm-reservation: 0 does not", header: []string{tr, "0"}, want: Allow},
		{name: "#sec-tdm-reservation another value is a protocol error: unset", header: []string{tr, "yes"}, want: Allow},
		{name: "#sec-tdm-header + RFC 9110 §5.3 one line 0, 1 is the lines 0 and 1: a 1 reserves (robotsgate, conservative)", header: []string{tr, "0, 1"},
			want: UsageDenied, why: "tdm-reservation: 0, 1"},
		{name: "#sec-tdm-header + RFC 9110 §5.3 two lines 0 and 1 reserve as one line does", header: []string{tr, "0", tr, "1"},
			want: UsageDenied, why: "tdm-reservation: 0, 1"},
		{name: "#sec-tdm-html-meta a meta tag 1 refuses", html: page(`<meta name="tdm-reservation" content="1">`), want: UsageDenied, why: `<meta name="tdm-reservation"`},
		{name: "#sec-processing-priority a meta tag 0 supersedes a header 1", header: []string{tr, "1"}, html: page(`<meta name="tdm-reservation" content="0">`),
			want: Allow},
		{name: "#sec-processing-priority a meta tag 1 supersedes a header 0", header: []string{tr, "0"}, html: page(`<meta name="tdm-reservation" content="1">`),
			want: UsageDenied, why: `<meta name="tdm-reservation"`},
		{name: "#sec-processing-priority an absent meta tag does not reset a header 1", header: []string{tr, "1"}, html: page(`<meta name="robots" content="noindex">`),
			want: UsageDenied, why: "tdm-reservation: 1"},
		{name: "#sec-processing-priority a meta tag with a protocol error does not reset a header 1", header: []string{tr, "1"},
			html: page(`<meta name="tdm-reservation" content="maybe">`), want: UsageDenied, why: "tdm-reservation: 1"},
		{name: "#sec-processing-priority a header 0 supersedes the file's 1: robotsgate, more conservative, refuses before the request",
			files: file(`[{"location": "/", "tdm-reservation": 1}]`), header: []string{tr, "0"}, want: UsageDenied, why: "tdm-reservation 1"},
	})
}
