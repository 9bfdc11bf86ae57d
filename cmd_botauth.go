package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/robotsgate/robotsgate/botauth"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/proxy"
)

// botAuthCommand is `robotsgate bot-auth [-config FILE] [-client N] [-card]`.
var botAuthCommand = &command{
	name:     "bot-auth",
	synopsis: "[-config FILE] [-client N] [-card]",
	summary:  "print the Web Bot Auth key directory (or signature agent card) to publish at the signature agent URL",
	details: "Prints the key directory of robotsgate's Web Bot Auth signing key (bot_auth.key, in the\n" +
		"state directory by default; created when missing, by this command or serve's first start, so\n" +
		"that it can be published before the first signed request): the JSON Web Key Set to serve at\n" +
		"bot_auth.signature_agent with media type " + botauth.MediaType + ".\n" +
		"With -client N, the key of clients entry N (counted from 0, its sign_key) instead. With -card,\n" +
		"the signature agent card instead: robotsgate's compliance facts (RFC 9309 rules enforced,\n" +
		"Crawl-delay and 429/503 honoured) and the directory's URL. The admin listener serves both\n" +
		"(" + botauth.WellKnownPath + ", /signature-agent-card).\n\n" +
		"Exit status: 0 printed, 2 no signing configured or the key could not be read or created, 3\n" +
		"usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) naming bot_auth; the built-in defaults without one")
		client := fs.String("client", "", "print the key of clients entry `N` (from 0) instead of the gateway's")
		card := fs.Bool("card", false, "print the signature agent card instead of the key directory")
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[0]))
			}
			cfg, err := loadConfig(*configPath, "", "")
			if err != nil {
				return exitCheckUsage, err
			}
			path, agent := cfg.BotAuth.Key, cfg.BotAuth.SignatureAgent
			if *client != "" {
				i, err := strconv.Atoi(*client)
				if err != nil || i < 0 || i >= len(cfg.Clients) {
					return 0, usageError(fmt.Sprintf("-client %q: want the index of a clients entry (0..%d)", *client, len(cfg.Clients)-1))
				}
				path, agent = cfg.SignKeyPath(cfg.Clients[i]), cfg.Clients[i].SignatureAgent
			}
			if agent == "" {
				return 2, fmt.Errorf("no Web Bot Auth signing configured (bot_auth.signature_agent%s)", clientKey(*client))
			}
			pub, created, err := proxy.LoadSigningKey(path)
			if err != nil {
				return 2, err
			}
			if created {
				fmt.Fprintf(s.errOut, "created the signing key %s (serve signs with it)\n", path)
			}
			if *card {
				fmt.Fprintf(s.out, "%s\n", botauth.Card(cardFacts(cfg, agent)))
				return 0, nil
			}
			fmt.Fprintf(s.out, "%s\n", botauth.Directory(pub))
			return 0, nil
		}
	},
}

func clientKey(client string) string {
	if client == "" {
		return ""
	}
	return ", clients[" + client + "].signature_agent"
}

// cardFacts are the facts of the signature agent card of agent.
func cardFacts(cfg config.Config, agent string) botauth.CardFacts {
	return botauth.CardFacts{Name: "robotsgate", AgentURL: agent, Contact: cfg.BotAuth.Contact}
}
