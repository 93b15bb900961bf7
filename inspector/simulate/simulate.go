// Package simulate produces realistic webhook deliveries of the service for
// every one of the 17 event types: payloads that pass the catalogue's
// contract checks with no problem, ids shaped like real ones, UTC
// timestamps, and messages with exactly the headers of spec 4.3. It drives
// `hookscope send` and `hookscope samples`, the sandbox's webhook sender and
// the inspector's tests.
//
// A Generator is deterministic for a non-zero seed (tests, reproducible
// samples) and random for seed 0. It is not safe for concurrent use: give
// each goroutine its own.
//
// An event uuid names one event: the simulator gives a uuid only to
// events of the same content (same type, payload, account and time), and
// only copies it makes on purpose (ScenarioOptions.Duplicates, the
// at-least-once scenario's re-sent message) repeat one. Generators with the
// same seed therefore never give one uuid to two different events, and
// each scenario draws from a stream of its own, so two scenarios run with
// the same seed share no event. A hook uuid is new for every message made.
package simulate

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// UserAgent is the User-Agent of the sender version the spec calls current.
const UserAgent = catalog.UserAgentPrefix + catalog.CurrentSenderVersion

// Event is one event object of a webhook message (spec 2.3). Payload holds
// one of the catalogue's typed payloads (for example *catalog.MediaReady);
// the JSON field order is the spec's.
type Event struct {
	UUID        string   `json:"uuid"`
	Type        string   `json:"type"`
	Payload     any      `json:"payload"`
	Metadata    Metadata `json:"metadata"`
	GeneratedAt string   `json:"generated_at"`
}

// Metadata is the event's metadata object.
type Metadata struct {
	AccountID string `json:"account_id"`
}

// Hook identifies one webhook message.
type Hook struct {
	UUID string `json:"uuid"`
}

// Message is one webhook message: what a single POST carries.
type Message struct {
	Hook   Hook    `json:"hook"`
	Events []Event `json:"events"`
}

// Body renders the message as the service sends it: compact JSON, with
// "&", "<" and ">" left as they are (encoding/json would escape them, which
// the service does not). The same message always renders the same bytes, so
// a body and its signature can be computed separately.
func (m Message) Body() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		// Every payload is a plain struct of strings, numbers and maps:
		// failing here is a programming error, not an input error.
		panic(fmt.Sprintf("simulate: encode message: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Headers returns the delivery headers of spec 4.3 for the message's body.
// See HeadersFor.
func (m Message) Headers(secret []byte) []inspector.Header {
	return HeadersFor(m.Body(), secret)
}

// HeadersFor returns the headers the service sends with body, in this
// order: User-Agent, X-Service-Signature (only when secret is non-empty:
// an unsigned delivery is what a webhook without a key looks like),
// Content-Type, Content-Length. Host is left to the HTTP client.
func HeadersFor(body, secret []byte) []inspector.Header {
	h := []inspector.Header{{Name: "User-Agent", Value: UserAgent}}
	if len(secret) > 0 {
		h = append(h, inspector.Header{Name: inspector.SignatureHeader, Value: inspector.Sign(secret, body)})
	}
	return append(h,
		inspector.Header{Name: "Content-Type", Value: "application/json"},
		inspector.Header{Name: "Content-Length", Value: strconv.Itoa(len(body))})
}

// Request builds the POST the service would make to url for the message,
// signed with secret (unsigned when secret is empty).
func (m Message) Request(ctx context.Context, url string, secret []byte) (*http.Request, error) {
	return NewRequest(ctx, url, m.Body(), secret)
}

// NewRequest builds a delivery POST for an arbitrary body, for replay and
// re-signing: the headers are those of HeadersFor.
func NewRequest(ctx context.Context, url string, body, secret []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build delivery request: %w", err)
	}
	for _, h := range HeadersFor(body, secret) {
		if h.Name == "Content-Length" {
			// net/http writes Content-Length from the field, not the map.
			req.ContentLength = int64(len(body))
			continue
		}
		req.Header.Set(h.Name, h.Value)
	}
	return req, nil
}

// Types lists the message's event types in order.
func (m Message) Types() []string {
	out := make([]string, len(m.Events))
	for i, e := range m.Events {
		out[i] = e.Type
	}
	return out
}

// Generator makes events and messages.
type Generator struct {
	rng *rand.Rand
	// key is drawn from the seed; uuids are keyed hashes of what they name.
	key [16]byte
	// runs counts the scenarios generated, msgs the messages made: each
	// scenario gets its own stream, each message its own hook uuid.
	runs, msgs int
	clock      time.Time
	account    string
	site       string
}

// New returns a generator. A non-zero seed makes every output (ids, names,
// timestamps) reproducible; seed 0 picks a random seed and starts the clock
// at the current time.
func New(seed int64) *Generator {
	clock := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = int64(binary.LittleEndian.Uint64(b[:]) | 1)
		clock = time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	}
	g := &Generator{rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>7^0x9e3779b97f4a7c15))}
	binary.LittleEndian.PutUint64(g.key[:8], g.rng.Uint64())
	binary.LittleEndian.PutUint64(g.key[8:], g.rng.Uint64())
	g.clock = clock
	g.account = strconv.Itoa(1_000_000 + g.rng.IntN(8_999_999))
	g.site = g.pick(companySlugs)
	return g
}

