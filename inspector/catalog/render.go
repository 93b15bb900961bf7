package catalog

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/pretty"
)

// CurrentSenderVersion is the Service-Webhooks version the spec calls current.
const CurrentSenderVersion = "0.0.47"

// UserAgentPrefix starts the User-Agent of every delivery the service sends.
const UserAgentPrefix = "Service-Webhooks/"

// Pretty returns body indented for people by tidwall/pretty: members one
// per line, two spaces per level, short arrays of scalars on one line. The
// input is never modified; input that is not a single JSON value (as
// encoding/json defines it) is returned unchanged, because reformatting it
// would hide what actually arrived.
func Pretty(body []byte) []byte {
	if !json.Valid(body) {
		return body
	}
	return pretty.Pretty(body)
}

// PrettyColor is Pretty with ANSI colours, for a terminal.
func PrettyColor(body []byte) []byte {
	if !json.Valid(body) {
		return body
	}
	return pretty.Color(pretty.Pretty(body), nil)
}

// CheckDelivery runs the delivery-level checks of spec 4.3 on a request's
// headers: User-Agent Service-Webhooks/<version>, Content-Type
// application/json, and a Content-Length equal to the body's length. It
// also marks a request a browser sent (an Origin header).
func CheckDelivery(h http.Header, bodyLen int64) []Problem {
	var out []Problem
	add := func(sev Severity, path, format string, a ...any) {
		out = append(out, Problem{Severity: sev, Path: path, Message: fmt.Sprintf(format, a...)})
	}
	// A browser adds Origin to a cross-site POST (a form or a fetch from
	// any web page the developer has open); the service sends none.
	if origin, ok := h["Origin"]; ok && len(origin) > 0 {
		add(SeverityWarning, "Origin", "Origin is %q: a web page in a browser posted this, not the service (which sends no Origin). Any page open in a browser can post to a receiver it can reach; trust only deliveries whose signature verifies", origin[0])
	}
	ua, hasUA := h["User-Agent"]
	switch {
	case !hasUA || len(ua) == 0:
		add(SeverityWarning, "User-Agent", "the delivery has no User-Agent; the service sends %s<version> (currently %s)", UserAgentPrefix, CurrentSenderVersion)
	case !strings.HasPrefix(ua[0], UserAgentPrefix) || len(ua[0]) == len(UserAgentPrefix):
		add(SeverityWarning, "User-Agent", "User-Agent is %q; the service sends %s<version> (currently %s), so this did not come from the service as documented", ua[0], UserAgentPrefix, CurrentSenderVersion)
	case ua[0][len(UserAgentPrefix):] != CurrentSenderVersion:
		add(SeverityNotice, "User-Agent", "the sender is version %s; the spec documents %s as current, so payloads may differ from it", ua[0][len(UserAgentPrefix):], CurrentSenderVersion)
	}
	ct := h.Get("Content-Type")
	if ct == "" {
		add(SeverityError, "Content-Type", "the delivery has no Content-Type; the service always sends application/json")
	} else if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		add(SeverityError, "Content-Type", "Content-Type is %q; the service always sends application/json", ct)
	}
	// A compressed body is kept as received (the bytes are the evidence, and
	// the signature covers them); the problem explains why it reads as
	// binary and does not decode.
	if ce := strings.TrimSpace(h.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		add(SeverityError, "Content-Encoding", "Content-Encoding is %q; the service sends uncompressed JSON. The body is stored and shown as received (not decompressed), so it does not decode", ce)
	}
	cl, hasCL := h["Content-Length"]
	switch {
	case !hasCL || len(cl) == 0:
		add(SeverityWarning, "Content-Length", "the delivery has no Content-Length (chunked?); the service sends the body's byte length (%d)", bodyLen)
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64)
		switch {
		case err != nil || n < 0:
			add(SeverityError, "Content-Length", "Content-Length is %q, not a byte count", cl[0])
		case n != bodyLen:
			add(SeverityError, "Content-Length", "Content-Length says %d bytes but the body has %d", n, bodyLen)
		}
	}
	return out
}

// --- summaries ---

// shorten cuts s to n runes with an ellipsis, for ids in list rows.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// maskEmail keeps an address recognisable in a list row without showing
// it whole: "jane@…".
func maskEmail(s string) string {
	if i := strings.IndexByte(s, '@'); i > 0 {
		return s[:i+1] + "…"
	}
	return shorten(s, 12)
}

func quoteName(s string) string {
	if s == "" {
		return `""`
	}
	return `"` + shorten(s, 60) + `"`
}

func mediaText(m *Media) string {
	if m == nil {
		return "(no media)"
	}
	return quoteName(m.Name) + " (" + m.ID + ")"
}

func mediaName(m *Media) string {
	if m == nil {
		return "(no media)"
	}
	return quoteName(m.Name)
}

func durationText(d *float64) string {
	if d == nil {
		return "duration unknown"
	}
	return strconv.FormatFloat(*d, 'f', -1, 64) + " s"
}

