package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"
)

// passwdCommand is `robotsgate passwd [-cost N] [USER]`: a bcrypt hash for
// a proxy user, where htpasswd (Apache's) is not installed.
var passwdCommand = &command{
	name:     "passwd",
	synopsis: "[-cost N] [USER]",
	summary:  "print a bcrypt hash of a proxy user's password (for auth.htpasswd or password_bcrypt)",
	details: "Reads a password and prints its bcrypt hash: with USER, as an htpasswd line\n" +
		"(USER:HASH) to append to the file auth.htpasswd names; without, the hash alone, for a\n" +
		"clients entry's password_bcrypt. At a terminal it asks twice, without echo; otherwise\n" +
		"it reads the first line of standard input (printf '%s\\n' \"$PASSWORD\" | robotsgate\n" +
		"passwd alice >> htpasswd). It is what htpasswd -nbB prints, and robotsgate checks.\n\n" +
		"Exit status: 0 printed, 1 no password (empty, too long for bcrypt's 72 bytes, or the\n" +
		"two entries differ), 2 usage error.",
	usageExit: exitUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		cost := fs.Int("cost", bcrypt.DefaultCost, fmt.Sprintf("bcrypt's cost `N`, %d to %d: each step doubles the time to check (and to guess)", minPasswdCost, bcrypt.MaxCost))
		return func(args []string, s stdio) (int, error) {
			if len(args) > 1 {
				return 0, usageError("one user at most")
			}
			user := ""
			if len(args) == 1 {
				user = args[0]
				if user == "" || strings.ContainsAny(user, ":\r\n") {
					return 0, usageError(fmt.Sprintf("user %q: want a name without ':' or a line break", user))
				}
			}
			if *cost < minPasswdCost || *cost > bcrypt.MaxCost {
				return 0, usageError(fmt.Sprintf("-cost %d: want %d to %d", *cost, minPasswdCost, bcrypt.MaxCost))
			}
			password, err := readPassword(s)
			if err != nil {
				return 1, err
			}
			line, err := hashPassword(user, password, *cost)
			if err != nil {
				return 1, err
			}
			fmt.Fprintln(s.out, line)
			return 0, nil
		}
	},
}

// minPasswdCost is the least cost passwd accepts: bcrypt's default. A
// lower one makes a stolen htpasswd file cheap to guess.
const minPasswdCost = bcrypt.DefaultCost

// hashPassword returns the bcrypt hash of password, as "user:hash" when
// user is set.
func hashPassword(user string, password []byte, cost int) (string, error) {
	if len(password) == 0 {
		return "", errors.New("empty password")
	}
	hash, err := bcrypt.GenerateFromPassword(password, cost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		return "", fmt.Errorf("password of %d bytes: bcrypt reads at most 72", len(password))
	}
	if err != nil {
		return "", err
	}
	if user == "" {
		return string(hash), nil
	}
	return user + ":" + string(hash), nil
}

// promptPassword turns the terminal's echo off, then prints prompt and
// reads a line: whoever types once the prompt shows is never echoed (with
// the prompt first, a quick typist's first keys were).
func promptPassword(fd int, out io.Writer, prompt string) ([]byte, error) {
	restore, err := echoOff(fd)
	if err != nil {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	defer restore()
	fmt.Fprint(out, prompt)
	pw, err := term.ReadPassword(fd)
	fmt.Fprintln(out)
	if err != nil {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	return pw, nil
}

// readPassword asks twice without echo at a terminal; otherwise it reads
// standard input's first line (without its line ending).
func readPassword(s stdio) ([]byte, error) {
	if f, ok := s.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		first, err := promptPassword(int(f.Fd()), s.errOut, "Password: ")
		if err != nil {
			return nil, err
		}
		again, err := promptPassword(int(f.Fd()), s.errOut, "Again: ")
		if err != nil {
			return nil, err
		}
		if string(first) != string(again) {
			return nil, errors.New("the passwords differ")
		}
		return first, nil
	}
	// Bounded: a password is short; a file piped by mistake is not read whole.
	line, err := bufio.NewReader(io.LimitReader(s.in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the password: %w", err)
	}
	return []byte(strings.TrimRight(line, "\r\n")), nil
}
