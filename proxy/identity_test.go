package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// robotsgate's own fetches (robots.txt and tdmrep.json here; licences go
// through the same client) say who fetches, as the crawler best-practices
// draft asks (draft-illyes-webbotauth-cbcp-00, "Crawlers MUST be easily
// identifiable through their user agent string"): by default a product
// token and the project's URL, and the operator's mail address in From
// (RFC 9110 Section 10.1.2) when identify.from, or a mailto:
// bot_auth.contact, names one. A contact that is no mail address adds no
// From; identify.from wins over the contact.
func TestOwnFetchesIdentifyThemselves(t *testing.T) {
	for _, tc := range []struct {
		name          string
		from, contact string
		want          string
	}{
		{"default", "", "", ""},
		{"identify.from", "crawler-admin@example.org", "", "crawler-admin@example.org"},
		{"mailto contact", "", "mailto:ops@example.org", "ops@example.org"},
		{"web contact", "", "https://example.org/bot", ""},
		{"identify.from wins", "crawler-admin@example.org", "mailto:ops@example.org", "crawler-admin@example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]http.Header{}
			o := serveAt(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen[r.URL.Path] = r.Header.Clone()
				mu.Unlock()
				switch r.URL.Path {
				case "/robots.txt":
					io.WriteString(w, "User-agent: *\nAllow: /\n")
				case tdmrep.Path:
					io.WriteString(w, "[]")
				default:
					io.WriteString(w, "page")
				}
			}))
			cfg := testConfig(t, nil)
			cfg.Identify.From, cfg.BotAuth.Contact = tc.from, tc.contact
			cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai"}}}
			c := startProxy(t, cfg).client()
			if resp, body := get(t, c, o.URL+"/page"); resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /page: %d %s", resp.StatusCode, body)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, path := range []string{"/robots.txt", tdmrep.Path} {
				h, ok := seen[path]
				if !ok {
					t.Fatalf("%s was not fetched", path)
				}
				if got := h.Get("User-Agent"); got != "robotsgate/1.0 (+https://github.com/robotsgate/robotsgate)" {
					t.Errorf("%s: User-Agent %q, want the product token and the project URL", path, got)
				}
				if got := h.Get("From"); got != tc.want {
					t.Errorf("%s: From %q, want %q", path, got, tc.want)
				}
			}
		})
	}
}

// An upstream error that is a timeout (a dial or a response header that
// did not come in time) is a connection error the governor counts as a
// timeout (pacing.backoff.failures.timeouts); a refused connection is a
// connection error but no timeout; a refusal of the egress guard or a DNS
// failure is nothing the origin answered.
func TestFailureAnswerTellsTimeoutsApart(t *testing.T) {
	at := time.Now()
	for _, tc := range []struct {
		name        string
		err         error
		ok, timeout bool
	}{
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, true, true},
		{"response header timeout", fmt.Errorf("round trip: %w", context.DeadlineExceeded), true, true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true, false},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true, false},
		{"dns", &net.DNSError{Err: "no such host", Name: "a.example", IsNotFound: true}, false, false},
		{"egress guard", &egress.DeniedError{}, false, false},
	} {
		a, ok := failureAnswer(tc.err, at)
		if ok != tc.ok || a.Timeout != tc.timeout || ok && (!a.ConnectionError || !a.At.Equal(at)) {
			t.Errorf("%s: %+v %v, want ok %v timeout %v", tc.name, a, ok, tc.ok, tc.timeout)
		}
	}
}

// The key directory the admin listener serves is signed for the
// signature agent's authority, valid for DirectoryLifetime (24 h), with
// one signature for the gateway key over "@authority";req and
// content-digest.
func TestKeyDirectoryIsSignedForADay(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.BotAuth.SignatureAgent = "https://gate.example"
	cfg.BotAuth.Key = filepath.Join(t.TempDir(), "bot-auth-key.pem")
	p := startProxy(t, cfg)
	now := time.Unix(1_800_000_000, 0)
	body, h := p.srv.KeyDirectory(now)
	if body == nil || h.Get("Content-Digest") != botauth.ContentDigest(body) {
		t.Fatalf("directory %s, headers %v", body, h)
	}
	want := `binding=("@authority";req "content-digest");created=1800000000;expires=1800086400;keyid="`
	if in := h.Get("Signature-Input"); !strings.HasPrefix(in, want) || !strings.HasSuffix(in, `";tag="http-message-signatures-directory"`) {
		t.Errorf("Signature-Input %s\nwant %s...", in, want)
	}
}
