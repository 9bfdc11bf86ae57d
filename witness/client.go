package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	// URL is the witness's base URL (https://host[:port][/path]); the
	// protocol's paths are under it.
	URL string
	// Key is the witness's public key: a receipt it does not verify is
	// not kept, and counts as a failure.
	Key ed25519.PublicKey
	// RootCAs verify the witness's certificate; nil means the system's.
	RootCAs *x509.CertPool
	// DialContext connects to the witness; nil means a net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Receipts is the file the receipts are appended to (created with
	// mode 0640), "" for none.
	Receipts string
	// Log hears of failures (the first, then at most one a minute while
	// they last) and of the recovery; nil means slog.Default().
	Log *slog.Logger
}

// queueMax bounds the checkpoints waiting to be sent: beyond it the
// oldest is dropped (a later checkpoint covers the lines of an earlier
// one), counted.
const queueMax = 4096

// sendTimeout bounds one POST; retryMax the wait between retries of a
// witness that fails, which doubles from a second.
const (
	sendTimeout = 10 * time.Second
	retryMax    = time.Minute
)

// failureLogEvery is how often at most a failing witness is logged.
const failureLogEvery = time.Minute

// Client sends checkpoints to a witness, in order, from a goroutine of
// its own: Submit never blocks the audit log. A witness that cannot be
// reached, or answers with an error, is retried with a backoff; one that
// refuses a checkpoint (409: too old, out of order) is not asked again
// for it. A failure is never silent: it is logged, counted (Failures)
// and reported by Failing until a checkpoint is witnessed again.
type Client struct {
	o        ClientOptions
	base     *url.URL
	http     *http.Client
	log      *slog.Logger
	receipts *os.File

	mu      sync.Mutex
	queue   []audit.Checkpoint
	wake    chan struct{} // a checkpoint was queued, or Close was called
	closing bool
	done    chan struct{} // the sender has stopped
	stop    context.CancelFunc
	ctx     context.Context

	failing   atomic.Pointer[error]
	witnessed atomic.Int64
	failures  atomic.Int64
	dropped   atomic.Int64
	lastOK    atomic.Int64 // unix nanoseconds of the last receipt, 0 if none
}

// NewClient returns a client of the witness at o.URL and starts its
// sender.
func NewClient(o ClientOptions) (*Client, error) {
	base, err := url.Parse(o.URL)
	if err != nil || base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("witness: %q is not an https:// URL", o.URL)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	if len(o.Key) != ed25519.PublicKeySize {
		return nil, errors.New("witness: no key to verify its receipts with")
	}
	c := &Client{o: o, base: base, log: o.Log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.http = NewHTTPClient(o.RootCAs, o.DialContext)
	if o.Receipts != "" {
		f, err := os.OpenFile(o.Receipts, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("witness: receipts: %w", err)
		}
		c.receipts = f
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	go c.run()
	return c, nil
}

// Submit queues a checkpoint to be witnessed. It never blocks (the audit
// writer calls it holding its lock).
func (c *Client) Submit(cp audit.Checkpoint) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		c.dropped.Add(1)
		return
	}
	if len(c.queue) >= queueMax {
		c.queue = c.queue[1:]
		c.dropped.Add(1)
	}
	c.queue = append(c.queue, cp)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close sends what is queued, until ctx is done, then stops the sender
// and closes the receipts file; the checkpoints not witnessed are
// counted as dropped, and logged.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		c.stop()
		<-c.done
	}
	c.stop()
	c.mu.Lock()
	left := len(c.queue)
	c.queue = nil
	c.mu.Unlock()
	if left > 0 {
		c.dropped.Add(int64(left))
		c.log.Error("witness: checkpoints not witnessed at shutdown", "count", left, "witness", c.o.URL)
	}
	if c.receipts != nil {
		return c.receipts.Close()
	}
	return nil
}

// Failing returns why the last attempt to witness a checkpoint failed,
// nil once one succeeds (or none was made).
func (c *Client) Failing() error {
	if p := c.failing.Load(); p != nil {
		return *p
	}
	return nil
}

// Witnessed, Failures and Dropped count the checkpoints witnessed, the
// attempts that failed, and the checkpoints given up (queue full, or left
// at Close); Pending is how many wait.
func (c *Client) Witnessed() int64 { return c.witnessed.Load() }

// Failures counts the attempts that failed.
func (c *Client) Failures() int64 { return c.failures.Load() }

// Dropped counts the checkpoints given up.
func (c *Client) Dropped() int64 { return c.dropped.Load() }

// Pending is how many checkpoints wait to be sent.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// LastWitnessed is when the last receipt came (the zero time if none).
func (c *Client) LastWitnessed() time.Time {
	if n := c.lastOK.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// run sends the queue's checkpoints in order.
func (c *Client) run() {
	defer close(c.done)
	backoff := time.Second
	var lastLogged time.Time
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			closing := c.closing
			c.mu.Unlock()
			if closing {
				return
			}
			select {
			case <-c.wake:
				continue
			case <-c.ctx.Done():
				return
			}
		}
		cp := c.queue[0]
		c.mu.Unlock()
		err := c.send(cp)
		var refused *refusal
		switch {
		case err == nil:
			if c.failing.Swap(nil) != nil {
				c.log.Info("witness: checkpoints witnessed again", "witness", c.o.URL)
			}
			backoff, lastLogged = time.Second, time.Time{}
			c.pop(cp)
			continue
		case errors.As(err, &refused):
			c.pop(cp) // it would refuse it again
		}
		c.failures.Add(1)
		c.failing.Store(&err)
		if now := time.Now(); now.Sub(lastLogged) >= failureLogEvery {
			c.log.Error("witness: a checkpoint was not witnessed", "err", err, "witness", c.o.URL,
				"checkpoint", cp.Time.UTC().Format(time.RFC3339Nano), "pending", c.Pending())
			lastLogged = now
		}
		if refused != nil {
			continue
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, retryMax)
	}
}

// pop removes cp from the head of the queue, unless Submit dropped it
// meanwhile.
func (c *Client) pop(cp audit.Checkpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) > 0 && c.queue[0].Signature == cp.Signature {
		c.queue = c.queue[1:]
	}
}

// refusal is a witness's answer that it will not witness a checkpoint:
// asking again would not change it.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// send posts one checkpoint and keeps its receipt.
func (c *Client) send(cp audit.Checkpoint) error {
	body, err := json.Marshal(&cp)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String()+"/v1/checkpoints", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxCheckpoint*2))
	if err != nil {
		return fmt.Errorf("witness: reading its answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		json.Unmarshal(data, &e)
		msg := fmt.Sprintf("witness: %s: %s", resp.Status, e.Error)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
			return &refusal{msg}
		}
		return errors.New(msg)
	}
	var rec Receipt
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Errorf("witness: its answer is not a receipt: %w", err)
	}
	if err := rec.Verify(c.o.Key, cp.Key); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	if rec.Checkpoint.Head != cp.Head || !rec.Checkpoint.Time.Equal(cp.Time) {
		return errors.New("witness: the receipt is for another checkpoint")
	}
	if c.receipts != nil {
		line, _ := json.Marshal(&rec)
		if _, err := c.receipts.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("witness: keeping the receipt: %w", err)
		}
	}
	c.witnessed.Add(1)
	c.lastOK.Store(time.Now().UnixNano())
	return nil
}
