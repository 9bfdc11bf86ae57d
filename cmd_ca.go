package main

import (
	"fmt"
	"io"
	"time"

	"github.com/robotsgate/robotsgate/certs"
)

// caCommand implements `robotsgate ca init [-dir certs] [-force]`.
func caCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprintln(stderr, "usage: robotsgate ca init [-dir certs] [-force]")
		return errUsage
	}
	fs := newFlagSet("ca init", stderr)
	dir := fs.String("dir", "certs", "directory for ca.pem and ca-key.pem")
	force := fs.Bool("force", false, "replace an existing CA")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	certPath, keyPath, err := certs.CreateCA(*dir, *force, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Created %s and %s (mode 0600).\n%s\n", certPath, keyPath, certs.TrustInstructions(certPath))
	return nil
}
