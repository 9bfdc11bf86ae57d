// Command robotsgate is a forward HTTP(S) proxy that makes any HTTP client
// obey robots.txt. See README.md.
//
//	robotsgate [serve] [-config config.yaml] [-listen ADDR] [-admin-listen ADDR]
//	robotsgate check [-config FILE] [-agent NAME | -ua HEADER] URL...
//	robotsgate lint [-json] FILE|URL
//	robotsgate ca init [-dir certs] [-force]
//	robotsgate version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// errUsage marks errors already explained by a flag set's own message.
var errUsage = errors.New("usage")

func main() {
	code, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, errUsage) && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "robotsgate:", err)
	}
	os.Exit(code)
}

// run dispatches a command line and returns the exit status: 0 success, 1 a
// verdict the caller asked about (a disallowed URL, lint errors), 2 a usage
// or runtime error.
func run(args []string, stdout, stderr io.Writer) (int, error) {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	code := 0
	switch cmd {
	case "serve":
		err = serve(args, stderr)
	case "check":
		code, err = check(args, stdout, stderr)
	case "lint":
		code, err = lint(args, stdout, stderr)
	case "ca":
		err = caCommand(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "robotsgate", version)
	default:
		fmt.Fprintf(stderr, "robotsgate: unknown command %q (serve, check, lint, ca, version)\n", cmd)
		return 2, errUsage
	}
	if err != nil && code == 0 {
		code = 2
	}
	return code, err
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("robotsgate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
