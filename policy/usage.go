package policy

import (
	"github.com/robotsgate/robotsgate/robots"
)

// vocabulary maps a client purpose to the preference names the two
// AI-usage vocabularies use for it: IETF aipref's Content-Usage categories
// and Cloudflare's Content-Signal keys. A purpose not listed is looked up
// by its own name in both.
var vocabulary = map[string]struct{ usage, signal []string }{
	"train-ai":    {usage: []string{"train-ai"}, signal: []string{"ai-train"}},
	"train-genai": {usage: []string{"train-genai", "train-ai"}, signal: []string{"ai-train"}},
	"ai-train":    {usage: []string{"train-ai"}, signal: []string{"ai-train"}},
	"search":      {usage: []string{"search"}, signal: []string{"search"}},
	"ai-input":    {usage: []string{"ai-use"}, signal: []string{"ai-input"}},
	"ai-use":      {usage: []string{"ai-use"}, signal: []string{"ai-input"}},
}

// usageRefusal returns the first preference that refuses one of the
// purposes: a Content-Usage "n" for the path (for the group) or a
// Content-Signal "no" (for the file, fromSignal true). Any refusal wins
// over any consent.
func usageRefusal(f *robots.File, g robots.Group, target string, purposes []string) (pref robots.Pref, fromSignal, refused bool) {
	if len(purposes) == 0 {
		return robots.Pref{}, false, false
	}
	usage := g.ContentUsage(target)
	signals := f.ContentSignals()
	for _, p := range purposes {
		names, ok := vocabulary[p]
		if !ok {
			names.usage, names.signal = []string{p}, []string{p}
		}
		if pref, ok := refusing(usage, names.usage, "n"); ok {
			return pref, false, true
		}
		if pref, ok := refusing(signals, names.signal, "no"); ok {
			return pref, true, true
		}
	}
	return robots.Pref{}, false, false
}

func refusing(prefs []robots.Pref, names []string, no string) (robots.Pref, bool) {
	for _, pref := range prefs {
		for _, n := range names {
			if pref.Name == n && pref.Value == no {
				return pref, true
			}
		}
	}
	return robots.Pref{}, false
}
