package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelBinary returns the redis-sentinel the tests run: the first on
// PATH, else one in sbinDirs (`make deps` installs Debian's redis-sentinel
// when there is none).
func SentinelBinary() (string, error) { return lookBinary("redis-sentinel") }

// StartReplica starts a redis-server replicating primary (over TLS, with
// primary's certificate, when primary serves TLS) and waits, bounded,
// until its link to primary is up and the initial copy is done.
func StartReplica(tb testing.TB, primary *Server) *Server {
	tb.Helper()
	host, port, _ := net.SplitHostPort(primary.Addr)
	opts := Options{Args: []string{"--replicaof", host, port}}
	if primary.opts.TLS {
		opts.TLS, opts.ShareTLS = true, primary
		opts.Args = append(opts.Args, "--tls-replication", "yes")
	}
	r := StartWith(tb, opts)
	r.WaitReplicating(30 * time.Second)
	return r
}

// WaitReplicating waits, at most timeout, until the server is a replica
// whose link to its primary is up and synchronised (INFO replication).
func (s *Server) WaitReplicating(timeout time.Duration) {
	s.tb.Helper()
	c := s.Client()
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") && !strings.Contains(info, "master_sync_in_progress:1") {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("replica %s not in sync within %v: %v\n%s", s.Addr, timeout, err, info)
		}
		time.Sleep(10 * time.Millisecond) // polling INFO: replication has no event to wait for
	}
}

// Client returns a go-redis client of the server (TLS when it serves TLS;
// no password), for the test's own commands; close it.
func (s *Server) Client() *redis.Client {
	o := &redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, MaxRetries: -1}
	if s.opts.TLS {
		o.TLSConfig = s.ClientTLS()
	}
	return redis.NewClient(o)
}

// Sentinel is a redis-sentinel process of one test.
type Sentinel struct {
	tb testing.TB
	// Addr is the sentinel's host:port.
	Addr   string
	tls    *Server // the primary whose certificate it serves, with TLS
	cmd    *exec.Cmd
	exited chan struct{}
}

// SentinelOptions configures StartSentinels.
type SentinelOptions struct {
	// Master is the name the sentinels monitor primary under.
	Master string
	// Quorum is how many sentinels must agree that the primary is down;
	// 0 means a majority of the sentinels started.
	Quorum int
	// DownAfter is how long the primary must not answer before a sentinel
	// thinks it down; 0 means 1s.
	DownAfter time.Duration
	// Args are more configuration lines for each sentinel.
	Args []string
}

// tlsLines are the configuration lines of a sentinel that serves TLS only,
// with primary's certificate, and speaks TLS to the data nodes.
func tlsLines(primary *Server, port string) []string {
	return []string{"port 0", "tls-port " + port, "tls-cert-file " + primary.certs.cert, "tls-key-file " + primary.certs.key,
		"tls-ca-cert-file " + primary.certs.ca, "tls-auth-clients no", "tls-replication yes"}
}

// StartSentinels starts n sentinels monitoring primary (and so its
// replicas) and waits, bounded, until each knows the others and every
// replica: a failover can then happen. With a primary that serves TLS
// they serve TLS only, with its certificate. They are killed in cleanup;
// tb skips when redis-sentinel is not installed.
func StartSentinels(tb testing.TB, primary *Server, n int, opts SentinelOptions) []*Sentinel {
	tb.Helper()
	path, err := SentinelBinary()
	if err != nil {
		tb.Skipf("%v: install it (make deps, or apt-get install redis-sentinel)", err)
	}
	if opts.Quorum == 0 {
		opts.Quorum = n/2 + 1
	}
	if opts.DownAfter == 0 {
		opts.DownAfter = time.Second
	}
	host, port, _ := net.SplitHostPort(primary.Addr)
	var ss []*Sentinel
	for range n {
		var s *Sentinel
		var lastErr error
		for range 5 { // a free port can be taken between probing and binding
			s = &Sentinel{tb: tb, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))}
			dir := tb.TempDir()
			conf := filepath.Join(dir, "sentinel.conf") // sentinel rewrites its file: one each
			_, p, _ := net.SplitHostPort(s.Addr)
			listen := []string{"port " + p}
			if primary.opts.TLS {
				s.tls, listen = primary, tlsLines(primary, p)
			}
			lines := append(append(listen, "bind 127.0.0.1", "daemonize no", "dir "+dir, "loglevel warning",
				fmt.Sprintf("sentinel monitor %s %s %s %d", opts.Master, host, port, opts.Quorum),
				fmt.Sprintf("sentinel down-after-milliseconds %s %d", opts.Master, opts.DownAfter.Milliseconds()),
				fmt.Sprintf("sentinel failover-timeout %s 10000", opts.Master),
				fmt.Sprintf("sentinel parallel-syncs %s 1", opts.Master),
			), opts.Args...)
			if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				tb.Fatal(err)
			}
			if lastErr = s.start(path, conf); lastErr == nil {
				break
			}
			s = nil
		}
		if s == nil {
			tb.Fatalf("redis-sentinel would not start: %v", lastErr)
		}
		tb.Cleanup(s.Kill)
		ss = append(ss, s)
	}
	for _, s := range ss {
		s.waitPeers(opts.Master, n-1, 60*time.Second)
	}
	return ss
}

