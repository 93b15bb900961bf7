package catalog

// valueKind is what the spec says a field holds.
type valueKind uint8

const (
	vString valueKind = iota
	vNumber
	vInteger
	vBool
	// vObject is an object with listed members (sub).
	vObject
	// vStringMap is an open object whose values are strings (registration
	// fields, location, utm): any key is fine.
	vStringMap
	// vAnyObject is an object of any shape (previous_attributes).
	vAnyObject
)

func (v valueKind) String() string {
	switch v {
	case vString:
		return "a string"
	case vNumber:
		return "a number"
	case vInteger:
		return "an integer"
	case vBool:
		return "a boolean"
	case vStringMap:
		return "an object of strings"
	}
	return "an object"
}

// tsRule is the timestamp format a string field must follow.
type tsRule uint8

const (
	tsNone tsRule = iota
	// tsUTC: ISO 8601, always UTC (generated_at).
	tsUTC
	// tsOffset: ISO 8601 with a +00:00 offset (localization timestamps).
	tsOffset
	// tsISO: ISO 8601 (live event and registration times).
	tsISO
)

// field describes one member of an object as the spec lists it.
type field struct {
	name     string
	label    string
	kind     valueKind
	optional bool
	ts       tsRule
	// unit is appended to numbers in field lists (" s" for durations).
	unit string
	sub  []field
	// extra decides how unlisted members of this object are reported;
	// nil means the default notice.
	extra extraRule
	// identifies, when set, makes the field identifying and says what a
	// consumer needs it for: missing, null, empty or of the wrong type it
	// is an error. Other fields are descriptive (a warning when missing
	// or null).
	identifies string
	// path is the JSON path from the event root, filled in by build.
	path string
}

// extraRule returns the severity and message for an unlisted member, or
// ok=false to fall back to the default notice.
type extraRule func(typ, key, path string) (Severity, string, bool)

// eventType is one row of the spec's event table.
type eventType struct {
	name       string
	occursWhen string
	payload    []field
	// noProject marks the types whose payloads the spec says carry no project.
	noProject bool
}

func mediaFields() []field {
	return []field{
		{name: "id", label: "Media ID", identifies: "look up the media the event is about"},
		{name: "name", label: "Media name"},
		{name: "url", label: "Media URL"},
		{name: "duration", label: "Duration", kind: vNumber, unit: " s"},
		{name: "thumbnail", label: "Thumbnail", kind: vObject, sub: []field{{name: "url", label: "Thumbnail URL"}}},
	}
}

func media() field {
	return field{name: "media", label: "Media", kind: vObject, sub: mediaFields(), identifies: "know which media the event is about"}
}

func project() field {
	return field{name: "project", label: "Project", kind: vObject, sub: []field{
		{name: "id", label: "Project ID", identifies: "know which project holds the media"},
		{name: "name", label: "Project name"},
	}}
}

// visitor is the visitor object; withContact allows email and name, which
// the spec allows only in viewing_session.percent_watched.
func visitor(withContact bool) field {
	f := field{name: "visitor", label: "Visitor", kind: vObject, identifies: "know who watched",
		sub: []field{{name: "id", label: "Visitor ID", identifies: "know who watched"}}}
	if withContact {
		f.sub = append(f.sub,
			field{name: "email", label: "Visitor email", optional: true},
			field{name: "name", label: "Visitor name", optional: true})
		return f
	}
	f.extra = func(typ, key, path string) (Severity, string, bool) {
		if key != "email" && key != "name" {
			return "", "", false
		}
		msg := path + " is present, but the spec puts the visitor's " + key + " only in viewing_session.percent_watched (when a form was submitted in the same session)"
		if typ == TypeViewingTurnstile {
			msg += "; in a turnstile conversion it belongs at payload." + key
		}
		return SeverityNotice, msg, true
	}
	return f
}

func session() field {
	return field{name: "viewing_session", label: "Viewing session", kind: vObject, identifies: "group the events of one viewing",
		sub: []field{{name: "id", label: "Viewing session ID", identifies: "group the events of one viewing"}}}
}

// eventTypes is the catalogue, in the spec's order. It is built once and
// never modified: the package keeps no mutable state.
var eventTypes = buildTypes()

// envelope lists the members of every event object.
var envelope = build("", []field{
	{name: "uuid", label: "Event UUID", identifies: "recognise duplicates of the same event"},
	{name: "type", label: "Type", identifies: "know what happened and how to read the payload"},
	{name: "metadata", label: "Metadata", kind: vObject, identifies: "know which account the event belongs to",
		sub: []field{{name: "account_id", label: "Account ID", identifies: "know which account the event belongs to"}}},
	{name: "generated_at", label: "Generated at", ts: tsUTC, identifies: "order events (delivery order is not guaranteed)"},
	// Last, so the field list shows the envelope before the payload.
	{name: "payload", label: "Payload", kind: vAnyObject, identifies: "read what happened"},
})

