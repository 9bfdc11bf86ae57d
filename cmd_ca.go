package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
)

// caCommand is `robotsgate ca init [-dir DIR] [-force]`.
var caCommand = &command{
	name:     "ca",
	synopsis: "init [-dir DIR] [-force]",
	summary:  "create the interception CA (ca init)",
	details: "ca init creates the CA that signs the certificates of intercepted HTTPS sites: DIR/ca.pem\n" +
		"and DIR/ca-key.pem (mode 0600), and prints how to make clients trust it. It refuses to\n" +
		"replace an existing CA without -force, and to write into the state directory of a serve\n" +
		"that runs (it names its PID).",
	usageExit: exitUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		dir := fs.String("dir", config.DefaultStateDir, "write ca.pem and ca-key.pem into `DIR`")
		force := fs.Bool("force", false, "replace an existing CA (clients must then trust the new one)")
		return func(args []string, s stdio) (int, error) {
			switch {
			case len(args) == 0:
				return 0, usageError("missing subcommand: init")
			case args[0] != "init":
				return 0, usageError(fmt.Sprintf("unknown subcommand %q (only init)", args[0]))
			case len(args) > 1:
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[1]))
			}
			lock, err := lockForCA(*dir)
			if err != nil {
				return 2, err
			}
			defer lock.Release()
			certPath, keyPath, err := certs.CreateCA(*dir, *force, time.Now())
			if err != nil {
				return 2, err
			}
			fmt.Fprintf(s.out, "Created %s and %s (mode 0600).\n%s\n", certPath, keyPath, certs.TrustInstructions(certPath))
			return 0, nil
		}
	},
}
