package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/proxy"
)

// drainTimeout bounds how long SIGTERM waits for in-flight requests.
const drainTimeout = 30 * time.Second

// serveCommand is `robotsgate [serve]`, the command when none is given.
var serveCommand = &command{
	name:     "serve",
	synopsis: "[-config FILE] [-listen ADDR] [-admin-listen ADDR] [-t]",
	summary:  "run the proxy (the command when none is given)",
	details: "Runs the proxy until SIGINT or SIGTERM (which drain in-flight requests); SIGHUP reloads\n" +
		"the configuration and reopens the audit log. Without -config it runs on the built-in\n" +
		"defaults. With interception on and no CA yet, it creates one (mitm.ca_cert, default\n" +
		"ca.pem in the state directory: robotsgate-state/ca.pem, or state_dir/ca.pem) and prints\n" +
		"how to trust it.\n\n" +
		"With -t it only tests the configuration, as squid -k parse and nginx -t do: the file\n" +
		"parses and validates, the files it names read, an existing CA loads; nothing is created,\n" +
		"listened on or contacted. Exit status 0 valid, 1 invalid (the error names the key and\n" +
		"line); check -config FILE with no URL does the same.",
	usageExit: exitUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML); the built-in defaults without one")
		def := config.Default()
		listen := fs.String("listen", "", "listen for proxy clients on `ADDR` (host:port) instead of the configuration's\nlisten (built-in default "+def.Listen+")")
		adminListen := fs.String("admin-listen", "", "serve the admin endpoints (metrics, health, status page) on `ADDR` instead of the\nconfiguration's admin_listen (built-in default "+def.AdminListen+`); "off" turns them off`)
		test := fs.Bool("t", false, "test the configuration and exit: 0 valid, 1 invalid (nothing is started)")
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q (serve takes only flags)", args[0]))
			}
			if *test {
				return testConfiguration(*configPath, *listen, *adminListen, s), nil
			}
			return 0, serve(*configPath, *listen, *adminListen, s.errOut)
		}
	},
}

func serve(configPath, listen, adminListen string, stderr io.Writer) error {
	cfg, err := loadConfig(configPath, listen, adminListen)
	if err != nil {
		return err
	}
	// Everything the configuration names is checked before anything is
	// created: a bad file must not leave a new CA behind.
	if err := proxy.CheckFiles(cfg); err != nil {
		return err
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Log.Level.SlogLevel())
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)
	applyMemoryLimit(cfg, logger)
	locks, err := lockState(cfg, logger)
	if err != nil {
		return err
	}
	defer locks.release()
	useLegacyCA(&cfg, logger)
	if err := checkKeyModes(cfg, logger); err != nil {
		return err
	}
	var ca *certs.CA
	if cfg.MITM.Enabled {
		var created bool
		ca, created, err = certs.EnsureCA(cfg.MITM.CACert, cfg.MITM.CAKey, time.Now())
		if err != nil {
			return fmt.Errorf("interception CA: %w", err)
		}
		if created {
			fmt.Fprintf(stderr, "Created the interception CA in %s.\n%s\n", cfg.MITM.CACert, certs.TrustInstructions(cfg.MITM.CACert))
		}
	}
	srv, err := proxy.New(cfg, proxy.Options{CA: ca, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv.Listening(ln.Addr()) // for the PAC file, which the admin listener may serve first
	inbound, err := listenInbound(cfg, srv)
	if err != nil {
		ln.Close()
		return err
	}
	// Each listener is guarded before any of them serves: from then on
	// its address is refused by the egress guard (listenInbound guards
	// its own, startAdmin the admin listener).
	ln = srv.Guard(ln, "proxy")
	admin, adminAddr, err := startAdmin(cfg.AdminListen, srv, logger)
	if err != nil {
		ln.Close()
		inbound.close()
		return err
	}
	adminShown := ""
	if admin != nil {
		warnIfAdminOpen(adminAddr, cfg.AdminAuth, logger)
		adminShown = adminAddr.String()
	}
	// Catch the signals before the proxy is announced or serves anything:
	// a SIGHUP or SIGTERM arriving just after startup must be handled, not
	// kill the process with the default action.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil {
			logger.Error("the proxy port stopped; /readyz fails until robotsgate is restarted", "err", err)
		}
	}()
	// Announce the proxy once it serves: whoever waits for the line (a
	// script, a test) may ask /readyz at once.
	select {
	case <-srv.Serving():
	case <-served:
	}
	logger.Info("robotsgate listening", "proxy", ln.Addr().String(), "admin", adminShown, "mitm", cfg.MITM.Enabled)
	fmt.Fprintf(stderr, "robotsgate %s: proxy on %s (export http_proxy=http://%[2]s https_proxy=http://%[2]s HTTP_PROXY=http://%[2]s HTTPS_PROXY=http://%[2]s)\n",
		shortVersion(), ln.Addr())

	inbound.announce(stderr, logger, cfg)
	// A listener that stops (an accept error retrying cannot mend; a
	// temporary one such as EMFILE is retried) is logged and makes /readyz
	// fail: the process goes on serving the others until it is told to
	// stop. Nothing a client does ends it.
	for _, in := range inbound {
		go func() {
			if err := in.serve(in.ln); err != nil {
				logger.Error("listener stopped; /readyz fails until robotsgate is restarted", "key", in.key, "err", err)
			}
		}()
	}
	err = waitForSignals(sigs, srv, admin, served, reloader{configPath, listen, adminListen, level}, logger)
	logger.Info("stopped", "err", err)
	return err
}

