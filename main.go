// Command robotsgate is a forward HTTP(S) proxy that makes any HTTP client
// obey robots.txt. See README.md and docs/.
//
// This package owns the command line only: commands, flags, loading the
// configuration, signals and exit statuses. It must not decide anything
// itself: serve runs package proxy, check asks the same policy engine, and
// verify and report read the evidence through packages compliance and
// report.
//
//	robotsgate [serve] [-config FILE] [-listen ADDR] [-admin-listen ADDR] [-t]
//	robotsgate check [-config FILE] [-agent NAME | -ua HEADER] URL...
//	robotsgate lint [-config FILE] [-json] FILE|URL|- ...
//	robotsgate verify -audit FILE... [-archive DIR] [-allow-missing]
//	robotsgate report -audit FILE... [-archive DIR] [-since T] [-until T] [-format html|json] [-o FILE]
//	robotsgate ca init [-dir DIR] [-force]
//	robotsgate passwd [-cost N] [USER]
//	robotsgate version
//	robotsgate help [COMMAND]
//
// Flags go before or after the arguments; "--" ends them.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// version, when set at build time with -ldflags "-X main.version=...",
// replaces the module version of the build information (see cmd_version.go).
var version string

// errUsage marks errors already explained to the user (a usage message).
var errUsage = errors.New("usage")

// exitUsage is the exit status of a usage error, except for check and lint
// whose status 2 means "unreachable" (they use exitCheckUsage).
const exitUsage = 2

// stdio is what a command reads and writes.
type stdio struct {
	in          io.Reader
	out, errOut io.Writer
}

// runFunc runs a command on its positional arguments, its flags already
// parsed; it returns the exit status. An error is printed by main unless it
// is a usageError (printed with the command's usage) or errUsage.
type runFunc func(args []string, s stdio) (int, error)

// command is one subcommand: its help and how to run it.
type command struct {
	name     string
	synopsis string // what follows "robotsgate NAME" in the usage line
	summary  string // one line, for the command list
	details  string // what `help NAME` says between the usage line and the flags
	// usageExit is the exit status of a usage error (bad flags, missing or
	// extra arguments).
	usageExit int
	// setup defines the command's flags on fs and returns the function that
	// runs the command with them.
	setup func(fs *flag.FlagSet) runFunc
}

// commands lists the commands in the order help shows them (set in init:
// help refers to the list).
var commands []*command

func init() {
	commands = []*command{serveCommand, checkCommand, lintCommand, refreshCommand, verifyCommand, reportCommand, evidenceKeyCommand, witnessCommand, botAuthCommand, caCommand, passwdCommand, versionCommand, helpCommand}
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func main() {
	code, err := run(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, errOut: os.Stderr})
	if err != nil && !errors.Is(err, errUsage) {
		fmt.Fprintln(os.Stderr, "robotsgate:", err)
	}
	os.Exit(code)
}

