package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/robotsgate/robotsgate/certs"
)

// setup is one column of the table: a proxy running, pinned to the proxy
// CPU.
type setup struct {
	name  string // as -setups names it
	title string // the column's heading
	plain *url.URL
	tls   *url.URL       // CONNECT with interception; nil: not measured
	roots *x509.CertPool // trusts the interception CA
	signs bool           // signs every request it forwards (Web Bot Auth)
	proc  *proc
}

// setupKinds are the columns in the table's order; the flag -setups picks
// among them. Each start function documents the configuration and why it
// is the fair one.
var setupKinds = []struct {
	name    string
	dflt    bool // measured unless -setups says otherwise
	tools   map[string]string
	summary string // for -help and the report's legend
	start   func(e *env, name string) (*setup, error)
}{
	{"privoxy", true, map[string]string{"privoxy": "privoxy"},
		"Privoxy, forwarding only (toggle 0, no actions or filter files), no log (its default: no per-request log), server connections reused (keep-alive-timeout 300, default-server-timeout 60); plain HTTP only",
		startPrivoxy},
	{"squid", true, map[string]string{"squid": "squid"},
		"Squid, cache deny all, access_log none; HTTPS through an ssl-bump port (peek at step 1, then bump; leaves minted from an ECDSA P-256 CA and cached in memory)",
		func(e *env, name string) (*setup, error) { return startSquid(e, name, false) }},
	{"squid-log", false, map[string]string{"squid": "squid"},
		"Squid as above with its default access log on (access_log daemon:FILE squid, as Debian's squid.conf has it)",
		func(e *env, name string) (*setup, error) { return startSquid(e, name, true) }},
	{"goproxy", true, nil,
		"goproxy v1.9.2 tuned (internal/wrkbench: 256 idle upstream connections per host, Connection: close not copied upstream, MITM with an ECDSA P-256 CA and a leaf per host cached), no log",
		startGoproxy},
	{"nethttp", true, nil,
		"the net/http floor (internal/wrkbench -floor): net/http's server and httputil.ReverseProxy with goproxy's tuned transport, no logic, no log; CONNECT hijacked and intercepted (ECDSA P-256 leaf per host cached) into a second net/http server, as robotsgate does; what any proxy built on them pays per request before its own work",
		startFloor},
	{"robotsgate", true, nil,
		"robotsgate built from the tree with its defaults (audit log and robots.txt archive on, in a temporary state_dir; interception CA created at start), egress allowed to the loopback origin",
		startRobotsgate},
	{"robotsgate-noaudit", true, nil,
		"robotsgate as above with log.audit: \"\"",
		startRobotsgate},
	{"robotsgate-botauth", true, nil,
		"robotsgate as its defaults (audit on) with Web Bot Auth signing on (bot_auth.signature_agent set): every forwarded request signed",
		startRobotsgate},
}

// env is what every setup shares.
type env struct {
	dir        string // the run's temporary directory: everything is written under it
	root       string // the module's directory
	ps         *procs
	proxyCPU   string
	loadCPU    string
	origin     string // plain HTTP origin, host:port
	originTLS  string // HTTPS origin, host:port
	originCA   string // its CA certificate (PEM)
	robotsgate string // binary
	wrkbench   string // binary
	squid      squidBuild
	proxyUser  *syscall.Credential // Squid's user when running as root
	logf       func(string, ...any)
}