// inboundListener is a listener besides the proxy port: SOCKS5 or
// transparent.
type inboundListener struct {
	key, what, addr string // its configuration key; what it serves; its address
	ln              net.Listener
	serve           func(net.Listener) error
}

type inboundListeners []inboundListener

// listenInbound opens the SOCKS5 and transparent listeners the
// configuration asks for.
func listenInbound(cfg config.Config, srv *proxy.Server) (inboundListeners, error) {
	var out inboundListeners
	for _, l := range []inboundListener{
		{key: "socks.listen", what: "SOCKS5", addr: cfg.SOCKS.Listen, serve: srv.ServeSOCKS},
		{key: "transparent.http_listen", what: "transparent HTTP", addr: cfg.Transparent.HTTPListen, serve: srv.ServeTransparent},
		{key: "transparent.tls_listen", what: "transparent TLS", addr: cfg.Transparent.TLSListen, serve: srv.ServeTransparent},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			out.close()
			return nil, fmt.Errorf("%s: %w", l.key, err)
		}
		kind, _, _ := strings.Cut(l.key, ".") // socks, transparent
		l.ln = srv.Guard(ln, kind)
		out = append(out, l)
	}
	return out, nil
}

func (ls inboundListeners) close() {
	for _, l := range ls {
		l.ln.Close()
	}
}

// announce says where each listener is, and warns when transparent
// listeners run without a socket mark for robotsgate's own connections.
func (ls inboundListeners) announce(stderr io.Writer, logger *slog.Logger, cfg config.Config) {
	transparent := false
	for _, l := range ls {
		fmt.Fprintf(stderr, "robotsgate: %s on %s\n", l.what, l.ln.Addr())
		logger.Info("listening", "what", l.what, "addr", l.ln.Addr().String())
		transparent = transparent || strings.HasPrefix(l.key, "transparent.")
	}
	if transparent && cfg.Transparent.Mark == 0 {
		logger.Warn("transparent listeners, and no transparent.mark on robotsgate's own upstream connections: " +
			"the firewall rule must exclude them by owner (nftables meta skuid, iptables -m owner --uid-owner), " +
			"or they are redirected back to robotsgate")
	}
}

// reloader reloads the configuration on SIGHUP as it was loaded at start.
type reloader struct {
	configPath, listen, adminListen string
	level                           *slog.LevelVar // log.level applies on reload
}

