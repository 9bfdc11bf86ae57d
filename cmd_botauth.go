package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/upstream"
)

// publishedName is the file name of the key directory -publish writes;
// the header fields to serve with it are in publishedName + ".headers".
const publishedName = "http-message-signatures-directory"

// defaultPublishLifetime is -valid's default: a directory published as a
// file is signed once, so its signature must outlive the interval at which
// it is published again (draft-ietf-webbotauth-httpsig-protocol-00,
// Appendix C.8).
const defaultPublishLifetime = 7 * 24 * time.Hour

// botAuthCommand is `robotsgate bot-auth [-config FILE] [-client N] [-card] [-publish DIR [-valid D]]`.
var botAuthCommand = &command{
	name:     "bot-auth",
	synopsis: "[-config FILE] [-client N] [-card] [-publish DIR [-valid DURATION]]",
	summary:  "print (or write, signed) the Web Bot Auth key directory or signature agent card to publish",
	details: "Prints the key directory of robotsgate's Web Bot Auth signing key (bot_auth.key, in the\n" +
		"state directory by default; created when missing, by this command or serve's first start, so\n" +
		"that it can be published before the first signed request): the JSON Web Key Set to serve at\n" +
		"the key directory's URL (bot_auth.signature_agent) with media type " + botauth.MediaType + ".\n" +
		"With -publish DIR, also writes it to DIR/" + publishedName + " byte for byte, and the\n" +
		"header fields to serve with it (Content-Type, Content-Digest and the key's signature over\n" +
		"the directory's authority and digest, valid for -valid) to DIR/" + publishedName + ".headers,\n" +
		"one \"Name: value\" per line; publish both again before the signature expires.\n" +
		"With -client N, the key of clients entry N (counted from 0, its sign_key) instead. With -card,\n" +
		"the signature agent card instead: robotsgate's compliance facts (rfc9309-compliance, the\n" +
		"product token, purpose, how origins control its rate) and the key set's URL. The admin\n" +
		"listener serves both, the directory signed (" + botauth.WellKnownPath + ",\n" +
		"/signature-agent-card).\n\n" +
		"Exit status: 0 printed, 2 no signing configured or the key could not be read or created, or\n" +
		"the files could not be written, 3 usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) naming bot_auth; the built-in defaults without one")
		client := fs.String("client", "", "print the key of clients entry `N` (from 0) instead of the gateway's")
		card := fs.Bool("card", false, "print the signature agent card instead of the key directory")
		publish := fs.String("publish", "", "also write the directory and the signed header fields to serve with it into `DIR`")
		valid := fs.Duration("valid", defaultPublishLifetime, "how long the signature -publish writes is valid (`DURATION`)")
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[0]))
			}
			if *valid <= 0 {
				return 0, usageError(fmt.Sprintf("-valid %s: want a positive duration", *valid))
			}
			cfg, err := loadConfig(*configPath, "", "")
			if err != nil {
				return exitCheckUsage, err
			}
			path, agent, index := cfg.BotAuth.Key, cfg.BotAuth.SignatureAgent, -1
			if *client != "" {
				i, err := strconv.Atoi(*client)
				if err != nil || i < 0 || i >= len(cfg.Clients) {
					return 0, usageError(fmt.Sprintf("-client %q: want the index of a clients entry (0..%d)", *client, len(cfg.Clients)-1))
				}
				path, agent, index = cfg.SignKeyPath(cfg.Clients[i]), cfg.Clients[i].SignatureAgent, i
			}
			if agent == "" {
				return 2, fmt.Errorf("no Web Bot Auth signing configured (bot_auth.signature_agent%s)", clientKey(*client))
			}
			body, h, created, err := upstream.SignedDirectory(path, agent, botauth.Form(cfg.BotAuth.SignatureAgentForm), time.Now(), *valid)
			if err != nil {
				return 2, err
			}
			if created {
				fmt.Fprintf(s.errOut, "created the signing key %s (serve signs with it)\n", path)
			}
			if *card {
				fmt.Fprintf(s.out, "%s\n", botauth.Card(upstream.CardFacts(cfg, index)))
				return 0, nil
			}
			if *publish != "" {
				if err := writePublished(*publish, body, h); err != nil {
					return 2, err
				}
				fmt.Fprintf(s.errOut, "wrote %s and %s.headers: serve them at %s\n",
					filepath.Join(*publish, publishedName), filepath.Join(*publish, publishedName), directoryURL(agent, cfg.BotAuth.SignatureAgentForm))
			}
			fmt.Fprintf(s.out, "%s\n", body)
			return 0, nil
		}
	},
}

// writePublished writes the directory body (byte for byte: the digest
// covers it) and the header fields to serve with it into dir.
func writePublished(dir string, body []byte, h http.Header) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Content-Type: %s\n", botauth.MediaType)
	for _, name := range []string{botauth.HeaderContentDigest, botauth.HeaderSignatureInput, botauth.HeaderSignature} {
		fmt.Fprintf(&b, "%s: %s\n", name, h.Get(name))
	}
	if err := os.WriteFile(filepath.Join(dir, publishedName), body, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, publishedName+".headers"), []byte(b.String()), 0o644)
}

// directoryURL is where a verifier fetches the key set of agent.
func directoryURL(agent, form string) string {
	a, err := botauth.ParseAgent(agent, botauth.Form(form))
	if err != nil {
		return agent
	}
	return a.DirectoryURL()
}

func clientKey(client string) string {
	if client == "" {
		return ""
	}
	return ", clients[" + client + "].signature_agent"
}
