package policy

import (
	"testing"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/rsl"
)

// TestConformanceRSL: RSL 1.0 licences (RSL-SPEC-1.0, a Recommendation,
// https://rslstandard.org/rsl). Of its text only the front matter, the
// errata and the element tables of its drafts (2025-09-16) could be read:
// the sections cited here are known through third-party quotes (an RSL
// reference summary citing §3, §3.4.1, §3.7, §3.12 and §4; published
// licence generators and validators), and each such case says
// "2nd-hand". Where they leave a case open robotsgate takes the reading
// that refuses more, and the case says "robotsgate".
func TestConformanceRSL(t *testing.T) {
	byLine := "User-agent: *\nAllow: /\nLicense: {origin}/licence.xml\n"
	doc := func(contents string) map[string]string {
		return map[string]string{"/licence.xml": `<rsl xmlns="https://rslstandard.org/rsl">` + contents + `</rsl>`}
	}
	site := func(licences string) map[string]string { return doc(`<content url="/">` + licences + `</content>`) }
	const (
		permitsTrain = `<license><permits type="usage">ai-train</permits></license>`
		noTrain      = `<license><prohibits type="usage">ai-train</prohibits></license>`
		link         = `</licence.xml>; rel="license"; type="application/rsl+xml"`
	)
	commercial := rsl.Client{User: "commercial", Country: "FR"}
	runConformance(t, []confCase{
		// Usages (§3.4.1).
		{name: "RSL §3.4.1 (2nd-hand) a prohibited usage is refused", robots: byLine, files: site(noTrain),
			want: UsageDenied, why: `<prohibits type="usage">ai-train</prohibits>`},
		{name: "RSL §3.4.1 (2nd-hand) permits type=usage is a closed list", robots: byLine, files: site(`<license><permits type="usage">search</permits></license>`),
			want: UsageDenied, why: "does not permit the purpose train-ai"},
		{name: "RSL §3.4.1 (2nd-hand) a permitted usage is granted", robots: byLine, files: site(permitsTrain), want: Allow},
		{name: "RSL §3.4.1 (2nd-hand) ai-all covers ai-train", robots: byLine, files: site(`<license><prohibits type="usage">ai-all</prohibits></license>`),
			want: UsageDenied, why: "ai-all"},
		{name: "RSL §3.4.1 (2nd-hand) ai-all does not cover search", robots: byLine, files: site(`<license><prohibits type="usage">ai-all</prohibits></license>`),
			purposes: []string{"search"}, want: Allow},
		{name: "RSL §3.4.1 (2nd-hand) all covers search", robots: byLine, files: site(`<license><prohibits type="usage">all</prohibits></license>`),
			purposes: []string{"search"}, want: UsageDenied, why: "all"},
		{name: "RSL §3 (2nd-hand) a licence of prohibitions only grants the other usages", robots: byLine, files: site(noTrain),
			purposes: []string{"search"}, want: Allow},

		// Several licences of one <content>, and one licence's own terms (§3).
		{name: "RSL §3 (2nd-hand) a prohibition in one licence wins over another licence's permission", robots: byLine,
			files: site(permitsTrain + noTrain), want: UsageDenied, why: `<prohibits type="usage">ai-train</prohibits>`},
		{name: "RSL §3 (2nd-hand) the order of the licences does not matter", robots: byLine,
			files: site(noTrain + permitsTrain), want: UsageDenied, why: `<prohibits type="usage">ai-train</prohibits>`},
		{name: "RSL §3 (2nd-hand) each licence is an offer: a free one is taken beside a priced one", robots: byLine, licence: commercial,
			files: site(`<license><permits type="usage">ai-train</permits><payment type="training"><amount currency="USD">1</amount></payment></license>` + permitsTrain),
			want:  Allow},
		{name: "robotsgate, conservative: inside one licence a narrower permission does not lift a broader prohibition", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><prohibits type="usage">all</prohibits></license>`),
			want:  UsageDenied, why: `<prohibits type="usage">all</prohibits>`},
		{name: "robotsgate, conservative: an empty licence grants nothing (usage.rsl_unstated_usage: refuse)", robots: byLine,
			files: site(`<license/>`), want: UsageDenied, why: "states a usage"},
		{name: "robotsgate, conservative: a licence with only payment and legal terms grants nothing", robots: byLine,
			files: site(`<license><payment type="free"/><legal type="warranty">ownership</legal></license>`), want: UsageDenied, why: "states a usage"},
		{name: "robotsgate: usage.rsl_unstated_usage: grant reads an empty licence as granting", robots: byLine,
			files: site(`<license/>`), unstated: config.RSLUnstatedGrant, want: Allow},

		// User types and countries (§3.4.1).
		{name: "RSL §3.4.1 (2nd-hand) permits type=user: a listed user type is granted", robots: byLine, licence: rsl.Client{User: "non-commercial"},
			files: site(`<license><permits type="usage">ai-train</permits><permits type="user">non-commercial education</permits></license>`), want: Allow},
		{name: "RSL §3.4.1 (2nd-hand) permits type=user: another user type is refused", robots: byLine, licence: commercial,
			files: site(`<license><permits type="usage">ai-train</permits><permits type="user">non-commercial</permits></license>`),
			want:  UsageDenied, why: `<permits type="user">non-commercial</permits>`},
		{name: "robotsgate, conservative: permits type=user refuses a client that declares no user type", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><permits type="user">non-commercial</permits></license>`),
			want:  UsageDenied, why: "declares no user type"},
		{name: "RSL §3.4.1 (2nd-hand) prohibits type=user refuses that user type, whatever another licence permits", robots: byLine, licence: commercial,
			files: site(`<license><prohibits type="user">commercial</prohibits></license>` + permitsTrain), want: UsageDenied, why: `<prohibits type="user">commercial</prohibits>`},
		{name: "RSL §3.4.1 (2nd-hand) prohibits type=user leaves other user types alone", robots: byLine, licence: rsl.Client{User: "education"},
			files: site(`<license><permits type="usage">ai-train</permits><prohibits type="user">commercial</prohibits></license>`), want: Allow},
		{name: "RSL §3.4.1 (2nd-hand) permits type=geo: a listed country is granted", robots: byLine, licence: commercial,
			files: site(`<license><permits type="usage">ai-train</permits><permits type="geo">FR DE</permits></license>`), want: Allow},
		{name: "RSL §3.4.1 (2nd-hand) permits type=geo: EU stands for its member states", robots: byLine, licence: commercial,
			files: site(`<license><permits type="usage">ai-train</permits><permits type="geo">EU</permits></license>`), want: Allow},
		{name: "RSL §3.4.1 (2nd-hand) permits type=geo: another country is refused", robots: byLine, licence: rsl.Client{Country: "US"},
			files: site(`<license><permits type="usage">ai-train</permits><permits type="geo">FR</permits></license>`), want: UsageDenied, why: `<permits type="geo">fr</permits>`},
		{name: "robotsgate, conservative: a geo term refuses a client that declares no country", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><prohibits type="geo">CN</prohibits></license>`), want: UsageDenied, why: "declares no country"},

		// Payment (§3.7) and reporting (§3.12).
		{name: "RSL §3.7 (2nd-hand) a payment left out is free", robots: byLine, files: site(permitsTrain), want: Allow},
		{name: "RSL §3.7 (2nd-hand) a free payment is met", robots: byLine, files: site(`<license><permits type="usage">ai-train</permits><payment type="free"/></license>`), want: Allow},
		{name: "RSL §3.7 (2nd-hand) a priced payment the client has not accepted refuses, naming the term", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><payment type="training"><amount currency="USD">0.015</amount></payment></license>`),
			want:  LicenseRequired, why: `<payment type="training"> (0.015 USD)`},
		{name: "RSL §3.7 (2nd-hand) a payment type the client accepts is met (clients[].accept_payment)", robots: byLine, licence: rsl.Client{Payments: []string{"training"}},
			files: site(`<license><permits type="usage">ai-train</permits><payment type="training"><amount currency="USD">0.015</amount></payment></license>`), want: Allow},
		{name: "robotsgate, conservative: attribution is a term the client must accept", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><payment type="attribution"/></license>`), want: LicenseRequired, why: "attribution"},
		{name: "robotsgate, conservative: a payment of no type with an amount is met only by accept_payment: all", robots: byLine, licence: rsl.Client{Payments: []string{"crawl"}},
			files: site(`<license><permits type="usage">ai-train</permits><payment><amount currency="USD">1</amount></payment></license>`), want: LicenseRequired, why: "<payment> (1 USD)"},
		{name: "RSL §3.12 (2nd-hand) a reporting profile the client does not comply with refuses", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><reporting type="telemetry" profile="https://reports.example/p1"/></license>`),
			want:  LicenseRequired, why: `<reporting type="telemetry" profile="https://reports.example/p1">`},
		{name: "RSL §3.12 (2nd-hand) a reporting profile the client complies with is met (clients[].accept_reporting)", robots: byLine,
			licence: rsl.Client{Reporting: []string{"https://reports.example/p1"}},
			files:   site(`<license><permits type="usage">ai-train</permits><reporting type="telemetry" profile="https://reports.example/p1"/></license>`), want: Allow},
		{name: "robotsgate, conservative: an element of the RSL namespace robotsgate does not know is a term not met", robots: byLine,
			files: site(`<license><permits type="usage">ai-train</permits><conditions>x</conditions></license>`), want: UsageDenied, why: "<conditions>"},
		{name: "RSL draft of 2025-09-16, <content server>: a licence server needs a token even for a free licence", robots: byLine,
			files: doc(`<content url="/" server="https://licensing.example/api">` + permitsTrain + `</content>`), want: LicenseRequired, why: "licence server https://licensing.example/api"},

		// Which <content> applies (§3, §4).
		{name: "RSL draft of 2025-09-16, <content url>: a path matches as RFC 9309 patterns do", robots: byLine, target: "/a/page",
			files: doc(`<content url="/a/">` + noTrain + `</content><content url="/b/">` + permitsTrain + `</content>`), want: UsageDenied, why: "ai-train"},
		{name: "robotsgate: a full url's host is compared in canonical form (an IPv4 shorthand)", robots: byLine,
			files: doc(`<content url="http://127.2:{port}/">` + noTrain + `</content>`), want: UsageDenied, why: "ai-train"},
		{name: "robotsgate: a full url's host is compared in canonical form (upper case, a zero-padded port)", robots: byLine,
			files: doc(`<content url="HTTP://127.0.0.2:0{port}/">` + noTrain + `</content>`), want: UsageDenied, why: "ai-train"},
		{name: "RSL draft of 2025-09-16, <content url>: a full URL of another site does not apply", robots: byLine,
			files: doc(`<content url="http://127.0.0.3:{port}/">` + noTrain + `</content>`), want: Allow},
		{name: "RSL §4 (2nd-hand) url=\"\" in a licence a Link header names is the linking page", header: []string{"Link", link},
			files: doc(`<content url="">` + noTrain + `</content>`), want: UsageDenied, why: "response header Link"},
		{name: "RSL §4 (2nd-hand) url=\"\" in a licence a <link> names is the linking page",
			html:  `<html><head><link rel="license" type="application/rsl+xml" href="/licence.xml"></head></html>`,
			files: doc(`<content url="">` + noTrain + `</content>`), want: UsageDenied, why: `<link rel="license">`},
		{name: "RSL §4 (2nd-hand) url=\"\" named by robots.txt names no page: the licence is unknown", robots: byLine,
			files: doc(`<content url="">` + noTrain + `</content>`), purposes: []string{"search"}, want: UsageUnknown, why: "robots.txt links none"},
		{name: "RSL §4 (2nd-hand) a licence that cannot be read leaves the asset unlicensed (usage.on_unknown: refuse)", robots: byLine,
			files: map[string]string{"/licence.xml": unavailable}, want: UsageUnknown, why: "could not be read"},
	})
}