// AccountID is the account every event of this generator comes from.
func (g *Generator) AccountID() string { return g.account }

func (g *Generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"

// HashedID returns a 10-character lowercase alphanumeric id, the shape of
// the service's hashed ids.
func (g *Generator) HashedID() string {
	b := make([]byte, 10)
	for i := range b {
		b[i] = alnum[g.rng.IntN(len(alnum))]
	}
	return string(b)
}

func (g *Generator) hex(n int) string {
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return hex.EncodeToString(b)[:n]
}

// EventUUID returns a random 16-hex-character event uuid, as real
// deliveries carry (Wrap gives events uuids of their content instead).
func (g *Generator) EventUUID() string { return g.hex(16) }

// keyedID returns n hex characters of a hash, under the generator's key, of
// parts: the same parts give the same id, other parts another.
func (g *Generator) keyedID(n int, parts ...string) string {
	h := sha256.New()
	h.Write(g.key[:])
	for _, p := range parts {
		var l [8]byte
		binary.LittleEndian.PutUint64(l[:], uint64(len(p)))
		h.Write(l[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:n]
}

// fork returns a generator for one scenario run: the same key, account and
// clock, and a stream of its own derived from the key, the scenario's name
// and how many scenarios came before, so another scenario (or another run
// of this one) draws other media, people and times. join takes its clock
// and message count back.
func (g *Generator) fork(name string) *Generator {
	seed := g.keyedID(32, "scenario", name, strconv.Itoa(g.runs))
	g.runs++
	a, _ := strconv.ParseUint(seed[:16], 16, 64)
	b, _ := strconv.ParseUint(seed[16:], 16, 64)
	sub := *g
	sub.rng = rand.New(rand.NewPCG(a, b))
	return &sub
}

func (g *Generator) join(sub *Generator) { g.clock, g.msgs = sub.clock, sub.msgs }

func (g *Generator) uuid4() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

// VisitorID returns an id of the form v<YYYYMMDD>_<uuid>, the date being
// the visitor's first visit.
func (g *Generator) VisitorID() string {
	first := g.clock.AddDate(0, 0, -g.rng.IntN(900))
	return "v" + first.Format("20060102") + "_" + g.uuid4()
}

// tick advances the clock by a few seconds and returns it: events come in
// the order they are generated.
func (g *Generator) tick() time.Time {
	g.clock = g.clock.Add(time.Duration(1+g.rng.IntN(40)) * time.Second)
	return g.clock
}

func utc(t time.Time) string    { return t.UTC().Format("2006-01-02T15:04:05Z") }
func offset(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") + "+00:00" }

func ptr[T any](v T) *T { return &v }

// Media returns a new, plausible media object.
func (g *Generator) Media() *catalog.Media {
	id := g.HashedID()
	d := math.Round((8+g.rng.Float64()*1800)*1000) / 1000
	return &catalog.Media{
		ID:        id,
		Name:      g.pick(mediaNames),
		URL:       "https://" + g.site + ".videohost.example/medias/" + id,
		Duration:  &d,
		Thumbnail: &catalog.Thumbnail{URL: g.thumbnail()},
	}
}

func (g *Generator) thumbnail() string {
	return "https://embed-ssl.videohost.example/deliveries/" + g.hex(40) + ".jpg?image_crop_resized=640x360&video_still_time=" + strconv.Itoa(1+g.rng.IntN(30))
}

// Project returns a new, plausible project (folder).
func (g *Generator) Project() *catalog.Project {
	return &catalog.Project{ID: g.HashedID(), Name: g.pick(projectNames)}
}

// Wrap turns a payload into an event of type typ with a new uuid, this
// generator's account and the next timestamp. The sandbox uses it to emit
// events about its own media (for example a *catalog.MediaUpdated). The
// payload must marshal to JSON (plain structs, maps, strings, finite
// numbers); Message.Body panics otherwise, as that is a programming error.
//
// The uuid names the event's content: see Generator.
func (g *Generator) Wrap(typ string, payload any) Event {
	ev := Event{
		Type:        typ,
		Payload:     payload,
		Metadata:    Metadata{AccountID: g.account},
		GeneratedAt: utc(g.tick()),
	}
	p, err := json.Marshal(payload)
	if err != nil {
		// As in Message.Body: a payload that does not marshal is a
		// programming error, not an input error.
		panic(fmt.Sprintf("simulate: encode %s payload: %v", typ, err))
	}
	ev.UUID = g.keyedID(16, "event", typ, string(p), ev.Metadata.AccountID, ev.GeneratedAt)
	return ev
}

// Event returns a realistic event of type typ about a new media (or
// visitor, or live event). A type outside the 17 yields an event with an
// empty payload object, which is how the catalogue's unknown-type path can
// be exercised.
func (g *Generator) Event(typ string) Event {
	w := g.newWorld()
	return g.Wrap(typ, g.payload(typ, w))
}

// world is what consecutive events of one scenario share.
type world struct {
	media   *catalog.Media
	project *catalog.Project
	visitor string
	session string
	person  person
}

type person struct{ first, last, email, company string }

func (g *Generator) newWorld() *world {
	first, last := g.pick(firstNames), g.pick(lastNames)
	company := g.pick(companies)
	return &world{
		media:   g.Media(),
		project: g.Project(),
		visitor: g.VisitorID(),
		session: g.uuid4(),
		person:  person{first: first, last: last, company: company, email: lower(first) + "." + lower(last) + "@" + slug(company) + ".example"},
	}
}

// payload builds the typed payload of typ for the world w.
func (g *Generator) payload(typ string, w *world) any {
	m, p := w.media, w.project
	visitor := func() *catalog.Visitor { return &catalog.Visitor{ID: w.visitor} }
	session := &catalog.ViewingSession{ID: w.session}
	switch typ {
	case catalog.TypeMediaCreated:
		return &catalog.MediaCreated{Media: m, Project: p}
	case catalog.TypeMediaProcessing:
		return &catalog.MediaProcessing{Media: m, Project: p}
	case catalog.TypeMediaReady:
		return &catalog.MediaReady{Media: m}
	case catalog.TypeMediaFailed:
		return &catalog.MediaFailed{Media: m}
	case catalog.TypeMediaUpdated:
		prev, _ := json.Marshal(map[string]any{"thumbnail": map[string]string{"url": g.thumbnail()}})
		if g.rng.IntN(2) == 0 {
			prev, _ = json.Marshal(map[string]any{"name": g.pick(mediaNames) + " (draft)"})
		}
		return &catalog.MediaUpdated{Media: m, Project: p, PreviousAttributes: prev}
	case catalog.TypeMediaTranscriptUpdated:
		l := g.language()
		return &catalog.MediaTranscriptUpdated{Media: m, Project: p, Transcript: &catalog.Transcript{HashedID: g.HashedID(), LanguageCode: l.iso3}}
	case catalog.TypeMediaTranscriptFailed:
		l := g.language()
		t := &catalog.FailedTranscript{HashedID: g.HashedID(), LanguageCode: l.iso3}
		if g.rng.IntN(3) > 0 {
			t.Reason = ptr(g.pick(transcriptFailures))
		}
		return &catalog.MediaTranscriptFailed{Media: m, Project: p, Transcript: t}
	case catalog.TypeMediaDeleted:
		return &catalog.MediaDeleted{Media: &catalog.DeletedMedia{ID: m.ID}, Project: p}
	case catalog.TypeMediaTranslationCreated:
		l := g.language()
		return &catalog.MediaTranslationCreated{Media: m, Project: p, Transcript: &catalog.Translation{
			HashedID: g.HashedID(), ISO6392LanguageCode: l.iso3, LanguageCode: l.code, LanguageName: l.name,
			LanguageNativeName: l.native, TranscriptText: l.text,
		}}
	case catalog.TypeMediaLocalizationCreated:
		l := g.language()
		ordered := g.clock.Add(-time.Duration(30+g.rng.IntN(600)) * time.Minute)
		created := ordered.Add(time.Duration(5+g.rng.IntN(20)) * time.Minute)
		return &catalog.MediaLocalizationCreated{Media: m, Project: p, Localization: &catalog.Localization{
			HashedID: g.HashedID(), CreatedAt: offset(created), Enabled: true, EnabledAt: offset(created.Add(time.Minute)),
			OrderedAt: offset(ordered), UpdatedAt: offset(created.Add(time.Minute)),
			ISO6392LanguageCode: l.iso3, LanguageCode: l.locale, LanguageName: l.name, NativeLanguageName: l.native,
			SourceMedia: &catalog.SourceMedia{CreatedAt: offset(ordered.Add(-72 * time.Hour)), Duration: m.Duration,
				HashedID: m.ID, Name: m.Name, UpdatedAt: offset(ordered.Add(-time.Hour))},
			Transcript: &catalog.LocalizationTranscript{CreatedAt: offset(created), HashedID: g.HashedID(),
				LanguageName: l.name, NativeLanguageName: l.native, Text: l.text, UpdatedAt: offset(created)},
		}}
	case catalog.TypeMediaLocalizationFailed:
		l := g.language()
		return &catalog.MediaLocalizationFailed{Media: m, Project: p, Localization: &catalog.FailedLocalization{
			HashedID: g.HashedID(), LanguageCode: l.locale, LanguageName: l.name}}
	case catalog.TypeViewingPlay:
		return &catalog.ViewingPlay{Visitor: visitor(), ViewingSession: session, Media: m}
	case catalog.TypeViewingPercentWatched:
		return &catalog.ViewingPercentWatched{Visitor: visitor(), ViewingSession: session, PercentWatched: ptr(25 * (1 + g.rng.IntN(4))), Media: m}
	case catalog.TypeViewingTurnstile:
		return &catalog.ViewingTurnstileConverted{Visitor: visitor(), ViewingSession: session,
			Name: ptr(w.person.first + " " + w.person.last), Email: w.person.email, Media: m}
	case catalog.TypeViewingCallToAction:
		return &catalog.ViewingCallToActionConverted{Visitor: visitor(), ViewingSession: session,
			URL: "https://www." + g.site + ".example/" + g.pick(ctaPaths), Media: m}
	case catalog.TypeViewingAnnotation:
		return &catalog.ViewingAnnotationConverted{Visitor: visitor(), ViewingSession: session,
			URL: "https://www." + g.site + ".example/" + g.pick(ctaPaths) + "?ref=annotation", Media: m}
	case catalog.TypeLiveEventRegistration:
		return g.registration(g.liveEvent(), w)
	}
	return &struct{}{}
}

func (g *Generator) liveEvent() *catalog.LiveEvent {
	id := g.HashedID()
	starts := g.clock.AddDate(0, 0, 3+g.rng.IntN(40)).Truncate(time.Hour)
	return &catalog.LiveEvent{ID: id, Name: g.pick(liveEventNames),
		URL: "https://" + g.site + ".videohost.example/live/events/" + id, StartsAt: utc(starts)}
}

func (g *Generator) registration(ev *catalog.LiveEvent, w *world) *catalog.LiveEventRegistration {
	// The place lists are aligned by index, so a city stays in its country.
	i := g.rng.IntN(len(countries))
	c := countries[i]
	return &catalog.LiveEventRegistration{
		LiveEvent: ev,
		Registration: &catalog.Registration{
			VisitorKey:   w.visitor,
			RegisteredAt: utc(g.clock),
			Fields: map[string]string{
				"first_name": w.person.first, "last_name": w.person.last, "email": w.person.email,
				"company": w.person.company, "job_title": g.pick(jobTitles), "phone": "+1 555 01" + strconv.Itoa(10+g.rng.IntN(89)),
				"country": c,
			},
		},
		Location:    map[string]string{"country": c, "region": regions[i], "city": cities[i]},
		UTM:         map[string]string{"campaign": g.pick(campaigns), "medium": g.pick([]string{"email", "social", "cpc"}), "source": g.pick([]string{"newsletter", "linkedin", "google"})},
		ReferrerURL: "https://www." + g.site + ".example/" + g.pick([]string{"webinars", "events", "blog/launch-week"}),
	}
}

// Message wraps events into one message with a new hook uuid: a hash of
// the events' uuids and how many messages this generator made before, so
// another message (even of the same events) gets another hook uuid.
func (g *Generator) Message(events ...Event) Message {
	parts := []string{"hook", strconv.Itoa(g.msgs)}
	for _, e := range events {
		parts = append(parts, e.UUID)
	}
	g.msgs++
	return Message{Hook: Hook{UUID: g.keyedID(32, parts...)}, Events: append([]Event(nil), events...)}
}
