package catalog

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
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
	var d Decoder
	return d.Decode(raw)
}

// Decoder is DecodeEvent with reusable scratch space: decoding a batch with
// one Decoder saves an allocation per event. The zero value is ready to
// use; a Decoder is not safe for concurrent use.
type Decoder struct {
	nodes []node
}

// DecodeEvents decodes a batch, spreading the events over workers
// goroutines (at least 1), each with its own Decoder. The result is in
// input order.
func DecodeEvents(raws []json.RawMessage, workers int) []Event {
	out := make([]Event, len(raws))
	workers = max(1, min(workers, len(raws)/64+1))
	var wg sync.WaitGroup
	chunk := (len(raws) + workers - 1) / workers
	for lo := 0; lo < len(raws); lo += chunk {
		hi := min(lo+chunk, len(raws))
		wg.Go(func() {
			var d Decoder
			for i := lo; i < hi; i++ {
				out[i] = d.Decode(raws[i])
			}
		})
	}
	wg.Wait()
	return out
}

// Decode is DecodeEvent reusing d's scratch space.
func (d *Decoder) Decode(raw json.RawMessage) Event {
	t, err := parse(string(raw), d.nodes)
	if err != nil {
		return Event{
			Summary:  "(not JSON) " + err.Error(),
			Problems: []Problem{{Severity: SeverityError, Path: "", Message: "the event is not valid JSON: " + err.Error()}},
		}
	}
	// The tree's strings live in their own copy of raw; only the node
	// slice is scratch, and nothing returned points into it.
	ev := decodeAt(t, 0, nil)
	d.nodes = t.nodes[:0]
	return ev
}

// Message is a whole webhook message decoded in one pass.
type Message struct {
	HookUUID string
	// Events are the decoded events in order; Raw[i] is the JSON of
	// Events[i], aliasing the body given to DecodeMessage.
	Events []Event
	Raw    []json.RawMessage
}

// DecodeMessage parses a whole message body once and decodes every element
// of events[] from that single parse: the fastest path for big batches
// (no per-event re-parse, one string copy for all events; from 128 events
// on, the events are decoded on every core). It fails only
// when the body is not JSON or has no events array; problems inside events
// are reported per event, as with DecodeEvent.
func DecodeMessage(body []byte) (*Message, error) {
	pm, err := ParseMessage(body)
	if err != nil {
		return nil, err
	}
	m := &Message{HookUUID: pm.HookUUID, Raw: pm.Raw, Events: make([]Event, len(pm.Raw))}
	pm.Each(DecodeOptions{}, func(i int, ev *Event, _ []byte) { m.Events[i] = *ev })
	return m, nil
}

// ParsedMessage is a message body parsed once, whose events are decoded by
// Each. It lets a caller look at the envelope (hook uuid, number and
// shape of the events) before paying for decoding, and consume each event
// as it is decoded instead of keeping them all.
type ParsedMessage struct {
	// HookUUID is hook.uuid ("" when missing or not a string).
	HookUUID string
	// Raw[i] is the JSON of events[i], aliasing the body.
	Raw []json.RawMessage

	refs []eventRef
}

// ParseMessage parses a message body. It fails when the body is not JSON
// or not an object with an events array.
func ParseMessage(body []byte) (*ParsedMessage, error) {
	src := string(body)
	if len(body) >= splitParseMin {
		if n := splitPieces(); n > 1 {
			if pm, ok := parseSplit(body, src, n); ok {
				return pm, nil
			}
		}
	}
	t, err := parse(src, nil)
	if err != nil {
		return nil, fmt.Errorf("message is not valid JSON: %w", err)
	}
	if t.kindOf(0) != kindObject {
		return nil, fmt.Errorf("message is %s, not an object with hook and events", t.kindOf(0))
	}
	pm := &ParsedMessage{HookUUID: t.text(t.get(t.get(0, "hook"), "uuid"))}
	evs := t.get(0, "events")
	if evs < 0 || t.kindOf(evs) != kindArray {
		return nil, fmt.Errorf("message has no events array")
	}
	n := 0
	for e := t.nodes[evs].first; e >= 0; e = t.nodes[e].next {
		n++
	}
	pm.refs = make([]eventRef, 0, n)
	pm.Raw = make([]json.RawMessage, 0, n)
	for e := t.nodes[evs].first; e >= 0; e = t.nodes[e].next {
		pm.refs = append(pm.refs, eventRef{t: t, root: e})
		pm.Raw = append(pm.Raw, rawSpan(body, &t.nodes[e]))
	}
	return pm, nil
}

