package simulate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookscope/hookscope/inspector/catalog"
)

// ScenarioOptions shape how a scenario's events become messages.
type ScenarioOptions struct {
	// Batch is the most events per message; 0 means the scenario's own:
	// 3 for at-least-once, 1 (one event each) for the others.
	Batch int
	// Duplicates is how many extra copies of each event are sent, each in
	// a different message: at-least-once delivery as the service does it.
	Duplicates int
	// Shuffle mixes the order of the events (copies included) before
	// batching: the service does not guarantee order across messages.
	Shuffle bool
}

// The scenario names.
const (
	ScenarioMediaLifecycle   = "media-lifecycle"
	ScenarioMediaFailed      = "media-failed"
	ScenarioViewingSession   = "viewing-session"
	ScenarioLiveRegistration = "live-registration"
	ScenarioAtLeastOnce      = "at-least-once"
)

// Scenarios lists the scenario names Scenario accepts.
func Scenarios() []string {
	return []string{ScenarioMediaLifecycle, ScenarioMediaFailed, ScenarioViewingSession, ScenarioLiveRegistration, ScenarioAtLeastOnce}
}

// ScenarioDescription says in one line what a scenario sends.
func ScenarioDescription(name string) string {
	switch name {
	case ScenarioMediaLifecycle:
		return "one media: created -> processing -> ready"
	case ScenarioMediaFailed:
		return "one media: created -> processing -> failed"
	case ScenarioViewingSession:
		return "one viewing: play -> 25% -> turnstile conversion -> 50% -> 75% -> 100% (percent events after the form carry the visitor's email and name)"
	case ScenarioLiveRegistration:
		return "three people register for one live event"
	case ScenarioAtLeastOnce:
		return "media lifecycle + viewing session, every event sent twice or more, shuffled, batched, and one message re-sent whole"
	}
	return ""
}

// Scenario generates the messages of a named scenario. Unknown names give
// an error listing the valid ones. Each run draws from a stream of its own
// (see Generator): another scenario, or another run of this one, shares no
// event with it.
func (g *Generator) Scenario(name string, opts ScenarioOptions) ([]Message, error) {
	if !slices.Contains(Scenarios(), name) {
		return nil, fmt.Errorf("unknown scenario %q; valid scenarios: %s", name, strings.Join(Scenarios(), ", "))
	}
	sub := g.fork(name)
	defer g.join(sub)
	return sub.scenario(name, opts), nil
}

func (g *Generator) scenario(name string, opts ScenarioOptions) []Message {
	var events []Event
	switch name {
	case ScenarioMediaLifecycle:
		events = g.mediaLifecycle(catalog.TypeMediaReady)
	case ScenarioMediaFailed:
		events = g.mediaLifecycle(catalog.TypeMediaFailed)
	case ScenarioViewingSession:
		events = g.viewingSession()
	case ScenarioLiveRegistration:
		ev := g.liveEvent()
		for range 3 {
			w := g.newWorld()
			events = append(events, g.Wrap(catalog.TypeLiveEventRegistration, g.registration(ev, w)))
		}
	case ScenarioAtLeastOnce:
		events = append(g.mediaLifecycle(catalog.TypeMediaReady), g.viewingSession()...)
		opts.Duplicates = max(opts.Duplicates, 1)
		opts.Shuffle = true
		if opts.Batch <= 0 {
			opts.Batch = 3
		}
		msgs := g.Batch(events, opts)
		// The service may also re-send a whole message (same hook uuid)
		// when its answer was late.
		return append(msgs, msgs[g.rng.IntN(len(msgs))])
	}
	return g.Batch(events, opts)
}

func (g *Generator) mediaLifecycle(end string) []Event {
	w := g.newWorld()
	out := []Event{
		g.Wrap(catalog.TypeMediaCreated, g.payload(catalog.TypeMediaCreated, w)),
		g.Wrap(catalog.TypeMediaProcessing, g.payload(catalog.TypeMediaProcessing, w)),
	}
	return append(out, g.Wrap(end, g.payload(end, w)))
}

func (g *Generator) viewingSession() []Event {
	w := g.newWorld()
	session := &catalog.ViewingSession{ID: w.session}
	name := w.person.first + " " + w.person.last
	percent := func(p int, contact bool) Event {
		v := &catalog.Visitor{ID: w.visitor}
		if contact {
			v.Email, v.Name = ptr(w.person.email), ptr(name)
		}
		return g.Wrap(catalog.TypeViewingPercentWatched, &catalog.ViewingPercentWatched{
			Visitor: v, ViewingSession: session, PercentWatched: ptr(p), Media: w.media})
	}
	return []Event{
		g.Wrap(catalog.TypeViewingPlay, g.payload(catalog.TypeViewingPlay, w)),
		percent(25, false),
		g.Wrap(catalog.TypeViewingTurnstile, &catalog.ViewingTurnstileConverted{
			Visitor: &catalog.Visitor{ID: w.visitor}, ViewingSession: session, Name: ptr(name), Email: w.person.email, Media: w.media}),
		percent(50, true),
		percent(75, true),
		percent(100, true),
	}
}

// Batch turns events into messages: each event plus opts.Duplicates copies
// of it (same uuid, same content), shuffled when asked, up to opts.Batch
// per message, each message with a new hook uuid. No message carries two
// copies of one event: every copy goes in another message, as the service
// re-sends it. Messages are filled in order; a copy that would join its
// twin waits for the next message.
func (g *Generator) Batch(events []Event, opts ScenarioOptions) []Message {
	all := append([]Event(nil), events...)
	for range max(opts.Duplicates, 0) {
		all = append(all, events...)
	}
	if opts.Shuffle {
		g.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	}
	size := max(opts.Batch, 1)
	var out []Message
	for len(all) > 0 {
		var msg, rest []Event
		in := map[string]bool{}
		for _, e := range all {
			if len(msg) < size && !in[e.UUID] {
				msg = append(msg, e)
				in[e.UUID] = true
			} else {
				rest = append(rest, e)
			}
		}
		out = append(out, g.Message(msg...))
		all = rest
	}
	return out
}
