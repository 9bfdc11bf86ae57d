package audit

// The kinds of AI-usage signal (UsageSignal.Signal), also the label values
// of robotsgate_usage_refusals_total{signal}: where a signal was read.
const (
	SignalRobotsContentUsage   = "robots-content-usage"   // a robots.txt Content-Usage line (IETF aipref)
	SignalRobotsContentSignal  = "robots-content-signal"  // a robots.txt Content-Signal line (Cloudflare)
	SignalTDMRep               = "tdmrep"                 // the entry of /.well-known/tdmrep.json that applies
	SignalTDMRepUnknown        = "tdmrep-unknown"         // tdmrep.json could not be fetched (usage-unknown)
	SignalHeaderTDMReservation = "tdm-reservation-header" // a tdm-reservation response header
	SignalHeaderContentUsage   = "content-usage-header"   // a Content-Usage response header
	SignalXRobotsTag           = "x-robots-tag"           // an X-Robots-Tag response header with noai, noml or noimageai
	SignalHeaderContentSignal  = "content-signal-header"  // a Content-Signal response header (Cloudflare)
	SignalRobotsTag            = "robots-tag"             // a Robots-Tag response header with noai, noml or noimageai, or unparsable
	SignalMetaTDMReservation   = "meta-tdm-reservation"   // <meta name="tdm-reservation"> in an HTML head
	SignalMetaRobots           = "meta-robots"            // noai, noml or noimageai in <meta name="robots"> or an agent's tag
	SignalRSL                  = "rsl"                    // an RSL licence (robots.txt License, Link header, <link rel="license">)
	SignalRSLUnknown           = "rsl-unknown"            // an RSL licence a site names could not be read (usage-unknown)
	SignalHTMLUnscanned        = "html-unscanned"         // an HTML response whose head could not be read with usage.scan_html (usage-unknown)
)

// SignalKinds lists every kind of AI-usage signal, for metrics.
var SignalKinds = []string{
	SignalRobotsContentUsage, SignalRobotsContentSignal, SignalTDMRep, SignalTDMRepUnknown,
	SignalHeaderTDMReservation, SignalHeaderContentUsage, SignalXRobotsTag,
	SignalMetaTDMReservation, SignalMetaRobots,
	SignalHeaderContentSignal, SignalRobotsTag, SignalRSL, SignalRSLUnknown, SignalHTMLUnscanned,
}

// UsageSignal is one AI-usage signal found for a request, whether or not it
// refuses anything: what the audit record's "usage", /explain's
// "usage_signals" and check list. Its JSON field names are a stable
// interface.
type UsageSignal struct {
	// Signal is its kind (SignalRobotsContentUsage...).
	Signal string `json:"signal"`
	// Value is what the origin wrote, at most about 256 bytes:
	// "train-ai=n", "FooBot: noai", "1".
	Value string `json:"value"`
	// Where says where it was read: "robots.txt line 4",
	// "tdmrep.json[0] (location \"/*\")", "response header",
	// "<meta name=\"robots\">".
	Where string `json:"where"`
	// Policy is the tdm-policy URL given with a TDM reservation, if any.
	Policy string `json:"policy,omitempty"`
	// License is the URL of the RSL document of an rsl or rsl-unknown
	// signal, SHA256 the archived body that judged (archive.dir), Server
	// the licence server its matching <content> names, if any.
	License string `json:"license,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Server  string `json:"server,omitempty"`
	// Refuses are the purposes it refuses, of the known purposes and the
	// client's, in that order; empty when it refuses none (a consent,
	// tdm-reservation 0, a scope naming another agent).
	Refuses []string `json:"refuses"`
	// LicenseFor are, for an rsl signal whose <content> names a licence
	// Server, the purposes it grants only with a token from that server
	// (the others it refuses), in the order of Refuses; absent otherwise.
	LicenseFor []string `json:"license_for,omitempty"`
	// Terms are, for an rsl signal, the terms of the licences of its
	// <content>, one line per licence: the usages, user types and
	// countries they permit or prohibit ("not"), their payment and
	// reporting terms ("license 1 (line 4): usage ai-train; user
	// non-commercial; payment crawl (0.015 USD)"); absent otherwise.
	Terms []string `json:"terms,omitempty"`
}