// start runs redis-sentinel with conf and waits (bounded) until it
// answers PING.
func (s *Sentinel) start(path, conf string) error {
	s.cmd = exec.Command(path, conf)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-sentinel: %w", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
	srv := &Server{tb: s.tb, Addr: s.Addr, exited: s.exited}
	if s.tls != nil {
		srv.opts.TLS, srv.CAFile = true, s.tls.CAFile
	}
	if err := srv.waitReady(10 * time.Second); err != nil {
		s.Kill()
		return err
	}
	return nil
}

// Client returns a go-redis client of the sentinel; close it.
func (s *Sentinel) Client() *redis.SentinelClient {
	o := &redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, MaxRetries: -1}
	if s.tls != nil {
		o.TLSConfig = s.tls.ClientTLS()
	}
	return redis.NewSentinelClient(o)
}

// waitPeers waits, at most timeout, until the sentinel knows peers other
// sentinels (they discover each other through the primary's hello
// channel, every 2 s) and has a replica of master it is connected to and
// sees in sync: one it could promote.
func (s *Sentinel) waitPeers(master string, peers int, timeout time.Duration) {
	s.tb.Helper()
	c := s.Client()
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		m, err := c.Master(ctx, master).Result()
		if err == nil && m["num-other-sentinels"] == strconv.Itoa(peers) && s.promotable(c, master) {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("sentinel %s does not know its %d peers and a replica within %v: %v %v", s.Addr, peers, timeout, m, err)
		}
		time.Sleep(50 * time.Millisecond) // polling SENTINEL MASTER: discovery has no event to wait for
	}
}

// promotable reports whether the sentinel sees a replica of master that
// it could promote: flagged only "slave", its link to the primary up.
func (s *Sentinel) promotable(c *redis.SentinelClient, master string) bool {
	replicas, err := c.Replicas(context.Background(), master).Result()
	if err != nil {
		return false
	}
	for _, r := range replicas {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			return true
		}
	}
	return false
}

// Master returns the address the sentinel says master is at.
func (s *Sentinel) Master(master string) (string, error) {
	c := s.Client()
	defer c.Close()
	a, err := c.GetMasterAddrByName(context.Background(), master).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

// Kill kills the sentinel by PID and waits until it is gone. Idempotent.
func (s *Sentinel) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// SwitchWatch receives the +switch-master events of a sentinel.
type SwitchWatch struct {
	ps *redis.PubSub
	c  *redis.SentinelClient
	ch <-chan *redis.Message
}

// WatchSwitch subscribes to the sentinel's +switch-master events; the
// subscription is confirmed when it returns. Closed in cleanup.
func (s *Sentinel) WatchSwitch() *SwitchWatch {
	s.tb.Helper()
	c := s.Client()
	ps := c.Subscribe(context.Background(), "+switch-master")
	if _, err := ps.Receive(context.Background()); err != nil {
		s.tb.Fatalf("subscribe to +switch-master on %s: %v", s.Addr, err)
	}
	w := &SwitchWatch{ps: ps, c: c, ch: ps.Channel()}
	s.tb.Cleanup(func() { ps.Close(); c.Close() })
	return w
}

// Wait returns the new master's address of the next +switch-master event,
// or fails tb after timeout.
func (w *SwitchWatch) Wait(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case m := <-w.ch:
		// "<master name> <old ip> <old port> <new ip> <new port>"
		f := strings.Fields(m.Payload)
		if len(f) != 5 {
			tb.Fatalf("+switch-master %q", m.Payload)
		}
		return net.JoinHostPort(f[3], f[4])
	case <-time.After(timeout):
		tb.Fatalf("no +switch-master within %v", timeout)
		return ""
	}
}