// mkdir makes a directory under the run's directory that the proxy user
// (Squid) can read.
func (e *env) mkdir(name string) (string, error) {
	d := filepath.Join(e.dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	return d, nil
}

// newCA creates an interception CA (ECDSA P-256, the same kind robotsgate
// creates) in dir/ca and returns its files and a pool trusting it.
func newCA(dir string) (certFile, keyFile string, roots *x509.CertPool, err error) {
	certFile, keyFile, err = certs.CreateCA(filepath.Join(dir, "ca"), false, time.Now())
	if err != nil {
		return "", "", nil, err
	}
	ca, err := certs.LoadCA(certFile, keyFile)
	if err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, ca.CertPool(), nil
}

func proxyURL(addr string) *url.URL { return &url.URL{Scheme: "http", Host: addr} }

// startPrivoxy: Privoxy as a forwarding proxy. No actionsfile and no
// filterfile lines, and toggle 0 ("act as a pure forwarding proxy"), so no
// action or filter runs; no logfile and no debug lines, which logs only
// fatal errors (Debian's config names a logfile but no debug level, so it
// writes no line per request either). Tuned as goproxy is, so that it
// reuses its connections: keep-alive-timeout 300 (Debian's 5 is for
// browsers; its documentation suggests 300) and default-server-timeout 60
// (unset, Privoxy reuses no server connection whose server does not send
// Keep-Alive: timeout=, as Go's does not: a new upstream connection per
// request; the origin keeps idle connections 90 s).
func startPrivoxy(e *env, name string) (*setup, error) {
	dir, err := e.mkdir(name)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte(strings.Join([]string{
		"confdir " + dir,
		"logdir " + dir,
		"listen-address " + addr,
		"toggle 0",
		"enable-remote-toggle 0",
		"enable-edit-actions 0",
		"keep-alive-timeout 300",
		"default-server-timeout 60",
		"socket-timeout 300",
	}, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	p, err := e.ps.start(name, e.proxyCPU, filepath.Join(dir, "privoxy.out"), nil, findBinary("privoxy"), "--no-daemon", conf)
	if err != nil {
		return nil, err
	}
	if err := waitListening(p, addr, 20*time.Second); err != nil {
		return nil, err
	}
	v := firstLine("Privoxy version", findBinary("privoxy"), "--version")
	title := "Privoxy"
	if f := strings.Fields(v); len(f) >= 3 {
		title += " " + f[2]
	}
	return &setup{name: name, title: title, plain: proxyURL(addr), proc: p}, nil
}

// startSquid: Squid with nothing cached (cache deny all: every request
// goes to the origin, which the run checks), access_log none unless
// withLog, loopback clients allowed (Debian's rules also refuse CONNECT to
// ports other than 443, which the loopback origin does not use). HTTPS is
// bumped on a second port: peek at the client's hello, then bump, so the
// leaf mimics the origin's certificate (its IP address in
// subjectAltName; bumping at step 1 mints a leaf with a common name only,
// which clients reject); the leaf's key is the CA's (Squid's way), an
// ECDSA P-256 one, and leaves are cached in memory (4 MB). It trusts the
// origin's CA upstream. Run as Debian's Squid user (proxy) when this
// program runs as root. Its DNS server is 127.0.0.1 (the origin is an IP
// address: nothing to resolve), so Squid sends nothing off the machine.
func startSquid(e *env, name string, withLog bool) (*setup, error) {
	dir, err := e.mkdir(name)
	if err != nil {
		return nil, err
	}
	plainAddr, err := freeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	lines := []string{
		"http_port " + plainAddr,
		"visible_hostname peerbench",
		"acl loopback src 127.0.0.0/8",
		"http_access allow loopback",
		"http_access deny all",
		"cache deny all",
		"cache_log " + filepath.Join(dir, "cache.log"),
		"pid_filename none",
		"coredump_dir " + dir,
		"netdb_filename none",
		"pinger_enable off",
		"dns_nameservers 127.0.0.1",
		"shutdown_lifetime 0 seconds",
	}
	if withLog {
		lines = append(lines,
			"logfile_daemon "+filepath.Join(e.squid.libDir, "log_file_daemon"),
			"access_log daemon:"+filepath.Join(dir, "access.log")+" squid")
	} else {
		lines = append(lines, "access_log none")
	}
	s := &setup{name: name, title: "Squid " + e.squid.version, plain: proxyURL(plainAddr)}
	if withLog {
		s.title += ", access log on"
	}
	var bumpAddr string
	if e.squid.bump {
		certFile, keyFile, roots, err := newCA(dir)
		if err != nil {
			return nil, err
		}
		if bumpAddr, err = freeAddr("127.0.0.1"); err != nil {
			return nil, err
		}
		db := filepath.Join(dir, "ssl_db")
		certgen := filepath.Join(e.squid.libDir, "security_file_certgen")
		lines = append(lines,
			fmt.Sprintf("http_port %s ssl-bump tls-cert=%s tls-key=%s generate-host-certificates=on dynamic_cert_mem_cache_size=4MB", bumpAddr, certFile, keyFile),
			fmt.Sprintf("sslcrtd_program %s -s %s -M 4MB", certgen, db),
			"sslcrtd_children 4 startup=1 idle=1",
			"tls_outgoing_options cafile="+e.originCA,
			"acl step1 at_step SslBump1",
			"ssl_bump peek step1",
			"ssl_bump bump all",
		)
		if err := e.chownProxy(dir); err != nil {
			return nil, err
		}
		cmd := exec.Command(certgen, "-c", "-s", db, "-M", "4MB")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.proxyUser}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initialising Squid's certificate database: %v\n%s", err, out)
		}
		s.tls, s.roots = proxyURL(bumpAddr), roots
	}
	conf := filepath.Join(dir, "squid.conf")
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := e.chownProxy(dir); err != nil {
		return nil, err
	}
	p, err := e.ps.start(name, e.proxyCPU, filepath.Join(dir, "squid.out"), e.proxyUser, e.squid.bin, "-N", "-f", conf)
	if err != nil {
		return nil, err
	}
	s.proc = p
	for _, a := range []string{plainAddr, bumpAddr} {
		if a == "" {
			continue
		}
		if err := waitListening(p, a, 30*time.Second); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "cache.log"))
			return nil, fmt.Errorf("%w\n--- cache.log:\n%s", err, log)
		}
	}
	return s, nil
}

