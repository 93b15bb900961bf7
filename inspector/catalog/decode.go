package catalog

import (
	"encoding/json"
	"fmt"
)

// Event is one decoded, checked and rendered event.
type Event struct {
	// Type is the event's type as sent ("" when it has none or it is not a string).
	Type string
	// Known is true for the 17 types the spec lists.
	Known bool
	// UUID, AccountID and GeneratedAt are the envelope's values as sent
	// ("" when missing or not strings).
	UUID        string
	AccountID   string
	GeneratedAt string
	// Payload points to the typed payload for Type (for example
	// *MediaReady); *Generic for an unknown type; nil when the payload is
	// not an object.
	Payload any
	// Summary is one line for list rows.
	Summary string
	// Fields is the ordered field list for the detail view.
	Fields []Field
	// Problems are the contract problems found, most of them with a path.
	Problems []Problem
	// Subject names what the event is about, for ordering checks: the
	// viewing session ("viewing_session:<id>"), else the live event
	// ("live_event:<id>"), else the media ("media:<id>"); "" when the
	// payload names none as a non-empty string.
	Subject string
}

// Field is one labelled value of an event for the detail view.
type Field struct {
	Label string
	Value string
	// Path is the JSON path into the event, e.g. "payload.media.duration".
	Path string
}

// DecodeEvent decodes one event object (the raw JSON of one element of
// events[]) into its typed payload, runs the contract checks and renders it.
// It never fails: an unknown type gives Known=false, a notice, and generic
// fields; input that is not even JSON gives an error problem.
func DecodeEvent(raw json.RawMessage) Event {
	root, err := parse(raw)
	if err != nil {
		return Event{
			Summary:  "(not JSON) " + err.Error(),
			Problems: []Problem{{Severity: SeverityError, Path: "", Message: "the event is not valid JSON: " + err.Error()}},
		}
	}
	ev := Event{}
	if root.kind == '{' {
		// The type picks the schema the walk follows.
		ev.Type = root.get("type").str()
		ev.UUID = root.get("uuid").str()
		ev.GeneratedAt = root.get("generated_at").str()
		ev.AccountID = root.get("metadata").get("account_id").str()
	}
	et := lookup(ev.Type)
	ev.Known = et != nil
	ev.Problems, ev.Fields = walk(root, et)
	if p := root.get("payload"); p != nil && p.kind == '{' {
		ev.Subject = subject(p)
		if et != nil {
			ev.Payload = typed(p, et.name)
		} else {
			g := &Generic{Fields: make(map[string]json.RawMessage, len(p.members))}
			for _, m := range p.members {
				g.Fields[m.key] = append(json.RawMessage(nil), m.val.raw...)
			}
			ev.Payload = g
		}
	}
	ev.Summary = summary(&ev)
	return ev
}

// subject names what payload p is about (Event.Subject).
func subject(p *value) string {
	for _, s := range []string{"viewing_session", "live_event", "media"} {
		if id := p.get(s).get("id").str(); id != "" {
			return s + ":" + id
		}
	}
	return ""
}

// typed decodes payload p of a known type into its typed struct with
// encoding/json: a member of the wrong kind stays zero (the checks report
// it), a repeated key keeps the last value, as the checks read it.
func typed(p *value, typ string) any {
	v := newPayload(typ)
	_ = json.Unmarshal(p.raw, v)
	if pw, ok := v.(*ViewingPercentWatched); ok && pw.PercentWatched == nil {
		// 50.0 is the threshold 50 written as a float (a notice), which
		// encoding/json refuses for an int.
		if n, ok := p.get("percent_watched").num(); ok && n == float64(int(n)) {
			i := int(n)
			pw.PercentWatched = &i
		}
	}
	return v
}

// newPayload returns a new zero typed payload for a known type.
func newPayload(typ string) any {
	switch typ {
	case TypeMediaCreated:
		return new(MediaCreated)
	case TypeMediaProcessing:
		return new(MediaProcessing)
	case TypeMediaReady:
		return new(MediaReady)
	case TypeMediaFailed:
		return new(MediaFailed)
	case TypeMediaUpdated:
		return new(MediaUpdated)
	case TypeMediaTranscriptUpdated:
		return new(MediaTranscriptUpdated)
	case TypeMediaTranscriptFailed:
		return new(MediaTranscriptFailed)
	case TypeMediaDeleted:
		return new(MediaDeleted)
	case TypeMediaTranslationCreated:
		return new(MediaTranslationCreated)
	case TypeMediaLocalizationCreated:
		return new(MediaLocalizationCreated)
	case TypeMediaLocalizationFailed:
		return new(MediaLocalizationFailed)
	case TypeViewingPlay:
		return new(ViewingPlay)
	case TypeViewingPercentWatched:
		return new(ViewingPercentWatched)
	case TypeViewingTurnstile:
		return new(ViewingTurnstileConverted)
	case TypeViewingCallToAction:
		return new(ViewingCallToActionConverted)
	case TypeViewingAnnotation:
		return new(ViewingAnnotationConverted)
	case TypeLiveEventRegistration:
		return new(LiveEventRegistration)
	}
	panic(fmt.Sprintf("catalog: type %q is in the table but has no typed payload", typ))
}
