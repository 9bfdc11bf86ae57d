package headscan

import (
	"net/http"
	"strings"
	"testing"
)

// TestRestrictAcceptEncoding: a scanned client's Accept-Encoding keeps only
// the codings the scan decodes, or asks for identity; a request without
// the field, or whose client signs the field itself, is left as it is.
func TestRestrictAcceptEncoding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
		want   []string // nil: no Accept-Encoding
	}{
		{"none stays none", nil, nil},
		{"br only becomes identity", []string{"Accept-Encoding", "br"}, []string{"identity"}},
		{"the decoded codings are kept with their weights", []string{"Accept-Encoding", "gzip;q=1.0, br;q=0.9, zstd, deflate;q=0.5"}, []string{"gzip;q=1.0, deflate;q=0.5"}},
		{"lines are one list", []string{"Accept-Encoding", "br", "Accept-Encoding", "X-GZIP"}, []string{"X-GZIP"}},
		{"a signature covering the field keeps it", []string{"Accept-Encoding", "br", "Signature-Input", `sig1=("@authority" "accept-encoding");created=1`}, []string{"br"}},
		{"an unparsable signature keeps it", []string{"Accept-Encoding", "br", "Signature-Input", `sig1=(`}, []string{"br"}},
		{"a signature covering other fields does not", []string{"Accept-Encoding", "br", "Signature-Input", `sig1=("@authority" "user-agent");created=1`}, []string{"identity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tc.header); i += 2 {
				h.Add(tc.header[i], tc.header[i+1])
			}
			RestrictAcceptEncoding(h)
			if got := h.Values("Accept-Encoding"); strings.Join(got, "|") != strings.Join(tc.want, "|") || (got == nil) != (tc.want == nil) {
				t.Errorf("Accept-Encoding %q, want %q", got, tc.want)
			}
		})
	}
}