// chownProxy gives Squid's user the files of its directory.
func (e *env) chownProxy(dir string) error {
	if e.proxyUser == nil {
		return nil
	}
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(e.proxyUser.Uid), int(e.proxyUser.Gid))
	})
}

// squidUser is the user Squid runs as when this program runs as root:
// Debian's "proxy" (Squid refuses to run as root). It is set before the
// program starts, not by Squid, so that the parent-death signal stays.
func squidUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("proxy")
	if err != nil {
		return nil, fmt.Errorf("squid's user: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// startGoproxy: internal/wrkbench's tuned goproxy, intercepting with a CA
// of its own.
func startGoproxy(e *env, name string) (*setup, error) {
	s, err := startWrkbench(e, name, "-goproxy")
	if err != nil {
		return nil, err
	}
	s.title = "goproxy tuned"
	if v := firstLine("github.com/elazarl/goproxy", "go", "version", "-m", e.wrkbench); v != "" {
		if f := strings.Fields(v); len(f) >= 3 {
			s.title = "goproxy " + strings.TrimPrefix(f[2], "v") + " tuned"
		}
	}
	return s, nil
}

// startFloor: internal/wrkbench's net/http floor, intercepting with a CA
// of its own.
func startFloor(e *env, name string) (*setup, error) {
	s, err := startWrkbench(e, name, "-floor")
	if err != nil {
		return nil, err
	}
	s.title = "net/http floor"
	return s, nil
}

// startWrkbench runs internal/wrkbench with only the proxy its flag (-goproxy
// or -floor) names, on a free loopback port, intercepting with a CA of its
// own and trusting the origin's.
func startWrkbench(e *env, name, flag string) (*setup, error) {
	dir, err := e.mkdir(name)
	if err != nil {
		return nil, err
	}
	certFile, keyFile, roots, err := newCA(dir)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	// -goproxy "" first: the flag named last wins, so -goproxy ADDR still can.
	argv := []string{e.wrkbench, "-origin", "", "-goproxy", "", flag, addr,
		"-mitm-ca-cert", certFile, "-mitm-ca-key", keyFile, "-upstream-ca", e.originCA}
	p, err := e.ps.start(name, e.proxyCPU, filepath.Join(dir, name+".out"), nil, argv...)
	if err != nil {
		return nil, err
	}
	if err := waitListening(p, addr, 20*time.Second); err != nil {
		return nil, err
	}
	return &setup{name: name, plain: proxyURL(addr), tls: proxyURL(addr), roots: roots, proc: p}, nil
}

// startRobotsgate: the real binary with its defaults but what a loopback
// benchmark needs: its listeners on free loopback ports (admin too, as by
// default), egress allowed to the origin's address (private addresses are
// refused by default), the origin's CA trusted upstream. The state_dir is
// the run's: the interception CA (ECDSA P-256) is created there at start,
// and with the defaults the audit log, the evidence key and the robots.txt
// archive too.
func startRobotsgate(e *env, name string) (*setup, error) {
	dir, err := e.mkdir(name)
	if err != nil {
		return nil, err
	}
	listen, err := freeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr("127.0.0.1")
	if err != nil {
		return nil, err
	}
	state := filepath.Join(dir, "state")
	originIP, _, _ := strings.Cut(e.origin, ":")
	conf := []string{
		"state_dir: " + state,
		"listen: " + listen,
		"admin_listen: " + admin,
		"egress:",
		"  allow_networks: [" + originIP + "/32]",
		"mitm:",
		"  upstream_ca: " + e.originCA,
	}
	s := &setup{name: name, title: "robotsgate (defaults: audit on)"}
	switch name {
	case "robotsgate-noaudit":
		conf = append(conf, "log:", `  audit: ""`)
		s.title = "robotsgate, `log.audit: \"\"`"
	case "robotsgate-botauth":
		conf = append(conf, "bot_auth:", "  signature_agent: https://peerbench.invalid/.well-known/http-message-signatures-directory")
		s.title, s.signs = "robotsgate, Web Bot Auth signing (audit on)", true
	}
	confFile := filepath.Join(dir, "robotsgate.yaml")
	if err := os.WriteFile(confFile, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	p, err := e.ps.start(name, e.proxyCPU, filepath.Join(dir, "robotsgate.out"), nil, e.robotsgate, "serve", "-config", confFile)
	if err != nil {
		return nil, err
	}
	if err := waitListening(p, listen, 30*time.Second); err != nil {
		return nil, err
	}
	ca, err := certs.LoadCA(filepath.Join(state, certs.CertFileName), filepath.Join(state, certs.KeyFileName))
	if err != nil {
		return nil, fmt.Errorf("%s's interception CA: %w", name, err)
	}
	s.plain, s.tls, s.roots, s.proc = proxyURL(listen), proxyURL(listen), ca.CertPool(), p
	return s, nil
}
