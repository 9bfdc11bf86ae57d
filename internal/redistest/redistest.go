// Package redistest runs a real redis-server for tests: on a free loopback
// port, without persistence, killed by PID when the test ends. It can kill,
// restart on the same port, freeze (SIGSTOP) and thaw the server, and serve
// TLS only, with a CA and certificate made for the test.
package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
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

// sbinDirs are where a redis-server may be installed outside a non-root
// PATH; `make deps` looks there too, so that a server it accepts is never
// one the tests miss.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// Binary returns the redis-server the tests run: the first on PATH, else
// one in sbinDirs (`make test` installs Debian's package when there is
// none).
func Binary() (string, error) { return lookBinary("redis-server") }

// lookBinary finds name on PATH, else in sbinDirs.
func lookBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range sbinDirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH nor in %v", name, sbinDirs)
}

// Server is a redis-server process of one test.
type Server struct {
	tb   testing.TB
	path string // the redis-server binary
	// Addr is the server's host:port.
	Addr string
	// CAFile is the PEM file of the CA that signed the server's
	// certificate, with Options.TLS; "" otherwise.
	CAFile string
	port   int
	opts   Options
	certs  tlsFiles
	cmd    *exec.Cmd
	exited chan struct{}
}

// Options configures StartWith.
type Options struct {
	// Args are more redis-server arguments, each its own element (e.g.
	// "--requirepass", "secret").
	Args []string
	// TLS serves TLS only (no plain port), with a certificate for
	// 127.0.0.1 signed by a CA made for the test (Server.CAFile), not
	// asking clients for certificates.
	TLS bool
	// ShareTLS, with TLS, serves the certificate of that server instead of
	// one of its own (one CA for a primary and its replicas).
	ShareTLS *Server
}

// Start starts a redis-server for tb and kills it in cleanup; it skips tb
// when redis-server is not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartWith(tb, Options{})
}

// StartWith is Start with opts.
func StartWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	path, err := Binary()
	if err != nil {
		tb.Skipf("%v: install it (make deps, or apt-get install redis-server)", err)
	}
	var files tlsFiles
	switch {
	case opts.TLS && opts.ShareTLS != nil:
		files = opts.ShareTLS.certs
	case opts.TLS:
		files = writeTLSFiles(tb)
	}
	var lastErr error
	for range 5 { // a free port can be taken between probing and binding
		s := &Server{tb: tb, path: path, port: freePort(tb), opts: opts, certs: files, CAFile: files.ca}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if lastErr = s.start(); lastErr == nil {
			tb.Cleanup(s.Kill)
			return s
		}
	}
	tb.Fatalf("redis-server would not start: %v", lastErr)
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs redis-server on s.port and waits (bounded) until it answers
// PING.
func (s *Server) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", s.tb.TempDir(), "--loglevel", "warning"}
	if s.opts.TLS {
		args[1] = "0"
		args = append(args, "--tls-port", strconv.Itoa(s.port), "--tls-cert-file", s.certs.cert,
			"--tls-key-file", s.certs.key, "--tls-ca-cert-file", s.certs.ca, "--tls-auth-clients", "no")
	}
	s.cmd = exec.Command(s.path, append(args, s.opts.Args...)...)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
	return s.waitReady(10 * time.Second)
}

// waitReady polls PING until it answers, the process exits or the deadline
// passes.
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("redis-server on port %d exited", s.port)
		default:
		}
		if s.ping() == nil {
			return nil
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	s.Kill()
	return fmt.Errorf("redis-server on port %d: no PONG within %v", s.port, timeout)
}

// ping sends one PING over a fresh connection (TLS with Options.TLS). A
// server that wants a password answers -NOAUTH: it is up all the same.
func (s *Server) ping() error {
	c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if s.opts.TLS {
		c = tls.Client(c, s.ClientTLS())
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// ClientTLS returns a TLS configuration that trusts the server's CA (with
// Options.TLS).
func (s *Server) ClientTLS() *tls.Config {
	s.tb.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		s.tb.Fatalf("redis CA: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// Kill kills the server by PID and waits until it is gone. Idempotent.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies as well, but be clean
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Restart starts a new server on the same port.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) { // the port may linger a moment
		if err = s.start(); err == nil {
			return
		}
	}
	s.tb.Fatalf("restart redis-server on port %d: %v", s.port, err)
}

// Freeze stops the server with SIGSTOP: connections are accepted by the
// kernel but nothing answers. It is thawed in cleanup.
func (s *Server) Freeze() {
	s.tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.tb.Fatalf("SIGSTOP redis-server: %v", err)
	}
	s.tb.Cleanup(s.Thaw)
}

// Thaw resumes a frozen server.
func (s *Server) Thaw() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Quiet silences go-redis' own log: tests provoke dial failures on purpose
// and check the errors themselves. Call it from TestMain.
func Quiet() { redis.SetLogger(quietLogger{}) }

// quietLogger discards go-redis' log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
