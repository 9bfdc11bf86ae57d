package main

import (
	"cmp"
	"flag"
	"fmt"
)

// versionCommand is `robotsgate version`.
var versionCommand = &command{
	name:      "version",
	synopsis:  "",
	summary:   "print the version",
	details:   "Prints the version set at build time (-ldflags \"-X main.version=...\").",
	usageExit: exitUsage,
	setup: func(*flag.FlagSet) runFunc {
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[0]))
			}
			fmt.Fprintln(s.out, "robotsgate", shortVersion())
			return 0, nil
		}
	},
}

// shortVersion is the version alone, for the start-up line.
func shortVersion() string { return cmp.Or(version, "dev") }
