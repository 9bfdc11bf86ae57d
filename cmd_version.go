package main

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
)

// versionCommand is `robotsgate version`.
var versionCommand = &command{
	name:     "version",
	synopsis: "",
	summary:  "print the version and the source revision it was built from",
	details: "Prints the module version, the VCS revision and commit time the binary was built\n" +
		"from (\"modified\" when the checkout had uncommitted changes), and the Go version,\n" +
		"from the build information Go records in the binary.",
	usageExit: exitUsage,
	setup: func(*flag.FlagSet) runFunc {
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[0]))
			}
			info, _ := debug.ReadBuildInfo()
			fmt.Fprint(s.out, versionText(version, info))
			return 0, nil
		}
	},
}

// shortVersion is the version alone, for the start-up line.
func shortVersion() string {
	info, _ := debug.ReadBuildInfo()
	return moduleVersion(version, info)
}

// moduleVersion is the version to show: override (-ldflags "-X
// main.version=..."), else the main module's version from the build
// information: a tag, a pseudo-version (v0.0.0-TIME-REVISION, "+dirty" for
// uncommitted changes) when built from a checkout, or "(devel)" when Go
// recorded no version control information; "unknown" without build
// information.
func moduleVersion(override string, info *debug.BuildInfo) string {
	switch {
	case override != "":
		return override
	case info == nil || info.Main.Version == "":
		return "unknown"
	}
	return info.Main.Version
}

// versionText is what `robotsgate version` prints:
//
//	robotsgate v0.0.0-20261123192140-83947e8b5570+dirty
//	revision 83947e8b5570c4018acaf47ca83b5c66ef8e5dee (2026-11-23T19:21:40Z, modified)
//	go1.26.8
//
// The revision line is left out when the binary records none (built with
// -buildvcs=false or outside a checkout).
func versionText(override string, info *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "robotsgate %s\n", moduleVersion(override, info))
	if info == nil {
		return b.String()
	}
	var revision, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision != "" {
		var notes []string
		if when != "" {
			notes = append(notes, when)
		}
		if modified {
			notes = append(notes, "modified")
		}
		fmt.Fprintf(&b, "revision %s", revision)
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
		}
		b.WriteString("\n")
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, "%s\n", info.GoVersion)
	}
	return b.String()
}
