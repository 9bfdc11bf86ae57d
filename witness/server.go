package witness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// ServerOptions configure a witness (Server).
type ServerOptions struct {
	// Dir keeps the receipts, one file per log, appended to and never
	// rewritten.
	Dir string
	// Key signs the receipts: the witness's own key, which the reviewer
	// pins.
	Key ed25519.PrivateKey
	// Logs are the evidence keys whose checkpoints it witnesses; any other
	// is refused (403), so that no one fills its disk.
	Logs []ed25519.PublicKey
	// MaxAge is how old, by the witness's clock, a checkpoint may be when
	// it arrives: older ones are refused (409), so that a history
	// rewritten later cannot be witnessed. Zero means DefaultMaxAge.
	MaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultMaxAge is ServerOptions.MaxAge's default: long enough for a
// robotsgate to get through a short outage of the witness (it retries),
// short against a rewriting.
const DefaultMaxAge = 10 * time.Minute

// maxSkew is how far in the future of the witness's clock a checkpoint's
// time may be: clocks differ a little; a checkpoint dated far ahead would
// lock out the honest ones after it.
const maxSkew = time.Minute

// maxCheckpoint bounds a POST's body: a checkpoint is a few hundred bytes.
const maxCheckpoint = 16 << 10

// Server is a witness: it answers the protocol of the package doc over
// HTTP (serve it with TLS). It is safe for concurrent use.
type Server struct {
	o    ServerOptions
	logs map[string]*logState // by the evidence key's fingerprint
}

// logState is one witnessed log: its receipts file and its last receipt.
type logState struct {
	mu   sync.Mutex
	pub  ed25519.PublicKey
	path string
	f    *os.File // nil until the first receipt
	size int64    // the file's length after its last whole line
	last *Receipt
	line []byte // last's line, for a retried POST
}

// NewServer opens a witness on o.Dir, reading the last receipt of each
// log it witnesses.
func NewServer(o ServerOptions) (*Server, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if len(o.Logs) == 0 {
		return nil, errors.New("witness: no evidence key to witness")
	}
	if err := os.MkdirAll(o.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	s := &Server{o: o, logs: map[string]*logState{}}
	for _, pub := range o.Logs {
		fp := audit.KeyFingerprint(pub)
		st := &logState{pub: pub, path: filepath.Join(o.Dir, fileName(fp))}
		if err := st.load(); err != nil {
			s.Close()
			return nil, err
		}
		s.logs[fp] = st
	}
	return s, nil
}

// load reads the receipts file's last line, when there is one.
func (st *logState) load() error {
	f, err := os.OpenFile(st.path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	size, last, err := lastLine(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("witness: %s: %w", st.path, err)
	}
	st.f, st.size = f, size
	if last != nil {
		var r Receipt
		if err := json.Unmarshal(last, &r); err != nil {
			f.Close()
			return fmt.Errorf("witness: %s: the last receipt: %w", st.path, err)
		}
		st.last, st.line = &r, append(last, '\n')
	}
	return nil
}

// lastLine returns the length of f up to its last whole line and that
// line (nil when there is none): a line torn by a crash is cut off.
func lastLine(f *os.File) (int64, []byte, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	n := min(st.Size(), 1<<20)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, st.Size()-n); err != nil && err != io.EOF {
		return 0, nil, err
	}
	end := bytes.LastIndexByte(tail, '\n')
	if end < 0 {
		if st.Size() > 0 {
			return 0, nil, f.Truncate(0)
		}
		return 0, nil, nil
	}
	size := st.Size() - n + int64(end) + 1
	if size != st.Size() {
		if err := f.Truncate(size); err != nil {
			return 0, nil, err
		}
	}
	line := tail[:end]
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	return size, bytes.Clone(line), nil
}

// Close closes the receipts files.
func (s *Server) Close() error {
	var errs []error
	for _, st := range s.logs {
		st.mu.Lock()
		if st.f != nil {
			errs = append(errs, st.f.Close())
			st.f = nil
		}
		st.mu.Unlock()
	}
	return errors.Join(errs...)
}

// PublicKey is the key that verifies the witness's receipts.
func (s *Server) PublicKey() ed25519.PublicKey { return s.o.Key.Public().(ed25519.PublicKey) }

// ServeHTTP answers the protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case r.URL.Path == "/v1/checkpoints" && r.Method == http.MethodPost:
		s.add(w, r)
	case r.URL.Path == "/v1/checkpoints" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.list(w, r)
	case r.URL.Path == "/v1/key" && r.Method == http.MethodGet:
		io.WriteString(w, base64.StdEncoding.EncodeToString(s.PublicKey())+"\n")
	case r.URL.Path == "/v1/checkpoints" || r.URL.Path == "/v1/key":
		w.Header().Set("Allow", "GET, POST")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
	default:
		httpError(w, http.StatusNotFound, "not found: this is a robotsgate witness (POST or GET /v1/checkpoints)")
	}
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}

