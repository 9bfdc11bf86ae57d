package pacing

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServerPath is the redis-server the tests run (`make test` installs
// Debian's package when it is missing).
const redisServerPath = "/usr/bin/redis-server"

// redisServer is a redis-server process of one test, on a free loopback
// port, without persistence. It can be killed, restarted on the same port,
// frozen (SIGSTOP) and thawed.
type redisServer struct {
	tb     testing.TB
	addr   string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

// startRedis starts a redis-server for tb and stops it in cleanup; it skips
// tb when redis-server is not installed.
func startRedis(tb testing.TB) *redisServer {
	tb.Helper()
	if _, err := os.Stat(redisServerPath); err != nil {
		tb.Skipf("%s not installed (run `make deps` or apt-get install redis-server): %v", redisServerPath, err)
	}
	var lastErr error
	for range 5 { // a free port can be taken between probing and binding
		s := &redisServer{tb: tb, port: freePort(tb)}
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if lastErr = s.start(); lastErr == nil {
			tb.Cleanup(s.kill)
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
func (s *redisServer) start() error {
	s.cmd = exec.Command(redisServerPath,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", s.tb.TempDir(), "--loglevel", "warning")
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
func (s *redisServer) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("redis-server on port %d exited", s.port)
		default:
		}
		if ping(s.addr) == nil {
			return nil
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	s.kill()
	return fmt.Errorf("redis-server on port %d: no PONG within %v", s.port, timeout)
}

// ping sends one PING over a fresh connection.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// kill kills the server by PID and waits until it is gone. Idempotent.
func (s *redisServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies as well, but be clean
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// restart starts a new server on the same port.
func (s *redisServer) restart() {
	s.tb.Helper()
	s.kill()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) { // the port may linger a moment
		if err = s.start(); err == nil {
			return
		}
	}
	s.tb.Fatalf("restart redis-server on port %d: %v", s.port, err)
}

// freeze stops the server with SIGSTOP: connections are accepted by the
// kernel but nothing answers. It is thawed in cleanup.
func (s *redisServer) freeze() {
	s.tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.tb.Fatalf("SIGSTOP redis-server: %v", err)
	}
	s.tb.Cleanup(s.thaw)
}

// thaw resumes a frozen server.
func (s *redisServer) thaw() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// TestMain silences go-redis' own log: the tests provoke dial failures on
// purpose and check the errors themselves.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

// quietLogger discards go-redis' log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