// DecodeOptions selects what Each does besides decoding and checking.
type DecodeOptions struct {
	// Canonical asks for each event's canonical JSON (AppendCanonical),
	// written from the same parse rather than by re-reading the event.
	Canonical bool
	// ReuseFields lets an event's field list be overwritten by the next
	// event decoded on the same goroutine, for a visitor that reads
	// Event.Fields during the call and keeps none of it: on a big message
	// the field lists are most of what decoding allocates.
	ReuseFields bool
}

// Each decodes, checks and renders every event and calls visit with it, on
// the goroutine that decoded it: from 128 events on, the events are split
// into one run per core, each visited in order, so visit must be safe for
// concurrent calls with different i (writing to the i-th element of a
// slice is). canonical is the event's canonical JSON when
// opts.Canonical is set, nil otherwise or when AppendCanonical would
// report false for the event; like ev, it is only valid during the call.
func (pm *ParsedMessage) Each(opts DecodeOptions, visit func(i int, ev *Event, canonical []byte)) {
	n := len(pm.refs)
	// The trees are read-only from here on, so big batches are decoded on
	// every core; small ones are not worth the goroutines.
	workers := 1
	if n >= parallelMin {
		workers = min(runtime.GOMAXPROCS(0), n/(parallelMin/2))
	}
	chunk := (n + workers - 1) / workers
	run := func(lo, hi int) {
		var (
			cw     canonWriter
			canon  []byte
			fields []Field
		)
		for i := lo; i < hi; i++ {
			r := pm.refs[i]
			ev := decodeAt(r.t, r.root, fields)
			var c []byte
			if opts.Canonical {
				var ok bool
				if canon, ok = cw.value(r.t, canon[:0], r.root); ok {
					c = canon
				}
			}
			visit(i, &ev, c)
			if opts.ReuseFields {
				fields = ev.Fields[:0]
			}
		}
	}
	if workers == 1 {
		run(0, n)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Go(func() { run(lo, hi) })
	}
	wg.Wait()
}

// parallelMin is the batch size from which DecodeMessage uses several cores.
const parallelMin = 128

// rawSpan returns the JSON text of node n as a sub-slice of src.
func rawSpan(src []byte, n *node) json.RawMessage {
	start, end := n.start, n.end
	if n.kind == kindString {
		start, end = start-1, end+1
	}
	return json.RawMessage(src[start:end:end])
}

// decodeAt decodes the event object at node root of t. The field list is
// appended to fields[:0] when fields has room (a reused buffer), else to a
// new slice.
func decodeAt(t *tree, root int32, fields []Field) Event {
	ev := Event{}
	if t.kindOf(root) == kindObject {
		ev.Type = t.text(t.get(root, "type"))
		ev.UUID = t.text(t.get(root, "uuid"))
		ev.GeneratedAt = t.text(t.get(root, "generated_at"))
		ev.AccountID = t.text(t.get(t.get(root, "metadata"), "account_id"))
	}
	et := lookup(ev.Type)
	ev.Known = et != nil
	ev.Problems, ev.Fields = walk(t, root, et, fields)
	p := t.get(root, "payload")
	if p >= 0 && t.kindOf(p) == kindObject {
		if et != nil {
			ev.Payload = typed(t, p, et.name)
		} else {
			g := &Generic{Fields: map[string]json.RawMessage{}}
			for m := t.nodes[p].first; m >= 0; m = t.nodes[m].next {
				g.Fields[t.key(m)] = append(json.RawMessage(nil), t.json(m)...)
			}
			ev.Payload = g
		}
	}
	ev.Summary = summary(&ev)
	return ev
}

// --- typed payloads, read from the tree without reflection ---

func str(t *tree, obj int32, k string) string { return t.text(t.get(obj, k)) }

func optStr(t *tree, obj int32, k string) *string {
	m := t.get(obj, k)
	if m < 0 || t.kindOf(m) != kindString {
		return nil
	}
	s := t.text(m)
	return &s
}

func optNum(t *tree, obj int32, k string) *float64 {
	if v, ok := t.num(t.get(obj, k)); ok {
		return &v
	}
	return nil
}

// sub returns the member object k of obj, or -1 when it is absent or not an
// object, in which case the typed field stays nil.
func sub(t *tree, obj int32, k string) int32 {
	m := t.get(obj, k)
	if m < 0 || t.kindOf(m) != kindObject {
		return -1
	}
	return m
}

