package refusal

import (
	"net/http"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
)

// Every refusal of a policy decision answers with the status
// audit.Decisions lists for its decision (docs/decisions.md's table),
// but for the one variant the table names: a trap's spent page budget,
// 429.
func TestDecisionRefusalsAnswerTheDecisionsStatus(t *testing.T) {
	listed := map[string]int{}
	for _, d := range audit.Decisions() {
		listed[d.Name] = d.Status
	}
	for v := policy.Disallow; v <= policy.LicenseRequired; v++ {
		d := policy.Decision{Verdict: v, Note: "a note", RetryAfter: time.Second, Pause: &pacing.Pause{Until: time.Now().Add(time.Minute)}}
		r := Describe(&d, time.Minute)
		want := listed[v.String()]
		if v == policy.TrapBudget {
			want = http.StatusTooManyRequests
		}
		if r.Decision() != v.String() || r.Status() != want || want == 0 {
			t.Errorf("%s: refusal %s %d, want %s %d", v, r.Decision(), r.Status(), v, want)
		}
	}
}
