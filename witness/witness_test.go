package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

func newKey(t *testing.T) ed25519.PrivateKey { return newKeyTB(t) }

func newKeyTB(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// witnessServer is a witness on a loopback TLS server; fail, while true,
// makes it answer 503 before the witness sees a request.
type witnessServer struct {
	*httptest.Server
	w    *Server
	key  ed25519.PrivateKey
	fail atomic.Bool
	now  atomic.Pointer[time.Time]
}

func startWitness(t *testing.T, logs ...ed25519.PublicKey) *witnessServer {
	t.Helper()
	ws := &witnessServer{key: newKey(t)}
	w, err := NewServer(ServerOptions{Dir: t.TempDir(), Key: ws.key, Logs: logs, Now: func() time.Time {
		if p := ws.now.Load(); p != nil {
			return *p
		}
		return time.Now()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ws.w = w
	ws.Server = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if ws.fail.Load() {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		w.ServeHTTP(rw, r)
	}))
	t.Cleanup(func() { ws.Close(); w.Close() })
	return ws
}

func (ws *witnessServer) roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ws.Certificate())
	return p
}

func (ws *witnessServer) pub() ed25519.PublicKey { return ws.key.Public().(ed25519.PublicKey) }

// post sends a checkpoint as a client would and returns the status and
// body.
func (ws *witnessServer) post(t *testing.T, cp *audit.Checkpoint) (int, string) {
	t.Helper()
	body, _ := json.Marshal(cp)
	resp, err := ws.Client().Post(ws.URL+"/v1/checkpoints", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// checkpoint signs a checkpoint of head at t with key.
func checkpoint(t *testing.T, key ed25519.PrivateKey, head string, at time.Time) *audit.Checkpoint {
	return checkpointTB(t, key, head, at)
}

func checkpointTB(t testing.TB, key ed25519.PrivateKey, head string, at time.Time) *audit.Checkpoint {
	t.Helper()
	obj, err := auditlog.CheckpointObject(key, head, 1, at, audit.Interval{Records: 10, Every: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var l struct{ Checkpoint *audit.Checkpoint }
	json.Unmarshal(obj, &l)
	return l.Checkpoint
}

// The witness accepts the checkpoints of the keys it was given, in
// order and near its clock, answers each with a receipt its key signs,
// answers a retry with the same receipt, and refuses the rest: another
// log, a forged signature, a checkpoint older than the last it saw of
// that log (a history rewritten later), one too old or ahead of its
// clock. Its list holds what it accepted, and survives a restart.
func TestTheWitnessAcceptsInOrderAndNearItsClock(t *testing.T) {
	logKey, other := newKey(t), newKey(t)
	ws := startWitness(t, logKey.Public().(ed25519.PublicKey))
	now := time.Now().UTC()
	first := checkpoint(t, logKey, strings.Repeat("a", 64), now.Add(-time.Minute))
	code, body := ws.post(t, first)
	var rec Receipt
	if code != 200 || json.Unmarshal([]byte(body), &rec) != nil || rec.Verify(ws.pub(), audit.KeyFingerprint(logKey.Public().(ed25519.PublicKey))) != nil {
		t.Fatalf("a checkpoint: %d %s", code, body)
	}
	if code, again := ws.post(t, first); code != 200 || again != body {
		t.Errorf("a retry: %d %s, want the same receipt", code, again)
	}
	forged := checkpoint(t, logKey, strings.Repeat("b", 64), now)
	forged.Head = strings.Repeat("c", 64)
	for _, c := range []struct {
		name string
		cp   *audit.Checkpoint
		code int
		want string
	}{
		{"another log", checkpoint(t, other, strings.Repeat("b", 64), now), 403, "does not witness"},
		{"a forged signature", forged, 400, "does not verify"},
		{"older than the last", checkpoint(t, logKey, strings.Repeat("b", 64), now.Add(-2*time.Minute)), 409, "not later than the last"},
		{"too old", checkpoint(t, logKey, strings.Repeat("b", 64), now.Add(-DefaultMaxAge-time.Minute)), 409, "not later than the last"},
		{"ahead of its clock", checkpoint(t, logKey, strings.Repeat("b", 64), now.Add(time.Hour)), 409, "ahead of the witness's clock"},
	} {
		if code, body := ws.post(t, c.cp); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, body, c.code, c.want)
		}
	}
	second := checkpoint(t, logKey, strings.Repeat("d", 64), now)
	if code, body := ws.post(t, second); code != 200 {
		t.Fatalf("a later checkpoint: %d %s", code, body)
	}

	// A fresh witness on the same directory knows the last checkpoint.
	w2, err := NewServer(ServerOptions{Dir: ws.w.o.Dir, Key: ws.key, Logs: []ed25519.PublicKey{logKey.Public().(ed25519.PublicKey)}})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if _, code, msg := w2.witness(w2.logs[first.Key], first); code != 409 {
		t.Errorf("after a restart, the first checkpoint again: %d %s, want 409", code, msg)
	}

	var heads []string
	err = FetchReceipts(context.Background(), ws.Client(), ws.URL, first.Key, ws.pub(), func(r *Receipt) error {
		heads = append(heads, r.Checkpoint.Head)
		return nil
	})
	if err != nil || len(heads) != 2 || heads[0] != first.Head || heads[1] != second.Head {
		t.Errorf("the list: %q %v", heads, err)
	}
	if err := FetchReceipts(context.Background(), ws.Client(), ws.URL, first.Key, newKey(t).Public().(ed25519.PublicKey),
		func(*Receipt) error { return nil }); err == nil || !strings.Contains(err.Error(), "not signed by the witness key") {
		t.Errorf("the list checked with another witness key: %v", err)
	}
}

// A too-old checkpoint is refused even as the first of its log.
func TestTheWitnessRefusesAnOldFirstCheckpoint(t *testing.T) {
	logKey := newKey(t)
	ws := startWitness(t, logKey.Public().(ed25519.PublicKey))
	if code, body := ws.post(t, checkpoint(t, logKey, "", time.Now().Add(-time.Hour))); code != 409 || !strings.Contains(body, "older than 10m0s") {
		t.Errorf("%d %s", code, body)
	}
}

// The audit log's checkpoints reach the witness through the client, in
// order; their receipts are kept beside the log and verify. While the
// witness fails, the client says so (Failing, Failures) and retries; it
// recovers by itself.
func TestTheClientSendsEveryCheckpointAndRecovers(t *testing.T) {
	logKey := newKey(t)
	ws := startWitness(t, logKey.Public().(ed25519.PublicKey))
	dir := t.TempDir()
	receipts := filepath.Join(dir, "audit.log.witness")
	c, err := NewClient(ClientOptions{URL: ws.URL, Key: ws.pub(), RootCAs: ws.roots(), Receipts: receipts})
	if err != nil {
		t.Fatal(err)
	}
	w, err := auditlog.Open(filepath.Join(dir, "audit.log"), auditlog.Options{Key: logKey, CheckpointRecords: 2, OnCheckpoint: c.Submit})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		w.Write(&audit.Record{URL: "http://a.example/", Decision: audit.Allow})
	}
	waitFor(t, func() bool { return c.Witnessed() == 3 }, "3 checkpoints witnessed (opened, after 2 and 4 records)")
	if err := c.Failing(); err != nil {
		t.Errorf("Failing while the witness works: %v", err)
	}

	ws.fail.Store(true)
	w.Write(&audit.Record{URL: "http://a.example/", Decision: audit.Allow})
	w.Write(&audit.Record{URL: "http://a.example/", Decision: audit.Allow}) // a checkpoint
	waitFor(t, func() bool { return c.Failing() != nil && c.Failures() > 0 }, "the failure reported")
	if !strings.Contains(c.Failing().Error(), "503") || c.Pending() != 1 {
		t.Errorf("failing: %v, %d pending", c.Failing(), c.Pending())
	}
	ws.fail.Store(false)
	waitFor(t, func() bool { return c.Witnessed() == 4 && c.Failing() == nil }, "the checkpoint witnessed after the outage")
	w.Close() // a last checkpoint? none: no record since
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(receipts)
	defer f.Close()
	n := 0
	if err := ReadReceipts(f, ws.pub(), audit.KeyFingerprint(logKey.Public().(ed25519.PublicKey)), func(*Receipt) error { n++; return nil }); err != nil || n != 4 {
		t.Errorf("receipts kept: %d %v, want 4", n, err)
	}
}

// A witness whose receipts the configured key does not verify (another
// witness, a man in the middle) is a failure: nothing is kept.
func TestAReceiptOfAnotherKeyIsAFailure(t *testing.T) {
	logKey := newKey(t)
	ws := startWitness(t, logKey.Public().(ed25519.PublicKey))
	receipts := filepath.Join(t.TempDir(), "r")
	c, err := NewClient(ClientOptions{URL: ws.URL, Key: newKey(t).Public().(ed25519.PublicKey), RootCAs: ws.roots(), Receipts: receipts})
	if err != nil {
		t.Fatal(err)
	}
	c.Submit(*checkpoint(t, logKey, "", time.Now()))
	waitFor(t, func() bool { return c.Failing() != nil }, "the failure")
	if !strings.Contains(c.Failing().Error(), "not signed by the witness key") || c.Witnessed() != 0 {
		t.Errorf("failing %v, witnessed %d", c.Failing(), c.Witnessed())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.Close(ctx)
	if data, _ := os.ReadFile(receipts); len(data) != 0 {
		t.Errorf("a receipt was kept: %s", data)
	}
	if c.Dropped() != 1 {
		t.Errorf("dropped %d, want the one left at Close", c.Dropped())
	}
}

// waitFor polls cond (the client works on a goroutine of its own, and
// its retries wait a second) for up to 20 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
