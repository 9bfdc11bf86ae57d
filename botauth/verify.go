package botauth

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// paramsRE matches the @signature-params Sign writes: the components
// (@authority, the Signature-Agent member or field, the others), then
// created, expires, keyid, nonce and tag in that order.
var paramsRE = regexp.MustCompile(`^\(("@authority" ("signature-agent"(?:;key="` + Label + `")?)(?: "[a-z0-9-]+")*)\);created=(\d{1,12});expires=(\d{1,12});keyid="([A-Za-z0-9_-]{43})";nonce="[A-Za-z0-9+/]{43}=";tag="([a-z-]+)"$`)

// Verify checks a request signed by Sign with the key pub at now: one
// signature labelled Label, of the shape Sign writes, covering
// @authority, the Signature-Agent member and every field of must, created
// no later than now, not expired, keyed by pub's thumbprint, tagged Tag.
// It is the check the tests' origins make; the independent check is the
// web-bot-auth npm package's (e2e/webbotauth).
func Verify(req *http.Request, pub ed25519.PublicKey, now time.Time, must ...string) error {
	in := req.Header.Get(HeaderSignatureInput)
	params, ok := strings.CutPrefix(in, Label+"=")
	if !ok || len(req.Header.Values(HeaderSignatureInput)) != 1 {
		return errors.New("botauth: no single Signature-Input labelled " + Label)
	}
	m := paramsRE.FindStringSubmatch(params)
	if m == nil {
		return fmt.Errorf("botauth: Signature-Input %q is not of the shape robotsgate signs", in)
	}
	agentComponent := m[2]
	comps := strings.Fields(m[1])[2:]
	for _, f := range must {
		if !strings.Contains(" "+m[1]+" ", ` "`+f+`" `) {
			return fmt.Errorf("botauth: the signature does not cover %q", f)
		}
	}
	created, _ := strconv.ParseInt(m[3], 10, 64)
	expires, _ := strconv.ParseInt(m[4], 10, 64)
	switch {
	case created > now.Unix():
		return errors.New("botauth: signature created in the future")
	case expires < now.Unix():
		return errors.New("botauth: signature expired")
	case m[5] != Thumbprint(pub):
		return errors.New("botauth: keyid is not the key's thumbprint")
	case m[6] != Tag:
		return errors.New("botauth: tag is not " + Tag)
	}
	agent := req.Header.Get(HeaderSignatureAgent)
	if agentComponent != `"signature-agent"` { // a member, else the bare String
		agent, ok = strings.CutPrefix(agent, Label+"=")
	}
	if !ok || !strings.HasPrefix(agent, `"`) || len(req.Header.Values(HeaderSignatureAgent)) != 1 {
		return errors.New("botauth: no single Signature-Agent of the shape robotsgate signs")
	}
	authority, err := Authority(req)
	if err != nil {
		return err
	}
	base := `"@authority": ` + authority + "\n" + agentComponent + ": " + agent + "\n"
	for _, c := range comps {
		name := strings.Trim(c, `"`)
		values := req.Header.Values(name)
		if len(values) == 0 {
			return fmt.Errorf("botauth: covered field %q is missing", name)
		}
		base += c + ": " + fieldValue(values) + "\n"
	}
	base += `"@signature-params": ` + params
	sig, ok := strings.CutPrefix(req.Header.Get(HeaderSignature), Label+"=:")
	sig, ok2 := strings.CutSuffix(sig, ":")
	raw, err := base64.StdEncoding.DecodeString(sig)
	if !ok || !ok2 || err != nil {
		return errors.New("botauth: no Signature labelled " + Label)
	}
	if !ed25519.Verify(pub, []byte(base), raw) {
		return errors.New("botauth: signature does not verify")
	}
	return nil
}
