package main

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
	"github.com/robotsgate/robotsgate/statelock"
	"github.com/robotsgate/robotsgate/witness"
)

// witnessCommand is `robotsgate witness -allow KEY... -tls-cert FILE -tls-key FILE [-listen ADDR] [-dir DIR] [-max-age D]`.
var witnessCommand = &command{
	name:     "witness",
	synopsis: "-allow KEY... -tls-cert FILE -tls-key FILE [-listen ADDR] [-dir DIR] [-max-age D]",
	summary:  "run a witness for other robotsgate instances' audit log checkpoints (log.witness)",
	details: "Runs a witness: an HTTPS service that receives the checkpoints of the audit logs of the\n" +
		"robotsgate instances whose evidence keys -allow names (each as robotsgate evidence-key\n" +
		"prints it), answers each with a receipt signed by the witness's own key, and keeps them,\n" +
		"one file per log in DIR, for `robotsgate verify -witness URL` to check a log against.\n" +
		"Run it where the operator of those instances does not write alone (a reviewer's host):\n" +
		"then whoever holds an evidence key cannot rewrite a log's history unnoticed.\n\n" +
		"A checkpoint is witnessed only in the order of its log's checkpoints and within -max-age of\n" +
		"the witness's clock, so that a history rewritten later cannot be. The witness's key is\n" +
		"DIR/witness-key.pem (created on first start, mode 0600); its public half is printed at\n" +
		"start, for log.witness.key and verify -witness-key. One witness per DIR (locked).\n\n" +
		"Exit status: 0 stopped by SIGINT or SIGTERM, 1 it could not start, 3 usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		listen := fs.String("listen", "127.0.0.1:8443", "serve HTTPS on `ADDR`")
		dir := fs.String("dir", "robotsgate-witness", "keep the witness's key and the receipts in `DIR`")
		var allow fileList
		fs.Var(&allow, "allow", "witness the log of the evidence `KEY` (base64, as robotsgate evidence-key prints it);\nrepeat for several")
		certFile := fs.String("tls-cert", "", "the witness's TLS certificate `FILE` (PEM)")
		keyFile := fs.String("tls-key", "", "the TLS certificate's key `FILE` (PEM)")
		maxAge := fs.Duration("max-age", witness.DefaultMaxAge, "refuse a checkpoint older than `D` by the witness's clock")
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[0]))
			}
			if len(allow) == 0 {
				return 0, usageError("no -allow KEY: the witness would witness nothing")
			}
			if *certFile == "" || *keyFile == "" {
				return 0, usageError("-tls-cert and -tls-key are required: a witness is served over HTTPS")
			}
			var logs []ed25519.PublicKey
			for _, k := range allow {
				pub, err := witness.ParsePublicKey(k)
				if err != nil {
					return 0, usageError("-allow: " + err.Error())
				}
				logs = append(logs, pub)
			}
			return runWitness(*listen, *dir, logs, *certFile, *keyFile, *maxAge, s)
		}
	},
}

func runWitness(listen, dir string, logs []ed25519.PublicKey, certFile, keyFile string, maxAge time.Duration, s stdio) (int, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return 1, fmt.Errorf("witness TLS certificate: %w", err)
	}
	lock, err := statelock.Dir(dir)
	if err != nil && !errors.Is(err, statelock.ErrUnsupported) {
		if who := inUse(err); who != "" {
			return 1, fmt.Errorf("%s is in use by %s: one witness per directory", dir, who)
		}
		return 1, err
	}
	defer lock.Release()
	key, _, err := auditlog.LoadOrCreateKey(filepath.Join(dir, "witness-key.pem"))
	if err != nil {
		return 1, fmt.Errorf("witness key: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(s.errOut, nil))
	srv, err := witness.NewServer(witness.ServerOptions{Dir: filepath.Join(dir, "logs"), Key: key, Logs: logs, MaxAge: maxAge})
	if err != nil {
		return 1, err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return 1, fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ErrorLog:  slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	pub := srv.PublicKey()
	fmt.Fprintf(s.errOut, "robotsgate witness: key %s (fingerprint %s), for log.witness.key and verify -witness-key\n",
		base64.StdEncoding.EncodeToString(pub), audit.KeyFingerprint(pub))
	for _, l := range logs {
		fmt.Fprintf(s.errOut, "robotsgate witness: witnesses the log of %s\n", audit.KeyFingerprint(l))
	}
	fmt.Fprintf(s.errOut, "robotsgate witness: witness on https://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return 1, err
	case <-sigs:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		return 0, nil
	}
}
