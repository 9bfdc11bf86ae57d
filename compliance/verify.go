package compliance

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

// Judgement is a robots.txt verdict as an audit record states it: allowed
// or not, and the deciding rule ("Disallow: /private", "" when no rule
// decided) with its line (0 when none).
type Judgement struct {
	Allowed bool
	Rule    string
	Line    int
}

// judgement states a robots.Decision as the audit record does (proxy's
// newAuditRecord: the rule only when one matched).
func judgement(d robots.Decision) Judgement {
	j := Judgement{Allowed: d.Allowed}
	if d.Matched {
		j.Rule, j.Line = d.Rule.String(), d.Rule.Line
	}
	return j
}

// RestsOnRobots reports whether rec's decision rests on a robots.txt body
// the proxy archived (its robots_sha256 is set): only those can be
// replayed. The others were not judged by robots.txt rules (robots.txt
// itself, bypass clients, ignored sites, trap limits, an intercepted
// CONNECT, an unavailable or unreachable robots.txt, an archive that was
// off).
func RestsOnRobots(rec *audit.Record) bool { return rec.RobotsSHA256 != "" }

// IsHostDecision reports whether rec is the decision on a blind tunnel (a
// CONNECT that was not intercepted), which judges the host and not a path
// (policy.Engine.DecideHost). An intercepted CONNECT does not rest on
// robots.txt; the requests inside it have records of their own.
func IsHostDecision(rec *audit.Record) bool { return rec.Method == http.MethodConnect }

// ReplayJudgement judges rec again with f as the proxy judged it: a blind
// tunnel's CONNECT with robots.Group.DecideHost, as policy.Engine.DecideHost
// does; any other request with Replay (the record's agent, target and
// strict_paths).
func ReplayJudgement(f *robots.File, rec *audit.Record) Judgement {
	if IsHostDecision(rec) {
		return judgement(f.GroupForUserAgent(rec.Agent).DecideHost())
	}
	return judgement(Replay(f, rec))
}

// Agrees reports whether rec's decision agrees with the replayed
// judgement j. When the replay disallows, the record must say "disallow"
// with the same rule and line. When it allows, the record must not say
// "disallow" (it may say allow, rate-limited, usage-denied, trap-denied,
// ...: refusals that are not robots.txt rules), and a rule it names must
// be the replayed one. A monitor-mode record (enforced false) states what
// would have been decided, and agrees the same way.
func (j Judgement) Agrees(rec *audit.Record) bool {
	if !j.Allowed {
		return rec.Decision == "disallow" && rec.Rule == j.Rule && rec.Line == j.Line
	}
	if rec.Decision == "disallow" {
		return false
	}
	return rec.Rule == "" || (rec.Rule == j.Rule && rec.Line == j.Line)
}

// Outcome is what verifying one audit record found.
type Outcome uint8

// Outcomes of Bodies.Verify.
const (
	// NotJudged: the record does not rest on robots.txt (RestsOnRobots is
	// false); there is nothing to replay.
	NotJudged Outcome = iota
	// Verified: the replay agrees with the record.
	Verified
	// Disagrees: the replay contradicts the record.
	Disagrees
	// Unverifiable: the archived body could not be read (missing, or not
	// matching its SHA-256 any more).
	Unverifiable
)

// Verification is the result of replaying one audit record.
type Verification struct {
	Outcome Outcome
	// Replayed is the replay's judgement (Verified, Disagrees).
	Replayed Judgement
	// Err says why the body could not be read (Unverifiable); it wraps
	// fs.ErrNotExist when the archive does not have it (Missing).
	Err error
}

// Missing reports whether v is Unverifiable because the archive does not
// have the body (rather than having one that no longer matches its
// SHA-256, or failing to read it).
func (v Verification) Missing() bool {
	return v.Outcome == Unverifiable && errors.Is(v.Err, fs.ErrNotExist)
}

// replayFieldsCut names a field the replay needs that the record cut
// (audit.Record.Cap), "" if none.
func replayFieldsCut(rec *audit.Record) string {
	for _, f := range rec.Truncated {
		switch f {
		case "url", "agent", "rule", "canonical":
			return f
		}
	}
	return ""
}

// Verify replays rec against the archived body it names and compares the
// replay with what the record says (Judgement.Agrees). Each body is read
// and parsed once (File).
func (b *Bodies) Verify(rec *audit.Record) Verification {
	if !RestsOnRobots(rec) {
		return Verification{Outcome: NotJudged}
	}
	if cut := replayFieldsCut(rec); cut != "" {
		return Verification{Outcome: Unverifiable, Err: fmt.Errorf("the record's %s was cut to its limit when written (truncated): it cannot be replayed", cut)}
	}
	f, err := b.File(rec.RobotsSHA256)
	if err != nil {
		return Verification{Outcome: Unverifiable, Err: err}
	}
	j := ReplayJudgement(f, rec)
	if j.Agrees(rec) {
		return Verification{Outcome: Verified, Replayed: j}
	}
	return Verification{Outcome: Disagrees, Replayed: j}
}
