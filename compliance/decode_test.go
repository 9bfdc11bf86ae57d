package compliance

import (
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/audit"
)

// A line whose figures no proxy writes is no record: the readers must not
// compute with an edited line.
func TestDecodeRecordRefusesFiguresNoProxyWrites(t *testing.T) {
	for _, c := range []struct {
		line, want string // want "" for a record
	}{
		{`{"time":"2026-11-26T10:00:00Z","wait_ms":1000,"duration_ms":1200,"sent_ms":1001}`, ""},
		{`{"time":"2026-11-26T10:00:00Z","duration_ms":5}`, ""},
		{`{"time":"1969-12-31T23:59:59Z"}`, "time"},
		{`{"time":"2201-01-01T00:00:00Z"}`, "time"},
		{`{"time":"2026-11-26T10:00:00Z","wait_ms":-1}`, "wait_ms"},
		{`{"time":"2026-11-26T10:00:00Z","duration_ms":2e12}`, "duration_ms"},
		{`{"time":"2026-11-26T10:00:00Z","duration_ms":100,"sent_ms":-1}`, "sent_ms"},
		{`{"time":"2026-11-26T10:00:00Z","duration_ms":100,"sent_ms":2000}`, "sent_ms"},
		{`{"time":"2026-11-26T10:00:00Z","sent_ms":1e300}`, "sent_ms"},
	} {
		var rec audit.Record
		err := decodeRecord([]byte(c.line), &rec)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want an error naming %q", c.line, err, c.want)
		}
	}
}