func buildTypes() []eventType {
	deletedMedia := field{name: "media", label: "Media", kind: vObject, identifies: "know which media was deleted",
		sub: []field{{name: "id", label: "Media ID", identifies: "know which media was deleted"}},
		extra: func(typ, key, path string) (Severity, string, bool) {
			return SeverityNotice, path + " is present, but in media.deleted the spec says the media object carries only id (spec 2.4)", true
		}}
	ts := func(name, label string, rule tsRule) field { return field{name: name, label: label, ts: rule} }
	types := []eventType{
		{name: TypeMediaCreated, occursWhen: "A media is created.", payload: []field{media(), project()}},
		{name: TypeMediaProcessing, occursWhen: "Processing starts.", payload: []field{media(), project()}},
		{name: TypeMediaReady, occursWhen: "Processing is complete and all dependent video and image assets are encoded; playable.", payload: []field{media()}, noProject: true},
		{name: TypeMediaFailed, occursWhen: "Processing failed.", payload: []field{media()}, noProject: true},
		{name: TypeMediaUpdated, occursWhen: "A media is replaced, or its title, description or thumbnail changes (via the web UI or the Data API).", payload: []field{media(), project(),
			{name: "previous_attributes", label: "Previous", kind: vAnyObject}}},
		{name: TypeMediaTranscriptUpdated, occursWhen: "New captions are generated (automated or human).", payload: []field{media(), project(),
			{name: "transcript", label: "Transcript", kind: vObject, identifies: "know which transcript changed", sub: []field{
				{name: "hashed_id", label: "Transcript ID", identifies: "fetch the transcript"},
				{name: "language_code", label: "Language code", identifies: "fetch the transcript in that language (captions show endpoint)"},
			}}}},
		{name: TypeMediaTranscriptFailed, occursWhen: "Transcript generation fails.", payload: []field{media(), project(),
			{name: "transcript", label: "Transcript", kind: vObject, identifies: "know which transcript failed", sub: []field{
				{name: "hashed_id", label: "Transcript ID", identifies: "know which transcript failed"},
				{name: "language_code", label: "Language code", identifies: "know which language failed"},
				{name: "reason", label: "Reason", optional: true},
			}}}},
		{name: TypeMediaDeleted, occursWhen: "A media is deleted.", payload: []field{deletedMedia, project()}},
		{name: TypeMediaTranslationCreated, occursWhen: "A translation is created for a media.", payload: []field{media(), project(),
			{name: "transcript", label: "Translation", kind: vObject, identifies: "know which translation was created", sub: []field{
				{name: "hashed_id", label: "Translation ID", identifies: "fetch the translation"},
				{name: "iso639_2_language_code", label: "ISO 639-2 code"},
				{name: "language_code", label: "Language code", identifies: "know the translation's language"},
				{name: "language_name", label: "Language"},
				{name: "language_native_name", label: "Native language name"},
				{name: "transcript_text", label: "Text"},
			}}}},
		{name: TypeMediaLocalizationCreated, occursWhen: "A localization is created.", payload: []field{media(), project(),
			{name: "localization", label: "Localization", kind: vObject, identifies: "know which localization was created", sub: []field{
				{name: "hashed_id", label: "Localization ID", identifies: "fetch the localization"},
				ts("created_at", "Created at", tsOffset),
				{name: "enabled", label: "Enabled", kind: vBool},
				ts("enabled_at", "Enabled at", tsOffset),
				ts("ordered_at", "Ordered at", tsOffset),
				ts("updated_at", "Updated at", tsOffset),
				{name: "iso639_2_language_code", label: "ISO 639-2 code"},
				{name: "language_code", label: "Language code", identifies: "know the localization's language"},
				{name: "language_name", label: "Language"},
				{name: "native_language_name", label: "Native language name"},
				{name: "source_media", label: "Source media", kind: vObject, sub: []field{
					ts("created_at", "Source media created at", tsOffset),
					{name: "duration", label: "Source media duration", kind: vNumber, unit: " s"},
					{name: "hashed_id", label: "Source media ID", identifies: "know which media the localization was made from"},
					{name: "name", label: "Source media name"},
					ts("updated_at", "Source media updated at", tsOffset),
				}},
				{name: "transcript", label: "Transcript", kind: vObject, sub: []field{
					ts("created_at", "Transcript created at", tsOffset),
					{name: "hashed_id", label: "Transcript ID", identifies: "fetch the localization's transcript"},
					{name: "language_name", label: "Transcript language"},
					{name: "native_language_name", label: "Transcript native language"},
					{name: "text", label: "Transcript text"},
					ts("updated_at", "Transcript updated at", tsOffset),
				}},
			}}}},
		{name: TypeMediaLocalizationFailed, occursWhen: "Localization fails.", payload: []field{media(), project(),
			{name: "localization", label: "Localization", kind: vObject, identifies: "know which localization failed", sub: []field{
				{name: "hashed_id", label: "Localization ID", identifies: "know which localization failed"},
				{name: "language_code", label: "Language code", identifies: "know which language failed"},
				{name: "language_name", label: "Language"},
			}}}},
		{name: TypeViewingPlay, occursWhen: "A person presses play for the first time per page visit, or the video autoplays.", payload: []field{visitor(false), session(), media()}, noProject: true},
		{name: TypeViewingPercentWatched, occursWhen: "Watched percentage reaches 25, 50, 75 or 100.", payload: []field{visitor(true), session(),
			{name: "percent_watched", label: "Percent watched", kind: vInteger, unit: "%", identifies: "know which threshold was reached"}, media()}, noProject: true},
		{name: TypeViewingTurnstile, occursWhen: "A visitor is tagged with an email address (and possibly name) through a form.", payload: []field{visitor(false), session(),
			{name: "name", label: "Name", optional: true},
			{name: "email", label: "Email", identifies: "know who converted (the point of the event)"},
			media()}, noProject: true},
		{name: TypeViewingCallToAction, occursWhen: "A visitor clicks a call to action on a video.", payload: []field{visitor(false), session(),
			{name: "url", label: "Call to action URL"}, media()}, noProject: true},
		{name: TypeViewingAnnotation, occursWhen: "A visitor clicks an annotation link.", payload: []field{visitor(false), session(),
			{name: "url", label: "Annotation URL"}, media()}, noProject: true},
		{name: TypeLiveEventRegistration, occursWhen: "Someone registers for a live event.", payload: []field{
			{name: "live_event", label: "Live event", kind: vObject, identifies: "know which live event the registration is for", sub: []field{
				{name: "id", label: "Live event ID", identifies: "know which live event the registration is for"},
				{name: "name", label: "Live event name"},
				{name: "url", label: "Live event URL"},
				ts("starts_at", "Starts at", tsISO),
			}},
			{name: "registration", label: "Registration", kind: vObject, identifies: "know who registered", sub: []field{
				{name: "visitor_key", label: "Visitor key", identifies: "know who registered"},
				ts("registered_at", "Registered at", tsISO),
				{name: "fields", label: "Form", kind: vStringMap},
			}},
			{name: "location", label: "Location", kind: vStringMap},
			{name: "utm", label: "UTM", kind: vStringMap},
			{name: "referrer_url", label: "Referrer URL"},
		}, noProject: true},
	}
	for i := range types {
		types[i].payload = build("payload", types[i].payload)
	}
	return types
}

