package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/admin"
)

// refreshPasswordEnv names the variable the admin password is read from
// (never a flag: flags show in the process list).
const refreshPasswordEnv = "ROBOTSGATE_ADMIN_PASSWORD"

// refreshCommand is `robotsgate refresh [flags] ORIGIN...`.
var refreshCommand = &command{
	name:     "refresh",
	synopsis: "[-config FILE] [-admin URL] [-user NAME] ORIGIN...",
	summary:  "fetch an origin's robots.txt and tdmrep.json again now and end its pause, in a running proxy",
	details: "Asks a running robotsgate, through its admin listener (POST /refresh), to fetch each\n" +
		"origin's robots.txt and tdmrep.json again now, whatever it has cached, and to end the\n" +
		"origin's pause if it answered 429 or 503 (in the whole fleet with pacing.store: redis).\n" +
		"For a site that fixed its robots.txt, or an origin an operator fixed. An ORIGIN is a URL\n" +
		"(https://example.com, or any URL of the origin). The proxy logs it and writes it to its\n" +
		"audit log. With admin_auth, give -user and the password in " + refreshPasswordEnv + ".\n\n" +
		"Exit status: 0 every origin refreshed, 1 one was not, 3 usage or configuration error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) whose admin_listen is the proxy's admin listener")
		adminURL := fs.String("admin", "", "the admin listener's `URL`, e.g. http://127.0.0.1:9090 (default: from admin_listen)")
		user := fs.String("user", "", "admin user `NAME` (admin_auth), its password in "+refreshPasswordEnv)
		return func(args []string, s stdio) (int, error) {
			return refresh(*configPath, *adminURL, *user, args, s)
		}
	},
}

// refresh asks the admin listener to refresh each origin.
func refresh(configPath, adminURL, user string, origins []string, s stdio) (int, error) {
	if len(origins) == 0 {
		return 0, usageError("no origin to refresh")
	}
	if adminURL == "" {
		cfg, err := loadConfig(configPath, "", "")
		if err != nil {
			return exitCheckUsage, err
		}
		if cfg.AdminListen == "" {
			return 0, usageError("the configuration has no admin listener (admin_listen): give -admin URL")
		}
		adminURL = "http://" + cfg.AdminListen
	}
	c := &http.Client{Timeout: 60 * time.Second}
	code := 0
	for _, o := range origins {
		r, err := refreshOne(c, adminURL, user, o)
		if err != nil {
			fmt.Fprintf(s.errOut, "robotsgate refresh: %s: %v\n", o, err)
			code = 1
			continue
		}
		printRefreshed(s.out, &r)
	}
	return code, nil
}

// refreshOne posts one origin to the admin listener.
func refreshOne(c *http.Client, adminURL, user, origin string) (admin.Refreshed, error) {
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(adminURL, "/")+"/refresh",
		strings.NewReader(url.Values{"origin": {origin}}.Encode()))
	if err != nil {
		return admin.Refreshed{}, fmt.Errorf("admin URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, os.Getenv(refreshPasswordEnv))
	}
	resp, err := c.Do(req)
	if err != nil {
		return admin.Refreshed{}, fmt.Errorf("the admin listener: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return admin.Refreshed{}, errors.New(e.Error)
		}
		return admin.Refreshed{}, fmt.Errorf("the admin listener answered %s", resp.Status)
	}
	var r admin.Refreshed
	if err := json.Unmarshal(body, &r); err != nil {
		return admin.Refreshed{}, fmt.Errorf("the admin listener's answer: %w", err)
	}
	return r, nil
}

// printRefreshed says what the refresh found.
func printRefreshed(w io.Writer, r *admin.Refreshed) {
	fmt.Fprintf(w, "REFRESHED %s\n", r.Origin)
	if rb := r.Robots; rb != nil {
		fmt.Fprintf(w, "          robots.txt %s: %s (HTTP %d)%s\n", rb.URL, rb.Status, rb.HTTPStatus, errSuffix(rb.Error))
	}
	if t := r.TDMRep; t != nil {
		fmt.Fprintf(w, "          tdmrep.json %s: %s (HTTP %d)%s\n", t.URL, t.Status, t.HTTPStatus, errSuffix(t.Error))
	}
	for _, l := range r.Licenses {
		fmt.Fprintf(w, "          RSL licence %s: %s (HTTP %d)%s\n", l.URL, l.Status, l.HTTPStatus, errSuffix(l.Error))
	}
	if r.PauseCleared != "" {
		fmt.Fprintf(w, "          pause ended: %s\n", r.PauseCleared)
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}
