package main

import (
	"fmt"
	"log/slog"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/proxy"
)

// Exit statuses of a configuration test (serve -t, check -config FILE with
// no URL), as squid -k parse and nginx -t have them.
const (
	exitConfigValid   = 0
	exitConfigInvalid = 1
)

// testConfiguration checks what serve would check before it creates or
// opens anything: the file parses and validates (errors name the key and
// line), the files it names read (mitm.upstream_ca, auth.htpasswd,
// egress.deny_hosts_files, the Redis password and CA files), and an
// interception CA that exists loads (both halves, matching). Nothing is
// created, listened on or contacted: it runs beside a proxy in service,
// before a reload. It returns the exit status.
func testConfiguration(configPath, listen, adminListen string, s stdio) int {
	name := configPath
	if name == "" {
		name = "the built-in defaults"
	}
	if err := checkConfiguration(configPath, listen, adminListen); err != nil {
		fmt.Fprintf(s.errOut, "robotsgate: %v\n", err)
		fmt.Fprintf(s.out, "configuration %s: invalid\n", name)
		return exitConfigInvalid
	}
	fmt.Fprintf(s.out, "configuration %s: valid\n", name)
	return exitConfigValid
}

func checkConfiguration(configPath, listen, adminListen string) error {
	cfg, err := loadConfig(configPath, listen, adminListen)
	if err != nil {
		return err
	}
	if err := proxy.CheckFiles(cfg); err != nil {
		return err
	}
	useLegacyCA(&cfg, slog.New(slog.DiscardHandler)) // the CA serve would use
	return checkExistingCA(cfg)
}

// checkExistingCA loads the interception CA when its files exist (serve
// creates both when neither does, and refuses to start with one alone).
func checkExistingCA(cfg config.Config) error {
	cert, key := exists(cfg.MITM.CACert), exists(cfg.MITM.CAKey)
	switch {
	case !cfg.MITM.Enabled || !cert && !key:
		return nil
	case !key:
		return fmt.Errorf("interception CA: the certificate %s exists but its key %s is missing", cfg.MITM.CACert, cfg.MITM.CAKey)
	case !cert:
		return fmt.Errorf("interception CA: the key %s exists but its certificate %s is missing", cfg.MITM.CAKey, cfg.MITM.CACert)
	}
	if _, err := certs.LoadCA(cfg.MITM.CACert, cfg.MITM.CAKey); err != nil {
		return fmt.Errorf("interception CA: %w", err)
	}
	return nil
}