func visitorText(v *Visitor) string {
	if v == nil {
		return "an unknown visitor"
	}
	return "visitor " + shorten(v.ID, 5)
}

func startsText(s string) string {
	if t, zoned := parseISO(s); !t.IsZero() {
		if zoned {
			t = t.UTC()
		}
		return t.Format("2006-01-02 15:04") + " UTC"
	}
	return s
}

func summary(ev *Event) string {
	typ := ev.Type
	if typ == "" {
		typ = "(no type)"
	}
	s := summaryBody(ev)
	if s == "" {
		return typ
	}
	return typ + " — " + s
}

func summaryBody(ev *Event) string {
	switch p := ev.Payload.(type) {
	case *MediaCreated:
		return mediaText(p.Media) + projectText(p.Project)
	case *MediaProcessing:
		return mediaText(p.Media) + projectText(p.Project)
	case *MediaReady:
		if p.Media == nil {
			return mediaText(nil)
		}
		return mediaText(p.Media) + " " + durationText(p.Media.Duration)
	case *MediaFailed:
		return mediaText(p.Media)
	case *MediaUpdated:
		changed := previousKeys(p)
		if changed == "" {
			return mediaText(p.Media) + " updated"
		}
		return mediaText(p.Media) + ": " + changed + " changed"
	case *MediaTranscriptUpdated:
		if p.Transcript == nil {
			return "captions for " + mediaText(p.Media)
		}
		return p.Transcript.LanguageCode + " captions for " + mediaText(p.Media)
	case *MediaTranscriptFailed:
		if p.Transcript == nil {
			return "captions failed for " + mediaText(p.Media)
		}
		s := p.Transcript.LanguageCode + " captions failed for " + mediaText(p.Media)
		if p.Transcript.Reason != nil {
			s += ": " + shorten(*p.Transcript.Reason, 80)
		}
		return s
	case *MediaDeleted:
		id := "(no media)"
		if p.Media != nil {
			id = p.Media.ID
		}
		return id + projectText(p.Project)
	case *MediaTranslationCreated:
		if p.Transcript == nil {
			return "translation of " + mediaText(p.Media)
		}
		return p.Transcript.LanguageName + " (" + p.Transcript.LanguageCode + ") translation of " + mediaText(p.Media)
	case *MediaLocalizationCreated:
		if p.Localization == nil {
			return "localization of " + mediaText(p.Media)
		}
		s := p.Localization.LanguageName + " (" + p.Localization.LanguageCode + ") localization of " + mediaText(p.Media)
		if p.Localization.Enabled {
			s += ", enabled"
		}
		return s
	case *MediaLocalizationFailed:
		if p.Localization == nil {
			return "localization failed for " + mediaText(p.Media)
		}
		return p.Localization.LanguageName + " (" + p.Localization.LanguageCode + ") localization failed for " + mediaText(p.Media)
	case *ViewingPlay:
		return mediaName(p.Media) + " played by " + visitorText(p.Visitor)
	case *ViewingPercentWatched:
		pct := "?"
		if p.PercentWatched != nil {
			pct = strconv.Itoa(*p.PercentWatched)
		}
		return pct + "% of " + mediaName(p.Media) + " by " + visitorText(p.Visitor)
	case *ViewingTurnstileConverted:
		return maskEmail(p.Email) + " via the form on " + mediaName(p.Media) + " (" + visitorText(p.Visitor) + ")"
	case *ViewingCallToActionConverted:
		return visitorText(p.Visitor) + " clicked " + shorten(p.URL, 60) + " on " + mediaName(p.Media)
	case *ViewingAnnotationConverted:
		return visitorText(p.Visitor) + " followed " + shorten(p.URL, 60) + " on " + mediaName(p.Media)
	case *LiveEventRegistration:
		who := "someone"
		if p.Registration != nil {
			if e := p.Registration.Fields["email"]; e != "" {
				who = maskEmail(e)
			} else if p.Registration.VisitorKey != "" {
				who = "visitor " + shorten(p.Registration.VisitorKey, 5)
			}
		}
		if p.LiveEvent == nil {
			return who + " registered"
		}
		return who + " for " + quoteName(p.LiveEvent.Name) + " (starts " + startsText(p.LiveEvent.StartsAt) + ")"
	case *Generic:
		return fmt.Sprintf("unknown type, %d payload fields", len(p.Fields))
	}
	return ""
}

func projectText(p *Project) string {
	if p == nil {
		return ""
	}
	return " in " + quoteName(p.Name)
}

// previousKeys lists the attributes a media.updated says changed.
func previousKeys(p *MediaUpdated) string {
	v, err := parse(p.PreviousAttributes)
	if err != nil || v.kind != '{' {
		return ""
	}
	keys := make([]string, len(v.members))
	for i, m := range v.members {
		keys[i] = m.key
	}
	return strings.Join(keys, ", ")
}
