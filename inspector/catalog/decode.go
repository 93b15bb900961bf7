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
	slots slots
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
	ev := decodeAt(t, 0, nil, &d.slots, nil, nil)
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
	return parseMessage(body, string(body))
}

// ParseMessageOwned is ParseMessage for a body the caller hands over: the
// parse reads body in place instead of copying it (a megabyte for a big
// message), so the strings of the decoded events alias body, and body must
// not be modified afterwards.
func ParseMessageOwned(body []byte) (*ParsedMessage, error) {
	if len(body) == 0 {
		return ParseMessage(body)
	}
	return parseMessage(body, unsafe.String(&body[0], len(body)))
}

// parseMessage parses body, whose text src is (a copy or a view).
func parseMessage(body []byte, src string) (*ParsedMessage, error) {
	if len(body) >= splitParseMin {
		if n := splitPieces(); n > 1 {
			if pm, ok := parseSplit(body, src, n); ok {
				return pm, nil
			}
		}
	}
	t, err := parse(src, arena(len(src)/24+8))
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

// Release hands the parse's memory back for the next message parsed:
// a big message's parse trees are megabytes, most of what analysing it
// allocated. pm must not be used afterwards; the events already decoded
// and Raw do not point into the trees and stay valid.
func (pm *ParsedMessage) Release() {
	var last *tree
	for _, r := range pm.refs {
		if r.t != last {
			last = r.t
			nodes := last.nodes[:0]
			last.nodes = nil
			nodePool.Put(&nodes)
		}
	}
	pm.refs = nil
}

// nodePool holds the node arenas of released messages.
var nodePool sync.Pool

// arena returns an empty node slice with room for n nodes, from a released
// message when one is big enough.
func arena(n int) []node {
	if p, ok := nodePool.Get().(*[]node); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]node, 0, n)
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
	// OnlyFields, when not nil, limits each Event.Fields to the fields
	// whose Path is listed (in the usual order); the other values are not
	// rendered. Problems, Summary and Payload are unaffected. It is for a
	// visitor that needs a few values (the engine: the ids naming the
	// event's subject), the detail view decoding the event again in full.
	OnlyFields []string
	// ReusePayload lets an event's typed payload (and everything it points
	// to) be overwritten by the next event decoded on the same goroutine,
	// for a visitor that reads Event.Payload during the call and keeps none
	// of it: each payload is otherwise several small allocations.
	ReusePayload bool
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
			sl     slots
			sc     *payloadScratch
		)
		if opts.ReusePayload {
			sc = new(payloadScratch)
		}
		for i := lo; i < hi; i++ {
			r := pm.refs[i]
			ev := decodeAt(r.t, r.root, fields, &sl, opts.OnlyFields, sc)
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
// new slice; only is DecodeOptions.OnlyFields. sl is scratch space, and so
// is sc for the typed payload unless it is nil.
func decodeAt(t *tree, root int32, fields []Field, sl *slots, only []string, sc *payloadScratch) Event {
	ev := Event{}
	isObj := t.kindOf(root) == kindObject
	if isObj {
		// The type picks the schema the walk follows, so it is the one
		// member looked up before the walk.
		ev.Type = t.text(t.get(root, "type"))
	}
	et := lookup(ev.Type)
	ev.Known = et != nil
	ev.Problems, ev.Fields = walk(t, root, et, fields, sl, only)
	if !isObj {
		ev.Summary = summary(&ev)
		return ev
	}
	r := reader{t: t, s: sl, sc: sc}
	ev.UUID = r.str(sUUID)
	ev.GeneratedAt = r.str(sGeneratedAt)
	ev.AccountID = r.str(sAccountID)
	if r.obj(sPayload) {
		if et != nil {
			ev.Payload = typed(r, et.name)
		} else {
			p := sl[sPayload]
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

// --- typed payloads, read from the walker's slots without reflection ---

// reader reads a typed payload from the nodes the walker matched (slots).
type reader struct {
	t *tree
	s *slots
	// sc, when not nil, holds the payload's structs instead of the heap
	// (DecodeOptions.ReusePayload).
	sc *payloadScratch
}

// payloadScratch is one of everything a typed payload points to; an event
// needs at most one of each.
type payloadScratch struct {
	media             Media
	thumbnail         Thumbnail
	project           Project
	visitor           Visitor
	session           ViewingSession
	deletedMedia      DeletedMedia
	transcript        Transcript
	failedTranscript  FailedTranscript
	translation       Translation
	localization      Localization
	sourceMedia       SourceMedia
	locTranscript     LocalizationTranscript
	failedLoc         FailedLocalization
	liveEvent         LiveEvent
	registration      Registration
	strs              [4]string
	nStrs             int
	nums              [2]float64
	nNums             int
	percent           int
	maps              [3]map[string]string
	nMaps             int
	mediaCreated      MediaCreated
	mediaProcessing   MediaProcessing
	mediaReady        MediaReady
	mediaFailed       MediaFailed
	mediaUpdated      MediaUpdated
	transcriptUpdated MediaTranscriptUpdated
	transcriptFailed  MediaTranscriptFailed
	mediaDeleted      MediaDeleted
	translationNew    MediaTranslationCreated
	localizationNew   MediaLocalizationCreated
	localizationFail  MediaLocalizationFailed
	play              ViewingPlay
	percentWatched    ViewingPercentWatched
	turnstile         ViewingTurnstileConverted
	callToAction      ViewingCallToActionConverted
	annotation        ViewingAnnotationConverted
	registrationNew   LiveEventRegistration
}

// fresh returns a zeroed T: in the scratch space when there is one (pick
// chooses where), else on the heap.
func fresh[T any](sc *payloadScratch, pick func(*payloadScratch) *T) *T {
	if sc == nil {
		return new(T)
	}
	p := pick(sc)
	var zero T
	*p = zero
	return p
}

func (r reader) str(s slot) string { return r.t.text(r.s[s]) }

func (r reader) optStr(s slot) *string {
	m := r.s[s]
	if m < 0 || r.t.kindOf(m) != kindString {
		return nil
	}
	return r.strPtr(r.t.text(m))
}

func (r reader) strPtr(v string) *string {
	if r.sc == nil || r.sc.nStrs == len(r.sc.strs) {
		return &v
	}
	p := &r.sc.strs[r.sc.nStrs]
	r.sc.nStrs++
	*p = v
	return p
}

func (r reader) optNum(s slot) *float64 {
	v, ok := r.t.num(r.s[s])
	if !ok {
		return nil
	}
	if r.sc == nil || r.sc.nNums == len(r.sc.nums) {
		return &v
	}
	p := &r.sc.nums[r.sc.nNums]
	r.sc.nNums++
	*p = v
	return p
}

// obj reports whether slot s holds an object; when it does not, the typed
// field stays nil (and the walker did not descend, so its members' slots
// are empty).
func (r reader) obj(s slot) bool {
	m := r.s[s]
	return m >= 0 && r.t.kindOf(m) == kindObject
}

func (r reader) media() *Media {
	if !r.obj(sMedia) {
		return nil
	}
	m := fresh(r.sc, func(s *payloadScratch) *Media { return &s.media })
	*m = Media{ID: r.str(sMediaID), Name: r.str(sMediaName), URL: r.str(sMediaURL), Duration: r.optNum(sMediaDuration)}
	if r.obj(sThumbnail) {
		m.Thumbnail = fresh(r.sc, func(s *payloadScratch) *Thumbnail { return &s.thumbnail })
		m.Thumbnail.URL = r.str(sThumbnailURL)
	}
	return m
}

func (r reader) project() *Project {
	if !r.obj(sProject) {
		return nil
	}
	p := fresh(r.sc, func(s *payloadScratch) *Project { return &s.project })
	*p = Project{ID: r.str(sProjectID), Name: r.str(sProjectName)}
	return p
}

func (r reader) visitor() *Visitor {
	if !r.obj(sVisitor) {
		return nil
	}
	// email and name are schema fields only in percent_watched; elsewhere
	// they are unlisted members, so they are looked up in the (small)
	// visitor object itself.
	o := r.s[sVisitor]
	v := fresh(r.sc, func(s *payloadScratch) *Visitor { return &s.visitor })
	*v = Visitor{ID: r.str(sVisitorID), Email: r.optStrAt(r.t.get(o, "email")), Name: r.optStrAt(r.t.get(o, "name"))}
	return v
}

func (r reader) optStrAt(m int32) *string {
	if m < 0 || r.t.kindOf(m) != kindString {
		return nil
	}
	return r.strPtr(r.t.text(m))
}

func (r reader) session() *ViewingSession {
	if !r.obj(sSession) {
		return nil
	}
	v := fresh(r.sc, func(s *payloadScratch) *ViewingSession { return &s.session })
	v.ID = r.str(sSessionID)
	return v
}

func (r reader) stringMap(s slot) map[string]string {
	if !r.obj(s) {
		return nil
	}
	t := r.t
	var out map[string]string
	if r.sc != nil && r.sc.nMaps < len(r.sc.maps) {
		if out = r.sc.maps[r.sc.nMaps]; out == nil {
			out = map[string]string{}
			r.sc.maps[r.sc.nMaps] = out
		}
		clear(out)
		r.sc.nMaps++
	} else {
		out = map[string]string{}
	}
	for m := t.nodes[r.s[s]].first; m >= 0; m = t.nodes[m].next {
		if t.kindOf(m) == kindString {
			out[t.key(m)] = t.text(m)
		}
	}
	return out
}

// put returns a *T holding v: in the scratch space when there is one (pick
// chooses where), else on the heap.
func put[T any](r reader, pick func(*payloadScratch) *T, v T) *T {
	if r.sc == nil {
		return &v
	}
	p := pick(r.sc)
	*p = v
	return p
}

// typed builds the typed payload of a known type from the slots the walker
// filled for it.
func typed(r reader, typ string) any {
	if r.sc != nil {
		r.sc.nStrs, r.sc.nNums, r.sc.nMaps = 0, 0, 0
	}
	t := r.t
	switch typ {
	case TypeMediaCreated:
		return put(r, func(s *payloadScratch) *MediaCreated { return &s.mediaCreated }, MediaCreated{Media: r.media(), Project: r.project()})
	case TypeMediaProcessing:
		return put(r, func(s *payloadScratch) *MediaProcessing { return &s.mediaProcessing }, MediaProcessing{Media: r.media(), Project: r.project()})
	case TypeMediaReady:
		return put(r, func(s *payloadScratch) *MediaReady { return &s.mediaReady }, MediaReady{Media: r.media()})
	case TypeMediaFailed:
		return put(r, func(s *payloadScratch) *MediaFailed { return &s.mediaFailed }, MediaFailed{Media: r.media()})
	case TypeMediaUpdated:
		v := put(r, func(s *payloadScratch) *MediaUpdated { return &s.mediaUpdated }, MediaUpdated{Media: r.media(), Project: r.project()})
		if pa := r.s[sPreviousAttributes]; pa >= 0 {
			v.PreviousAttributes = append(json.RawMessage(nil), t.json(pa)...)
		}
		return v
	case TypeMediaTranscriptUpdated:
		v := put(r, func(s *payloadScratch) *MediaTranscriptUpdated { return &s.transcriptUpdated }, MediaTranscriptUpdated{Media: r.media(), Project: r.project()})
		if r.obj(sTranscript) {
			v.Transcript = put(r, func(s *payloadScratch) *Transcript { return &s.transcript }, Transcript{HashedID: r.str(sTranscriptHashedID), LanguageCode: r.str(sTranscriptLanguageCode)})
		}
		return v
	case TypeMediaTranscriptFailed:
		v := put(r, func(s *payloadScratch) *MediaTranscriptFailed { return &s.transcriptFailed }, MediaTranscriptFailed{Media: r.media(), Project: r.project()})
		if r.obj(sTranscript) {
			v.Transcript = put(r, func(s *payloadScratch) *FailedTranscript { return &s.failedTranscript }, FailedTranscript{HashedID: r.str(sTranscriptHashedID), LanguageCode: r.str(sTranscriptLanguageCode), Reason: r.optStr(sTranscriptReason)})
		}
		return v
	case TypeMediaDeleted:
		v := put(r, func(s *payloadScratch) *MediaDeleted { return &s.mediaDeleted }, MediaDeleted{Project: r.project()})
		if r.obj(sMedia) {
			v.Media = put(r, func(s *payloadScratch) *DeletedMedia { return &s.deletedMedia }, DeletedMedia{ID: r.str(sMediaID)})
		}
		return v
	case TypeMediaTranslationCreated:
		v := put(r, func(s *payloadScratch) *MediaTranslationCreated { return &s.translationNew }, MediaTranslationCreated{Media: r.media(), Project: r.project()})
		if r.obj(sTranscript) {
			v.Transcript = put(r, func(s *payloadScratch) *Translation { return &s.translation }, Translation{
				HashedID: r.str(sTranscriptHashedID), ISO6392LanguageCode: r.str(sTranscriptISO6392),
				LanguageCode: r.str(sTranscriptLanguageCode), LanguageName: r.str(sTranscriptLanguageName),
				LanguageNativeName: r.str(sTranscriptLanguageNativeName), TranscriptText: r.str(sTranscriptText),
			})
		}
		return v
	case TypeMediaLocalizationCreated:
		v := put(r, func(s *payloadScratch) *MediaLocalizationCreated { return &s.localizationNew }, MediaLocalizationCreated{Media: r.media(), Project: r.project()})
		if r.obj(sLocalization) {
			l := put(r, func(s *payloadScratch) *Localization { return &s.localization }, Localization{
				HashedID: r.str(sLocHashedID), CreatedAt: r.str(sLocCreatedAt),
				EnabledAt: r.str(sLocEnabledAt), OrderedAt: r.str(sLocOrderedAt), UpdatedAt: r.str(sLocUpdatedAt),
				ISO6392LanguageCode: r.str(sLocISO6392), LanguageCode: r.str(sLocLanguageCode),
				LanguageName: r.str(sLocLanguageName), NativeLanguageName: r.str(sLocNativeLanguageName),
			})
			if e := r.s[sLocEnabled]; e >= 0 && t.kindOf(e) == kindBool {
				l.Enabled = t.raw(e) == "true"
			}
			if r.obj(sSource) {
				l.SourceMedia = put(r, func(s *payloadScratch) *SourceMedia { return &s.sourceMedia }, SourceMedia{CreatedAt: r.str(sSourceCreatedAt), Duration: r.optNum(sSourceDuration),
					HashedID: r.str(sSourceHashedID), Name: r.str(sSourceName), UpdatedAt: r.str(sSourceUpdatedAt)})
			}
			if r.obj(sLocTranscript) {
				l.Transcript = put(r, func(s *payloadScratch) *LocalizationTranscript { return &s.locTranscript }, LocalizationTranscript{CreatedAt: r.str(sLocTranscriptCreatedAt), HashedID: r.str(sLocTranscriptHashedID),
					LanguageName: r.str(sLocTranscriptLanguageName), NativeLanguageName: r.str(sLocTranscriptNativeLanguageName),
					Text: r.str(sLocTranscriptText), UpdatedAt: r.str(sLocTranscriptUpdatedAt)})
			}
			v.Localization = l
		}
		return v
	case TypeMediaLocalizationFailed:
		v := put(r, func(s *payloadScratch) *MediaLocalizationFailed { return &s.localizationFail }, MediaLocalizationFailed{Media: r.media(), Project: r.project()})
		if r.obj(sLocalization) {
			v.Localization = put(r, func(s *payloadScratch) *FailedLocalization { return &s.failedLoc }, FailedLocalization{HashedID: r.str(sLocHashedID), LanguageCode: r.str(sLocLanguageCode), LanguageName: r.str(sLocLanguageName)})
		}
		return v
	case TypeViewingPlay:
		return put(r, func(s *payloadScratch) *ViewingPlay { return &s.play }, ViewingPlay{Visitor: r.visitor(), ViewingSession: r.session(), Media: r.media()})
	case TypeViewingPercentWatched:
		v := put(r, func(s *payloadScratch) *ViewingPercentWatched { return &s.percentWatched }, ViewingPercentWatched{Visitor: r.visitor(), ViewingSession: r.session(), Media: r.media()})
		if f := r.optNum(sPercentWatched); f != nil && *f == float64(int(*f)) {
			v.PercentWatched = fresh(r.sc, func(s *payloadScratch) *int { return &s.percent })
			*v.PercentWatched = int(*f)
		}
		return v
	case TypeViewingTurnstile:
		return put(r, func(s *payloadScratch) *ViewingTurnstileConverted { return &s.turnstile }, ViewingTurnstileConverted{Visitor: r.visitor(), ViewingSession: r.session(),
			Name: r.optStr(sName), Email: r.str(sEmail), Media: r.media()})
	case TypeViewingCallToAction:
		return put(r, func(s *payloadScratch) *ViewingCallToActionConverted { return &s.callToAction }, ViewingCallToActionConverted{Visitor: r.visitor(), ViewingSession: r.session(), URL: r.str(sURL), Media: r.media()})
	case TypeViewingAnnotation:
		return put(r, func(s *payloadScratch) *ViewingAnnotationConverted { return &s.annotation }, ViewingAnnotationConverted{Visitor: r.visitor(), ViewingSession: r.session(), URL: r.str(sURL), Media: r.media()})
	case TypeLiveEventRegistration:
		v := put(r, func(s *payloadScratch) *LiveEventRegistration { return &s.registrationNew }, LiveEventRegistration{Location: r.stringMap(sLocation), UTM: r.stringMap(sUTM), ReferrerURL: r.str(sReferrerURL)})
		if r.obj(sLiveEvent) {
			v.LiveEvent = put(r, func(s *payloadScratch) *LiveEvent { return &s.liveEvent }, LiveEvent{ID: r.str(sLiveEventID), Name: r.str(sLiveEventName), URL: r.str(sLiveEventURL), StartsAt: r.str(sLiveEventStartsAt)})
		}
		if r.obj(sRegistration) {
			v.Registration = put(r, func(s *payloadScratch) *Registration { return &s.registration }, Registration{VisitorKey: r.str(sRegistrationVisitorKey), RegisteredAt: r.str(sRegistrationRegisteredAt), Fields: r.stringMap(sRegistrationFields)})
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
