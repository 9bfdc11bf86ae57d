//go:build linux

// Package netnstest gives tests a private Linux network namespace: its own
// loopback with the addresses a test chooses (documentation addresses such
// as 203.0.113.10 for origins), its own nftables rules and its own
// /etc/hosts, so that a test can redirect ports 80 and 443 and give names
// to addresses without touching the machine's network. It needs root,
// iproute2 and (for rules) nft; a test is skipped, saying why, without
// them. Everything it creates is removed when the test ends.
package netnstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// NS is a network namespace made for one test.
type NS struct {
	Name string
}

// New creates a namespace whose loopback is up and carries addrs (each
// as a /32 or /128), or skips the test when it cannot (not root, no ip).
func New(t testing.TB, addrs ...string) *NS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace (ip netns add); CI runs as root")
	}
	if tool("ip") == "" {
		t.Skip("needs iproute2's ip to create a network namespace (apt-get install iproute2)")
	}
	b := make([]byte, 4)
	rand.Read(b)
	n := &NS{Name: "rgtest-" + hex.EncodeToString(b)}
	run(t, tool("ip"), "netns", "add", n.Name)
	t.Cleanup(func() {
		exec.Command(tool("ip"), "netns", "delete", n.Name).Run()
		os.RemoveAll(filepath.Join("/etc/netns", n.Name))
	})
	run(t, tool("ip"), "-n", n.Name, "link", "set", "lo", "up")
	for _, a := range addrs {
		prefix := a + "/32"
		if strings.Contains(a, ":") {
			prefix = a + "/128"
		}
		run(t, tool("ip"), "-n", n.Name, "addr", "add", prefix, "dev", "lo")
	}
	return n
}

// Link joins n and other with a veth pair: n's end gets addr, other's
// otherAddr (CIDR, e.g. 10.99.0.1/24), both up. It returns the names of
// the two ends, n's first.
func (n *NS) Link(t testing.TB, addr string, other *NS, otherAddr string) (string, string) {
	t.Helper()
	a, b := "v"+n.Name[len("rgtest-"):], "w"+n.Name[len("rgtest-"):] // at most 15 bytes
	run(t, tool("ip"), "link", "add", a, "netns", n.Name, "type", "veth", "peer", "name", b, "netns", other.Name)
	run(t, tool("ip"), "-n", n.Name, "addr", "add", addr, "dev", a)
	run(t, tool("ip"), "-n", other.Name, "addr", "add", otherAddr, "dev", b)
	run(t, tool("ip"), "-n", n.Name, "link", "set", a, "up")
	run(t, tool("ip"), "-n", other.Name, "link", "set", b, "up")
	return a, b
}

// Route adds a route in the namespace (ip route add ROUTE...).
func (n *NS) Route(t testing.TB, route ...string) {
	t.Helper()
	run(t, tool("ip"), append([]string{"-n", n.Name, "route", "add"}, route...)...)
}

// NeedNft skips the test when nft (nftables) is missing.
func NeedNft(t testing.TB) {
	t.Helper()
	if tool("nft") == "" {
		t.Skip("needs nft to install REDIRECT rules (make deps installs Debian's nftables)")
	}
}

// Nft loads an nftables ruleset into the namespace.
func (n *NS) Nft(t testing.TB, ruleset string) {
	t.Helper()
	NeedNft(t)
	cmd := exec.Command(tool("ip"), "netns", "exec", n.Name, tool("nft"), "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f in %s: %v: %s\nruleset:\n%s", n.Name, err, out, ruleset)
	}
}

// Hosts gives the namespace's processes (run with Command) an /etc/hosts
// of these lines ("203.0.113.10 site-a.test"), besides localhost.
func (n *NS) Hosts(t testing.TB, lines ...string) {
	t.Helper()
	dir := filepath.Join("/etc/netns", n.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "127.0.0.1 localhost\n::1 localhost\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Command runs name inside the namespace (ip netns exec, which also
// mounts the namespace's /etc/hosts).
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, tool("ip"), append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Prefix is the command line that runs a command inside the namespace
// (ip netns exec NAME), to put before it.
func (n *NS) Prefix() []string {
	return []string{tool("ip"), "netns", "exec", n.Name}
}

// Listen opens a TCP listener inside the namespace, from this process.
func (n *NS) Listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := n.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, n.Name, err)
	}
	return ln
}

// Dial connects to addr from inside the namespace, from this process.
func (n *NS) Dial(addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var err error
		c, err = net.Dial("tcp", addr)
		return err
	})
	return c, err
}

// Do runs f on an OS thread that has entered the namespace; sockets f
// creates belong to the namespace for their whole life. The thread
// returns to this process's namespace, or is discarded if it cannot.
func (n *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(self)
		target, err := unix.Open(filepath.Join("/run/netns", n.Name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w (the thread is discarded)", err))
			return // still locked: the runtime ends the thread with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// tool is the path of an administration tool: on PATH, or in /usr/sbin or
// /sbin (not on every PATH); "" when missing.
func tool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
