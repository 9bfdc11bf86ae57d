package audit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A field cut at its limit never ends in half a character, whatever the
// width of the character the limit falls in, and keeps the longest prefix
// that does not split one: a record must read back as the text it quotes.
func TestCapNeverSplitsAUTF8Sequence(t *testing.T) {
	for _, tc := range []struct {
		name, char string
	}{
		{"two-byte sequence", "é"},
		{"three-byte sequence", "€"},
		{"four-byte sequence", "𝄞"},
	} {
		for pad := 0; pad < len(tc.char); pad++ {
			// pad shifts the sequences so that MaxField falls at each
			// byte of one of them in turn.
			ua := strings.Repeat("x", pad) + strings.Repeat(tc.char, MaxField)
			r := &Record{UserAgent: ua}
			r.Cap()
			got := r.UserAgent
			if !utf8.ValidString(got) {
				t.Errorf("%s, pad %d: cut leaves invalid UTF-8 (ends %q)", tc.name, pad, got[len(got)-3:])
			}
			want := pad + (MaxField-pad)/len(tc.char)*len(tc.char)
			if len(got) != want || !strings.HasPrefix(ua, got) {
				t.Errorf("%s, pad %d: kept %d bytes, want the %d-byte prefix", tc.name, pad, len(got), want)
			}
		}
	}
}
