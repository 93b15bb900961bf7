package catalog

import (
	"encoding/json"
	"fmt"
)

// The typed payload as it was read before the walker's slots: every field
// looked up by name (tree.get). Tests compare the slot reader with it.

// referenceEvent decodes raw's envelope values, payload and summary the
// old way (by name); ok is false when raw is not JSON.
func referenceEvent(raw []byte) (ev Event, ok bool) {
	t, err := parse(string(raw), nil)
	if err != nil {
		return Event{}, false
	}
	if t.kindOf(0) == kindObject {
		ev.Type = t.text(t.get(0, "type"))
		ev.UUID = t.text(t.get(0, "uuid"))
		ev.GeneratedAt = t.text(t.get(0, "generated_at"))
		ev.AccountID = t.text(t.get(t.get(0, "metadata"), "account_id"))
	}
	et := lookup(ev.Type)
	ev.Known = et != nil
	if p := t.get(0, "payload"); p >= 0 && t.kindOf(p) == kindObject {
		if et != nil {
			ev.Payload = typedRef(t, p, et.name)
		} else {
			g := &Generic{Fields: map[string]json.RawMessage{}}
			for m := t.nodes[p].first; m >= 0; m = t.nodes[m].next {
				g.Fields[t.key(m)] = append(json.RawMessage(nil), t.json(m)...)
			}
			ev.Payload = g
		}
	}
	ev.Summary = summary(&ev)
	return ev, true
}

func strRef(t *tree, obj int32, k string) string { return t.text(t.get(obj, k)) }

func optStrRef(t *tree, obj int32, k string) *string {
	m := t.get(obj, k)
	if m < 0 || t.kindOf(m) != kindString {
		return nil
	}
	s := t.text(m)
	return &s
}

func optNumRef(t *tree, obj int32, k string) *float64 {
	if v, ok := t.num(t.get(obj, k)); ok {
		return &v
	}
	return nil
}

// sub returns the member object k of obj, or -1 when it is absent or not an
// object, in which case the typed field stays nil.
func subRef(t *tree, obj int32, k string) int32 {
	m := t.get(obj, k)
	if m < 0 || t.kindOf(m) != kindObject {
		return -1
	}
	return m
}

func readMediaRef(t *tree, p int32) *Media {
	o := subRef(t, p, "media")
	if o < 0 {
		return nil
	}
	m := &Media{ID: strRef(t, o, "id"), Name: strRef(t, o, "name"), URL: strRef(t, o, "url"), Duration: optNumRef(t, o, "duration")}
	if th := subRef(t, o, "thumbnail"); th >= 0 {
		m.Thumbnail = &Thumbnail{URL: strRef(t, th, "url")}
	}
	return m
}

func readProjectRef(t *tree, p int32) *Project {
	o := subRef(t, p, "project")
	if o < 0 {
		return nil
	}
	return &Project{ID: strRef(t, o, "id"), Name: strRef(t, o, "name")}
}

func readVisitorRef(t *tree, p int32) *Visitor {
	o := subRef(t, p, "visitor")
	if o < 0 {
		return nil
	}
	return &Visitor{ID: strRef(t, o, "id"), Email: optStrRef(t, o, "email"), Name: optStrRef(t, o, "name")}
}

func readSessionRef(t *tree, p int32) *ViewingSession {
	o := subRef(t, p, "viewing_session")
	if o < 0 {
		return nil
	}
	return &ViewingSession{ID: strRef(t, o, "id")}
}

func readStringMapRef(t *tree, obj int32, k string) map[string]string {
	o := subRef(t, obj, k)
	if o < 0 {
		return nil
	}
	out := map[string]string{}
	for m := t.nodes[o].first; m >= 0; m = t.nodes[m].next {
		if t.kindOf(m) == kindString {
			out[t.key(m)] = t.text(m)
		}
	}
	return out
}