// waitForSignals runs until SIGINT/SIGTERM (drain, then exit) and reloads the
// configuration on SIGHUP, keeping the old one if the new one is invalid.
// served is closed when the proxy port's Serve has returned.
func waitForSignals(sigs <-chan os.Signal, srv *proxy.Server, admin *http.Server, served <-chan struct{}, rl reloader, logger *slog.Logger) error {
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			rl.reload(srv, logger)
			continue
		}
		logger.Info("draining", "signal", sig.String(), "timeout", drainTimeout)
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		err := srv.Shutdown(ctx)
		if admin != nil {
			admin.Shutdown(ctx)
		}
		cancel()
		<-served
		return err
	}
	return nil
}

// reload reopens the audit log (for logrotate) and reloads the
// configuration; the outcome goes to the log, the metrics and the status
// page (NoteReload).
func (rl reloader) reload(srv *proxy.Server, logger *slog.Logger) {
	if err := srv.ReopenAudit(); err != nil {
		logger.Error("audit log reopen failed", "err", err)
	}
	cfg, err := loadConfig(rl.configPath, rl.listen, rl.adminListen)
	if err == nil {
		err = proxy.CheckFiles(cfg)
	}
	if err == nil {
		err = srv.Reload(cfg)
	}
	srv.NoteReload(err)
	if err != nil {
		logger.Error("config reload rejected; keeping the running config", "err", err)
		return
	}
	rl.level.Set(cfg.Log.Level.SlogLevel())
	logger.Info("config reloaded", "config", rl.configPath)
}

// loadConfig reads the configuration (defaults without a file) and applies
// the command-line overrides.
func loadConfig(path, listen, adminListen string) (config.Config, error) {
	cfg := config.Default()
	if path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			return cfg, err
		}
	}
	if listen != "" {
		cfg.Listen = listen
	}
	switch adminListen {
	case "":
	case "off":
		cfg.AdminListen = ""
	default:
		cfg.AdminListen = adminListen
	}
	return cfg, cfg.Validate()
}

// startAdmin serves the admin endpoints (metrics, health, explain, status
// page) on their own listener and returns its address; nil and "" when
// disabled.
// The admin listener is guarded as every listener is (proxy.Server.Guard:
// accept errors retried, connections capped, /readyz, its address refused
// by the egress guard).
func startAdmin(addr string, proxySrv *proxy.Server, logger *slog.Logger) (*http.Server, net.Addr, error) {
	if addr == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("admin listen: %w", err)
	}
	ln = proxySrv.Guard(ln, "admin")
	srv := &http.Server{Handler: proxySrv.AdminHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Error("admin listener stopped", "err", err)
		}
	}()
	return srv, ln.Addr(), nil
}

// warnIfAdminOpen warns when the admin listener is reachable beyond
// loopback without credentials: it shows clients' addresses and URLs, and
// /explain makes the proxy fetch robots.txt files.
func warnIfAdminOpen(addr net.Addr, auth bool, logger *slog.Logger) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().IsLoopback() || auth {
		return
	}
	logger.Warn("the admin listener is beyond loopback without credentials: anyone who can reach "+addr.String()+
		" reads the status page, the metrics and /explain; keep admin_listen on loopback or set admin_auth: true",
		"admin", addr.String())
}

// legacyCADir is where robotsgate created the interception CA before the
// state directory.
const legacyCADir = "certs"

// useLegacyCA keeps a CA created in certs/ (before the state directory)
// working: when the configuration leaves the CA's paths to state_dir, no
// CA is there yet and certs/ has one, that one is used, and the log says
// how to move it.
func useLegacyCA(cfg *config.Config, logger *slog.Logger) {
	if !cfg.InStateDir("mitm.ca_cert", cfg.MITM.CACert) || !cfg.InStateDir("mitm.ca_key", cfg.MITM.CAKey) || exists(cfg.MITM.CACert) {
		return
	}
	cert, key := filepath.Join(legacyCADir, "ca.pem"), filepath.Join(legacyCADir, "ca-key.pem")
	if !exists(cert) || !exists(key) {
		return
	}
	cfg.MITM.CACert, cfg.MITM.CAKey = cert, key
	logger.Info("using the interception CA in "+legacyCADir+"/, where robotsgate created it before the state directory; "+
		"move ca.pem and ca-key.pem to "+cfg.StateDir+"/ (or set mitm.ca_cert and mitm.ca_key) to keep it there",
		"ca_cert", cert)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