// add witnesses one checkpoint.
func (s *Server) add(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCheckpoint))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, "a checkpoint is at most 16 KiB")
		return
	}
	var cp audit.Checkpoint
	if err := json.Unmarshal(body, &cp); err != nil || cp.Key == "" {
		httpError(w, http.StatusBadRequest, "not a checkpoint")
		return
	}
	st, ok := s.logs[cp.Key]
	if !ok {
		httpError(w, http.StatusForbidden, "this witness does not witness the log of key "+cp.Key)
		return
	}
	if !cp.Verify(st.pub) {
		httpError(w, http.StatusBadRequest, "the checkpoint's signature does not verify with key "+cp.Key)
		return
	}
	line, code, msg := s.witness(st, &cp)
	if code != http.StatusOK {
		httpError(w, code, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(line)
}

// witness records cp in st's receipts and returns the receipt's line, or
// the status and message that refuse it.
func (s *Server) witness(st *logState, cp *audit.Checkpoint) ([]byte, int, string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := s.o.Now().UTC()
	if l := st.last; l != nil {
		switch {
		case cp.Time.Equal(l.Checkpoint.Time) && cp.Head == l.Checkpoint.Head:
			return st.line, http.StatusOK, "" // a retry: the receipt already given
		case !cp.Time.After(l.Checkpoint.Time):
			return nil, http.StatusConflict, fmt.Sprintf("the checkpoint of %s is not later than the last one witnessed of this log (%s)",
				cp.Time.UTC().Format(time.RFC3339Nano), l.Checkpoint.Time.UTC().Format(time.RFC3339Nano))
		}
	}
	switch {
	case cp.Time.After(now.Add(maxSkew)):
		return nil, http.StatusConflict, fmt.Sprintf("the checkpoint of %s is ahead of the witness's clock (%s)",
			cp.Time.UTC().Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	case cp.Time.Before(now.Add(-s.o.MaxAge)):
		return nil, http.StatusConflict, fmt.Sprintf("the checkpoint of %s is older than %s by the witness's clock (%s)",
			cp.Time.UTC().Format(time.RFC3339Nano), s.o.MaxAge, now.Format(time.RFC3339Nano))
	}
	rec := &Receipt{Log: cp.Key, Checkpoint: *cp, WitnessedAt: now}
	rec.sign(s.o.Key)
	line, err := json.Marshal(rec)
	if err != nil {
		return nil, http.StatusInternalServerError, "encoding the receipt"
	}
	line = append(line, '\n')
	if err := st.append(line); err != nil {
		return nil, http.StatusInternalServerError, "the witness could not keep the receipt; try again"
	}
	st.last, st.line = rec, line
	return line, http.StatusOK, ""
}

// append writes one receipt line and syncs it: a receipt given is kept.
// A write that fails part-way is cut back off. Called with st.mu held.
func (st *logState) append(line []byte) error {
	if st.f == nil {
		f, err := os.OpenFile(st.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return err
		}
		st.f, st.size = f, 0
	}
	n, err := st.f.Write(line)
	if err == nil {
		err = st.f.Sync()
	}
	if err != nil {
		if n > 0 {
			st.f.Truncate(st.size)
		}
		return err
	}
	st.size += int64(n)
	return nil
}

// list sends every receipt of a log, as far as it was written when the
// request came.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	st, ok := s.logs[r.URL.Query().Get("log")]
	if !ok {
		httpError(w, http.StatusNotFound, "this witness does not witness that log (?log=FINGERPRINT, as robotsgate evidence-key prints it)")
		return
	}
	st.mu.Lock()
	size := st.size
	st.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	if size == 0 || r.Method == http.MethodHead {
		return
	}
	f, err := os.Open(st.path)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "the receipts cannot be read")
		return
	}
	defer f.Close()
	io.CopyN(w, f, size) // whole lines only: appends after the snapshot are left out
}