// typed builds the typed payload of a known type from payload object p.
func typedRef(t *tree, p int32, typ string) any {
	switch typ {
	case TypeMediaCreated:
		return &MediaCreated{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
	case TypeMediaProcessing:
		return &MediaProcessing{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
	case TypeMediaReady:
		return &MediaReady{Media: readMediaRef(t, p)}
	case TypeMediaFailed:
		return &MediaFailed{Media: readMediaRef(t, p)}
	case TypeMediaUpdated:
		v := &MediaUpdated{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
		if pa := t.get(p, "previous_attributes"); pa >= 0 {
			v.PreviousAttributes = append(json.RawMessage(nil), t.json(pa)...)
		}
		return v
	case TypeMediaTranscriptUpdated:
		v := &MediaTranscriptUpdated{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
		if o := subRef(t, p, "transcript"); o >= 0 {
			v.Transcript = &Transcript{HashedID: strRef(t, o, "hashed_id"), LanguageCode: strRef(t, o, "language_code")}
		}
		return v
	case TypeMediaTranscriptFailed:
		v := &MediaTranscriptFailed{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
		if o := subRef(t, p, "transcript"); o >= 0 {
			v.Transcript = &FailedTranscript{HashedID: strRef(t, o, "hashed_id"), LanguageCode: strRef(t, o, "language_code"), Reason: optStrRef(t, o, "reason")}
		}
		return v
	case TypeMediaDeleted:
		v := &MediaDeleted{Project: readProjectRef(t, p)}
		if o := subRef(t, p, "media"); o >= 0 {
			v.Media = &DeletedMedia{ID: strRef(t, o, "id")}
		}
		return v
	case TypeMediaTranslationCreated:
		v := &MediaTranslationCreated{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
		if o := subRef(t, p, "transcript"); o >= 0 {
			v.Transcript = &Translation{
				HashedID: strRef(t, o, "hashed_id"), ISO6392LanguageCode: strRef(t, o, "iso639_2_language_code"),
				LanguageCode: strRef(t, o, "language_code"), LanguageName: strRef(t, o, "language_name"),
				LanguageNativeName: strRef(t, o, "language_native_name"), TranscriptText: strRef(t, o, "transcript_text"),
			}
		}
		return v
	case TypeMediaLocalizationCreated:
		v := &MediaLocalizationCreated{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
		if o := subRef(t, p, "localization"); o >= 0 {
			l := &Localization{
				HashedID: strRef(t, o, "hashed_id"), CreatedAt: strRef(t, o, "created_at"),
				EnabledAt: strRef(t, o, "enabled_at"), OrderedAt: strRef(t, o, "ordered_at"), UpdatedAt: strRef(t, o, "updated_at"),
				ISO6392LanguageCode: strRef(t, o, "iso639_2_language_code"), LanguageCode: strRef(t, o, "language_code"),
				LanguageName: strRef(t, o, "language_name"), NativeLanguageName: strRef(t, o, "native_language_name"),
			}
			if e := t.get(o, "enabled"); e >= 0 && t.kindOf(e) == kindBool {
				l.Enabled = string(t.raw(e)) == "true"
			}
			if s := subRef(t, o, "source_media"); s >= 0 {
				l.SourceMedia = &SourceMedia{CreatedAt: strRef(t, s, "created_at"), Duration: optNumRef(t, s, "duration"),
					HashedID: strRef(t, s, "hashed_id"), Name: strRef(t, s, "name"), UpdatedAt: strRef(t, s, "updated_at")}
			}
			if s := subRef(t, o, "transcript"); s >= 0 {
				l.Transcript = &LocalizationTranscript{CreatedAt: strRef(t, s, "created_at"), HashedID: strRef(t, s, "hashed_id"),
					LanguageName: strRef(t, s, "language_name"), NativeLanguageName: strRef(t, s, "native_language_name"),
					Text: strRef(t, s, "text"), UpdatedAt: strRef(t, s, "updated_at")}
			}
			v.Localization = l
		}
		return v
	case TypeMediaLocalizationFailed:
		v := &MediaLocalizationFailed{Media: readMediaRef(t, p), Project: readProjectRef(t, p)}
		if o := subRef(t, p, "localization"); o >= 0 {
			v.Localization = &FailedLocalization{HashedID: strRef(t, o, "hashed_id"), LanguageCode: strRef(t, o, "language_code"), LanguageName: strRef(t, o, "language_name")}
		}
		return v
	case TypeViewingPlay:
		return &ViewingPlay{Visitor: readVisitorRef(t, p), ViewingSession: readSessionRef(t, p), Media: readMediaRef(t, p)}
	case TypeViewingPercentWatched:
		v := &ViewingPercentWatched{Visitor: readVisitorRef(t, p), ViewingSession: readSessionRef(t, p), Media: readMediaRef(t, p)}
		if f := optNumRef(t, p, "percent_watched"); f != nil && *f == float64(int(*f)) {
			n := int(*f)
			v.PercentWatched = &n
		}
		return v
	case TypeViewingTurnstile:
		return &ViewingTurnstileConverted{Visitor: readVisitorRef(t, p), ViewingSession: readSessionRef(t, p),
			Name: optStrRef(t, p, "name"), Email: strRef(t, p, "email"), Media: readMediaRef(t, p)}
	case TypeViewingCallToAction:
		return &ViewingCallToActionConverted{Visitor: readVisitorRef(t, p), ViewingSession: readSessionRef(t, p), URL: strRef(t, p, "url"), Media: readMediaRef(t, p)}
	case TypeViewingAnnotation:
		return &ViewingAnnotationConverted{Visitor: readVisitorRef(t, p), ViewingSession: readSessionRef(t, p), URL: strRef(t, p, "url"), Media: readMediaRef(t, p)}
	case TypeLiveEventRegistration:
		v := &LiveEventRegistration{Location: readStringMapRef(t, p, "location"), UTM: readStringMapRef(t, p, "utm"), ReferrerURL: strRef(t, p, "referrer_url")}
		if o := subRef(t, p, "live_event"); o >= 0 {
			v.LiveEvent = &LiveEvent{ID: strRef(t, o, "id"), Name: strRef(t, o, "name"), URL: strRef(t, o, "url"), StartsAt: strRef(t, o, "starts_at")}
		}
		if o := subRef(t, p, "registration"); o >= 0 {
			v.Registration = &Registration{VisitorKey: strRef(t, o, "visitor_key"), RegisteredAt: strRef(t, o, "registered_at"), Fields: readStringMapRef(t, o, "fields")}
		}
		return v
	}
	panic(fmt.Sprintf("catalog: type %q is in the table but has no typed payload", typ))
}