// run dispatches a command line and returns the exit status. Without a
// command name (no arguments, or flags first) it runs serve.
func run(args []string, s stdio) (int, error) {
	name := "serve"
	if len(args) > 0 {
		switch a := args[0]; {
		case isHelpFlag(a):
			printOverview(s.out)
			return 0, nil
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	cmd := lookupCommand(name)
	if cmd == nil {
		fmt.Fprintf(s.errOut, "robotsgate: unknown command %q\nRun 'robotsgate help' for the list of commands.\n", name)
		return exitUsage, errUsage
	}
	return cmd.run(args, s)
}

func isHelpFlag(a string) bool {
	switch a {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// run parses the command's flags and runs it. -h (or -help) prints the
// command's help on standard output and exits 0; a usage error prints the
// usage line on standard error.
func (c *command) run(args []string, s stdio) (int, error) {
	fs := c.flagSet(io.Discard) // a flag error is printed below, with the command's name
	runCmd := c.setup(fs)
	positional, err := parseArgs(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printHelp(s.out)
		return 0, nil
	case err != nil:
		return c.usage(s.errOut, err.Error())
	}
	code, err := runCmd(positional, s)
	var ue usageError
	if errors.As(err, &ue) {
		return c.usage(s.errOut, string(ue))
	}
	if err != nil && code == 0 {
		code = 2
	}
	return code, err
}

// flagSet returns the command's flag set, writing to w. Its Usage does
// nothing: run prints the usage line after an error, and the full help on
// standard output for -h.
func (c *command) flagSet(w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("robotsgate "+c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {}
	return fs
}

// usageError is a command's complaint about its arguments; run prints it
// with the command's usage line.
type usageError string

func (e usageError) Error() string { return string(e) }

// usage prints msg, if any, and the usage line on w.
func (c *command) usage(w io.Writer, msg string) (int, error) {
	if msg != "" {
		fmt.Fprintf(w, "robotsgate %s: %s\n", c.name, msg)
	}
	fmt.Fprintf(w, "usage: %s\nRun 'robotsgate help %s' for details.\n", c.usageLine(), c.name)
	return c.usageExit, errUsage
}

// usageLine is "robotsgate NAME SYNOPSIS".
func (c *command) usageLine() string {
	return strings.TrimSpace("robotsgate " + c.name + " " + c.synopsis)
}

// printHelp prints the command's usage line, description and flags (each
// with what it does and its default).
func (c *command) printHelp(w io.Writer) {
	fs := c.flagSet(w)
	c.setup(fs)
	fmt.Fprintf(w, "usage: %s\n\n%s\n", c.usageLine(), c.details)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintf(w, "\n%s takes no flags.\n", c.name)
		return
	}
	fmt.Fprintf(w, "\nFlags (before or after the arguments; -- ends them):\n")
	fs.PrintDefaults()
}

// printOverview is the top-level help: the commands.
func printOverview(w io.Writer) {
	fmt.Fprint(w, "robotsgate is a forward HTTP(S) proxy that makes any HTTP client obey robots.txt.\n\n"+
		"usage: robotsgate [COMMAND] [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nFlags go before or after the arguments; -- ends them.\n"+
		"Run 'robotsgate help COMMAND' or 'robotsgate COMMAND -h' for a command's flags.\n")
}

// helpCommand is `robotsgate help [COMMAND]`.
var helpCommand = &command{
	name:      "help",
	synopsis:  "[COMMAND]",
	summary:   "list the commands, or print a command's help and flags (help COMMAND)",
	details:   "Without a command, lists the commands; with one, prints its usage, what it does and its flags.",
	usageExit: exitUsage,
	setup: func(*flag.FlagSet) runFunc {
		return func(args []string, s stdio) (int, error) {
			switch len(args) {
			case 0:
				printOverview(s.out)
				return 0, nil
			case 1:
				c := lookupCommand(args[0])
				if c == nil {
					return 0, usageError(fmt.Sprintf("unknown command %q (commands: %s)", args[0], commandNames()))
				}
				c.printHelp(s.out)
				return 0, nil
			}
			return 0, usageError("one command at most")
		}
	},
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// parseArgs parses the flags in args with fs wherever they appear, before,
// between or after the positional arguments (`check URL -agent FooBot`),
// and returns the positional arguments in order. "--" ends the flags: what
// follows it is positional, even if it starts with "-". A lone "-" is
// positional (standard input). Whether a flag takes the next argument as
// its value follows the flag package's rule (a non-boolean flag without
// "="), so fs.Parse sees exactly the flags and values it would have seen
// had they all come first, and reports errors as it always does.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case len(a) < 2 || a[0] != '-':
			positional = append(positional, a)
		default:
			flags = append(flags, a)
			if takesValue(fs, a) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return positional, nil
}

// takesValue reports whether the flag argument a ("-name" or "--name", no
// "=value") names a defined non-boolean flag, whose value is then the next
// argument.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}
