package policy

import (
	"slices"

	"github.com/robotsgate/robotsgate/robots"
)

// The labels of IETF aipref's vocabulary for one category: the current
// draft's label first (draft-ietf-aipref-vocab-07, 2026-08-19, the editor's
// copy of that date: train-ai and search, §6.1), then the labels earlier
// drafts gave the same use, which sites still write and robotsgate keeps
// reading as aliases: train-genai (-02, -03), genai and ai (-01) named AI
// training; ai-use (-02) and inference (-01) the use of content as a
// model's input; ai-output (-04) both that and search results.
var (
	aiprefTrain  = []string{"train-ai", "train-genai", "genai", "ai"}
	aiprefUse    = []string{"ai-use", "inference", "ai-output"}
	aiprefSearch = []string{"search", "ai-output"}
	// aiprefRoot are the labels earlier drafts gave the category every
	// other one belonged to (automated processing: bots in -03 and -04,
	// all in -02, tdm in -01): a refusal by one of them refuses every
	// purpose, the client's own too. A consent for a narrower category
	// in the same statement ("bots=n, search=y") does not lift it: as
	// everywhere, any refusal wins over any consent (-07 §5.1).
	aiprefRoot = []string{"bots", "all", "tdm"}
	// signalRoot is Content-Signal's "use" key, which no published
	// definition ties to one use: a "use=no" is read as the broadest
	// refusal, of every purpose.
	signalRoot = []string{"use"}
)

// vocabulary maps a client purpose to the preference names the two
// AI-usage vocabularies use for it: IETF aipref's Content-Usage categories
// and Cloudflare's Content-Signal keys. A purpose not listed is looked up
// by its own name in both. usageLabels and signalKeys add the labels that
// stand for every purpose.
var vocabulary = map[string]struct{ usage, signal []string }{
	"train-ai":    {usage: aiprefTrain, signal: []string{"ai-train"}},
	"train-genai": {usage: aiprefTrain, signal: []string{"ai-train"}},
	"ai-train":    {usage: aiprefTrain, signal: []string{"ai-train"}},
	"search":      {usage: aiprefSearch, signal: []string{"search"}},
	"ai-input":    {usage: aiprefUse, signal: []string{"ai-input"}},
	"ai-use":      {usage: aiprefUse, signal: []string{"ai-input"}},
}

// usageLabels are the Content-Usage labels whose "n" refuses purpose.
func usageLabels(purpose string) []string {
	names, ok := vocabulary[purpose]
	if !ok {
		names.usage = []string{purpose}
	}
	return append(slices.Clip(names.usage), aiprefRoot...)
}

// signalKeys are the Content-Signal keys whose "no" refuses purpose.
func signalKeys(purpose string) []string {
	names, ok := vocabulary[purpose]
	if !ok {
		names.signal = []string{purpose}
	}
	return append(slices.Clip(names.signal), signalRoot...)
}

// usageRefusal returns the first preference that refuses one of the
// purposes: a Content-Usage "n" for the path (for the group) or a
// Content-Signal "no" (for the file, fromSignal true). Any refusal of any
// statement wins over any consent (draft-ietf-aipref-vocab-07 §5.1).
func usageRefusal(f *robots.File, g robots.Group, target string, purposes []string) (pref robots.Pref, fromSignal, refused bool) {
	if len(purposes) == 0 {
		return robots.Pref{}, false, false
	}
	usage := g.ContentUsage(target)
	signals := f.ContentSignals()
	for _, p := range purposes {
		if pref, ok := refusingIn(usage, usageLabels(p), "n"); ok {
			return pref, false, true
		}
		if pref, ok := refusingIn(signals, signalKeys(p), "no"); ok {
			return pref, true, true
		}
	}
	return robots.Pref{}, false, false
}

// refusingIn returns the first preference of the statements that refuses
// (has the value no) one of names.
func refusingIn(stmts []robots.Statement, names []string, no string) (robots.Pref, bool) {
	for i := range stmts {
		if pref, ok := refusing(stmts[i].Prefs, names, no); ok {
			return pref, true
		}
	}
	return robots.Pref{}, false
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
