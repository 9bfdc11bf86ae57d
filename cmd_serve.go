package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/proxy"
)

// drainTimeout bounds how long SIGTERM waits for in-flight requests.
const drainTimeout = 30 * time.Second

func serve(args []string, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	configPath := fs.String("config", "", "configuration file (YAML); built-in defaults without one")
	listen := fs.String("listen", "", "proxy address, overrides listen")
	adminListen := fs.String("admin-listen", "", `admin address, overrides admin_listen ("off" disables)`)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	cfg, err := loadConfig(*configPath, *listen, *adminListen)
	if err != nil {
		return err
	}
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
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
	admin, err := startAdmin(cfg.AdminListen, srv.AdminHandler(), logger)
	if err != nil {
		ln.Close()
		return err
	}
	// Catch the signals before the proxy is announced or serves anything:
	// a SIGHUP or SIGTERM arriving just after startup must be handled, not
	// kill the process with the default action.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	logger.Info("robotsgate listening", "proxy", ln.Addr().String(), "admin", cfg.AdminListen, "mitm", cfg.MITM.Enabled)
	fmt.Fprintf(stderr, "robotsgate %s: proxy on %s (export http_proxy=http://%[2]s https_proxy=http://%[2]s HTTP_PROXY=http://%[2]s HTTPS_PROXY=http://%[2]s)\n",
		version, ln.Addr())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	return waitForSignals(sigs, srv, admin, errc, *configPath, *listen, *adminListen, logger)
}

// waitForSignals runs until SIGINT/SIGTERM (drain, then exit) and reloads the
// configuration on SIGHUP, keeping the old one if the new one is invalid.
func waitForSignals(sigs <-chan os.Signal, srv *proxy.Server, admin *http.Server, errc chan error, configPath, listen, adminListen string, logger *slog.Logger) error {
	for {
		select {
		case err := <-errc:
			return err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				reload(srv, configPath, listen, adminListen, logger)
				continue
			}
			logger.Info("draining", "signal", sig.String(), "timeout", drainTimeout)
			ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
			err := srv.Shutdown(ctx)
			if admin != nil {
				admin.Shutdown(ctx)
			}
			cancel()
			<-errc
			return err
		}
	}
}

// reload reopens the audit log (for logrotate) and reloads the
// configuration.
func reload(srv *proxy.Server, configPath, listen, adminListen string, logger *slog.Logger) {
	if err := srv.ReopenAudit(); err != nil {
		logger.Error("audit log reopen failed", "err", err)
	}
	cfg, err := loadConfig(configPath, listen, adminListen)
	if err == nil {
		err = srv.Reload(cfg)
	}
	if err != nil {
		logger.Error("config reload rejected; keeping the running config", "err", err)
		return
	}
	logger.Info("config reloaded", "config", configPath)
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

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: cfg.Log.Level.SlogLevel()}))
}

// startAdmin serves the admin endpoints (metrics, health, explain, status
// page) on their own listener; nil when disabled.
func startAdmin(addr string, handler http.Handler, logger *slog.Logger) (*http.Server, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listen: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Error("admin listener stopped", "err", err)
		}
	}()
	return srv, nil
}