// build fills in the JSON paths of fs below prefix.
func build(prefix string, fs []field) []field {
	for i := range fs {
		fs[i].path = join(prefix, fs[i].name)
		if fs[i].sub != nil {
			fs[i].sub = build(fs[i].path, fs[i].sub)
		}
	}
	return fs
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// lookup finds a type by name.
func lookup(name string) *eventType {
	for i := range eventTypes {
		if eventTypes[i].name == name {
			return &eventTypes[i]
		}
	}
	return nil
}

// TypeInfo describes one event type for filters and documentation.
type TypeInfo struct {
	Name string
	// OccursWhen is the spec's one-line description.
	OccursWhen string
	// Fields are the payload's top-level field names in spec order.
	Fields []string
}

// Types returns the 17 event types in the spec's order.
func Types() []TypeInfo {
	out := make([]TypeInfo, len(eventTypes))
	for i, t := range eventTypes {
		names := make([]string, len(t.payload))
		for j, f := range t.payload {
			names[j] = f.name
		}
		out[i] = TypeInfo{Name: t.name, OccursWhen: t.occursWhen, Fields: names}
	}
	return out
}

// TypeNames returns the 17 type names in the spec's order.
func TypeNames() []string {
	out := make([]string, len(eventTypes))
	for i, t := range eventTypes {
		out[i] = t.name
	}
	return out
}

// IsKnown reports whether name is one of the 17 types.
func IsKnown(name string) bool { return lookup(name) != nil }