func readMedia(t *tree, p int32) *Media {
	o := sub(t, p, "media")
	if o < 0 {
		return nil
	}
	m := &Media{ID: str(t, o, "id"), Name: str(t, o, "name"), URL: str(t, o, "url"), Duration: optNum(t, o, "duration")}
	if th := sub(t, o, "thumbnail"); th >= 0 {
		m.Thumbnail = &Thumbnail{URL: str(t, th, "url")}
	}
	return m
}

func readProject(t *tree, p int32) *Project {
	o := sub(t, p, "project")
	if o < 0 {
		return nil
	}
	return &Project{ID: str(t, o, "id"), Name: str(t, o, "name")}
}

func readVisitor(t *tree, p int32) *Visitor {
	o := sub(t, p, "visitor")
	if o < 0 {
		return nil
	}
	return &Visitor{ID: str(t, o, "id"), Email: optStr(t, o, "email"), Name: optStr(t, o, "name")}
}

func readSession(t *tree, p int32) *ViewingSession {
	o := sub(t, p, "viewing_session")
	if o < 0 {
		return nil
	}
	return &ViewingSession{ID: str(t, o, "id")}
}

func readStringMap(t *tree, obj int32, k string) map[string]string {
	o := sub(t, obj, k)
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
func typed(t *tree, p int32, typ string) any {
	switch typ {
	case TypeMediaCreated:
		return &MediaCreated{Media: readMedia(t, p), Project: readProject(t, p)}
	case TypeMediaProcessing:
		return &MediaProcessing{Media: readMedia(t, p), Project: readProject(t, p)}
	case TypeMediaReady:
		return &MediaReady{Media: readMedia(t, p)}
	case TypeMediaFailed:
		return &MediaFailed{Media: readMedia(t, p)}
	case TypeMediaUpdated:
		v := &MediaUpdated{Media: readMedia(t, p), Project: readProject(t, p)}
		if pa := t.get(p, "previous_attributes"); pa >= 0 {
			v.PreviousAttributes = append(json.RawMessage(nil), t.json(pa)...)
		}
		return v
	case TypeMediaTranscriptUpdated:
		v := &MediaTranscriptUpdated{Media: readMedia(t, p), Project: readProject(t, p)}
		if o := sub(t, p, "transcript"); o >= 0 {
			v.Transcript = &Transcript{HashedID: str(t, o, "hashed_id"), LanguageCode: str(t, o, "language_code")}
		}
		return v
	case TypeMediaTranscriptFailed:
		v := &MediaTranscriptFailed{Media: readMedia(t, p), Project: readProject(t, p)}
		if o := sub(t, p, "transcript"); o >= 0 {
			v.Transcript = &FailedTranscript{HashedID: str(t, o, "hashed_id"), LanguageCode: str(t, o, "language_code"), Reason: optStr(t, o, "reason")}
		}
		return v
	case TypeMediaDeleted:
		v := &MediaDeleted{Project: readProject(t, p)}
		if o := sub(t, p, "media"); o >= 0 {
			v.Media = &DeletedMedia{ID: str(t, o, "id")}
		}
		return v
	case TypeMediaTranslationCreated:
		v := &MediaTranslationCreated{Media: readMedia(t, p), Project: readProject(t, p)}
		if o := sub(t, p, "transcript"); o >= 0 {
			v.Transcript = &Translation{
				HashedID: str(t, o, "hashed_id"), ISO6392LanguageCode: str(t, o, "iso639_2_language_code"),
				LanguageCode: str(t, o, "language_code"), LanguageName: str(t, o, "language_name"),
				LanguageNativeName: str(t, o, "language_native_name"), TranscriptText: str(t, o, "transcript_text"),
			}
		}
		return v
	case TypeMediaLocalizationCreated:
		v := &MediaLocalizationCreated{Media: readMedia(t, p), Project: readProject(t, p)}
		if o := sub(t, p, "localization"); o >= 0 {
			l := &Localization{
				HashedID: str(t, o, "hashed_id"), CreatedAt: str(t, o, "created_at"),
				EnabledAt: str(t, o, "enabled_at"), OrderedAt: str(t, o, "ordered_at"), UpdatedAt: str(t, o, "updated_at"),
				ISO6392LanguageCode: str(t, o, "iso639_2_language_code"), LanguageCode: str(t, o, "language_code"),
				LanguageName: str(t, o, "language_name"), NativeLanguageName: str(t, o, "native_language_name"),
			}
			if e := t.get(o, "enabled"); e >= 0 && t.kindOf(e) == kindBool {
				l.Enabled = string(t.raw(e)) == "true"
			}
			if s := sub(t, o, "source_media"); s >= 0 {
				l.SourceMedia = &SourceMedia{CreatedAt: str(t, s, "created_at"), Duration: optNum(t, s, "duration"),
					HashedID: str(t, s, "hashed_id"), Name: str(t, s, "name"), UpdatedAt: str(t, s, "updated_at")}
			}
			if s := sub(t, o, "transcript"); s >= 0 {
				l.Transcript = &LocalizationTranscript{CreatedAt: str(t, s, "created_at"), HashedID: str(t, s, "hashed_id"),
					LanguageName: str(t, s, "language_name"), NativeLanguageName: str(t, s, "native_language_name"),
					Text: str(t, s, "text"), UpdatedAt: str(t, s, "updated_at")}
			}
			v.Localization = l
		}
		return v
	case TypeMediaLocalizationFailed:
		v := &MediaLocalizationFailed{Media: readMedia(t, p), Project: readProject(t, p)}
		if o := sub(t, p, "localization"); o >= 0 {
			v.Localization = &FailedLocalization{HashedID: str(t, o, "hashed_id"), LanguageCode: str(t, o, "language_code"), LanguageName: str(t, o, "language_name")}
		}
		return v
	case TypeViewingPlay:
		return &ViewingPlay{Visitor: readVisitor(t, p), ViewingSession: readSession(t, p), Media: readMedia(t, p)}
	case TypeViewingPercentWatched:
		v := &ViewingPercentWatched{Visitor: readVisitor(t, p), ViewingSession: readSession(t, p), Media: readMedia(t, p)}
		if f := optNum(t, p, "percent_watched"); f != nil && *f == float64(int(*f)) {
			n := int(*f)
			v.PercentWatched = &n
		}
		return v
	case TypeViewingTurnstile:
		return &ViewingTurnstileConverted{Visitor: readVisitor(t, p), ViewingSession: readSession(t, p),
			Name: optStr(t, p, "name"), Email: str(t, p, "email"), Media: readMedia(t, p)}
	case TypeViewingCallToAction:
		return &ViewingCallToActionConverted{Visitor: readVisitor(t, p), ViewingSession: readSession(t, p), URL: str(t, p, "url"), Media: readMedia(t, p)}
	case TypeViewingAnnotation:
		return &ViewingAnnotationConverted{Visitor: readVisitor(t, p), ViewingSession: readSession(t, p), URL: str(t, p, "url"), Media: readMedia(t, p)}
	case TypeLiveEventRegistration:
		v := &LiveEventRegistration{Location: readStringMap(t, p, "location"), UTM: readStringMap(t, p, "utm"), ReferrerURL: str(t, p, "referrer_url")}
		if o := sub(t, p, "live_event"); o >= 0 {
			v.LiveEvent = &LiveEvent{ID: str(t, o, "id"), Name: str(t, o, "name"), URL: str(t, o, "url"), StartsAt: str(t, o, "starts_at")}
		}
		if o := sub(t, p, "registration"); o >= 0 {
			v.Registration = &Registration{VisitorKey: str(t, o, "visitor_key"), RegisteredAt: str(t, o, "registered_at"), Fields: readStringMap(t, o, "fields")}
		}
		return v
	}
	panic(fmt.Sprintf("catalog: type %q is in the table but has no typed payload", typ))
}

// SplitMessage splits a webhook message body into its hook uuid and the raw
// JSON of each element of events[], without decoding the events. It is the
// fast path for large batches; it fails on invalid JSON or when the body is
// not an object with an events array. The returned slices alias body.
func SplitMessage(body []byte) (hookUUID string, events []json.RawMessage, err error) {
	if len(body) == 0 {
		return "", nil, fmt.Errorf("message is empty")
	}
	// A read-only view of body for the duration of the call: the results
	// are sub-slices of body and a cloned hook uuid, never the view.
	t, err := parse(unsafe.String(&body[0], len(body)), nil)
	if err != nil {
		return "", nil, fmt.Errorf("message is not valid JSON: %w", err)
	}
	if t.kindOf(0) != kindObject {
		return "", nil, fmt.Errorf("message is %s, not an object with hook and events", t.kindOf(0))
	}
	hookUUID = strings.Clone(t.text(t.get(t.get(0, "hook"), "uuid")))
	evs := t.get(0, "events")
	if evs < 0 || t.kindOf(evs) != kindArray {
		return hookUUID, nil, fmt.Errorf("message has no events array")
	}
	for e := t.nodes[evs].first; e >= 0; e = t.nodes[e].next {
		events = append(events, rawSpan(body, &t.nodes[e]))
	}
	return hookUUID, events, nil
}
