package sandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// WebhookTimeout is the service's webhook request time-out (spec 8).
const WebhookTimeout = 10 * time.Second

// hookSender turns emitted events into signed webhook messages and posts
// them from one worker goroutine, so deliveries leave in the order events
// happened unless at-least-once mode mixes them up on purpose.
type hookSender struct {
	s      *Server
	client *http.Client
	queue  chan simulate.Event
	// The randomness and knobs below are touched only by the worker.
	rng *rand.Rand
	// batchWindow is how long the worker waits for more events to batch
	// with the first one (at-least-once mode only).
	batchWindow time.Duration
	maxBatch    int
	dupRate     float64 // chance a message is sent a second time
	shuffleRate float64 // chance a window's messages leave in reverse order
	lateRate    float64 // chance a message is held back and sent after later ones
	lateDelay   time.Duration
	retryDelays []time.Duration
}

func newHookSender(s *Server) *hookSender {
	c := s.cfg.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: WebhookTimeout}
	}
	seed := s.cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &hookSender{
		s: s, client: c, queue: make(chan simulate.Event, 1024),
		rng:         rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)),
		batchWindow: 250 * time.Millisecond, maxBatch: 3,
		dupRate: 0.25, shuffleRate: 0.3, lateRate: 0.2,
		// Later than the default processing delay, so a held-back
		// media.created arrives after media.processing.
		lateDelay:   3 * time.Second,
		retryDelays: []time.Duration{2 * time.Second, 10 * time.Second},
	}
}

// emit queues an event of type typ about account for delivery. Without a
// webhook URL it only logs.
func (s *Server) emit(typ, accountID string, payload any) {
	s.enqueue(s.newEvent(typ, accountID, payload))
}

// newEvent wraps a payload in the event envelope of spec 2.3.
func (s *Server) newEvent(typ, accountID string, payload any) simulate.Event {
	return simulate.Event{
		UUID:        randomHex(16),
		Type:        typ,
		Payload:     payload,
		Metadata:    simulate.Metadata{AccountID: accountID},
		GeneratedAt: s.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
	}
}

// enqueue hands an event to the sender.
func (s *Server) enqueue(ev simulate.Event) {
	typ := ev.Type
	if s.hooks == nil {
		s.cfg.Logf("event %s (%s) not delivered: no webhook URL configured", typ, ev.UUID)
		return
	}
	select {
	case s.hooks.queue <- ev:
	default:
		s.cfg.Logf("event %s (%s) dropped: the webhook queue is full (the receiver is too slow)", typ, ev.UUID)
	}
}

// run is the worker: it forms messages and sends them until ctx ends.
func (h *hookSender) run(ctx context.Context) {
	for {
		var first simulate.Event
		select {
		case <-ctx.Done():
			return
		case first = <-h.queue:
		}
		events := []simulate.Event{first}
		if h.s.cfg.AtLeastOnce {
			events = h.collect(ctx, events)
		}
		now, late := h.arrange(events)
		for _, m := range late {
			h.s.spawn(func() {
				if h.s.sleep(h.lateDelay) {
					h.deliver(h.s.ctx, m, 1)
				}
			})
		}
		for _, m := range now {
			if ctx.Err() != nil {
				return
			}
			h.deliver(ctx, m, 1)
		}
	}
}

// collect gathers the events that occur within the batch window after the
// first: the spec batches "events occurring within a very short time".
func (h *hookSender) collect(ctx context.Context, events []simulate.Event) []simulate.Event {
	t := time.NewTimer(h.batchWindow)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return events
		case <-t.C:
			return events
		case ev := <-h.queue:
			events = append(events, ev)
		}
	}
}

// arrange splits events into messages to send now and messages to send
// late. In order mode every event is its own message, sent now. At-least-once
// mode batches 1..maxBatch events per message, sometimes reverses the order
// of the messages, sometimes sends a message again (same hook uuid, same
// bytes) and sometimes holds one back so it arrives after later events, as
// spec 6 warns.
func (h *hookSender) arrange(events []simulate.Event) (now, late []simulate.Message) {
	var msgs []simulate.Message
	if !h.s.cfg.AtLeastOnce {
		for _, e := range events {
			msgs = append(msgs, simulate.Message{Hook: simulate.Hook{UUID: randomHex(16)}, Events: []simulate.Event{e}})
		}
		return msgs, nil
	}
	for len(events) > 0 {
		n := min(1+h.rng.IntN(h.maxBatch), len(events))
		msgs = append(msgs, simulate.Message{Hook: simulate.Hook{UUID: randomHex(16)}, Events: append([]simulate.Event(nil), events[:n]...)})
		events = events[n:]
	}
	if len(msgs) > 1 && h.rng.Float64() < h.shuffleRate {
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	}
	var dups []simulate.Message
	for _, m := range msgs {
		if h.rng.Float64() < h.dupRate {
			dups = append(dups, m)
		}
		if h.rng.Float64() < h.lateRate {
			late = append(late, m)
		} else {
			now = append(now, m)
		}
	}
	return append(now, dups...), late
}

// deliver posts one message. A failure is logged and retried later (the
// spec does not show the service's schedule; the sandbox retries twice).
func (h *hookSender) deliver(ctx context.Context, m simulate.Message, attempt int) {
	rep := simulate.Send(ctx, h.s.cfg.WebhookURL, simulate.SignedWith(h.s.cfg.WebhookSecret, m), simulate.SendOptions{Client: h.client})
	if ctx.Err() != nil || len(rep.Answers) == 0 {
		return
	}
	a := rep.Answers[0]
	types := strings.Join(m.Types(), ",")
	var failure string
	switch {
	case rep.Unreachable != nil:
		failure = rep.Unreachable.Error()
	case a.Err != nil:
		failure = a.Err.Error()
	case a.Status != http.StatusOK:
		failure = fmt.Sprintf("HTTP %d (the service expects 200)", a.Status)
	}
	if failure == "" {
		h.s.cfg.Logf("webhook: message %s [%s] delivered to %s in %s (attempt %d)", m.Hook.UUID, types, rep.URL, human.Duration(a.Latency), attempt)
		return
	}
	if attempt > len(h.retryDelays) {
		h.s.cfg.Logf("webhook: message %s [%s] to %s failed: %s; giving up after %s", m.Hook.UUID, types, rep.URL, failure, plural.S(attempt, "attempt"))
		return
	}
	delay := h.retryDelays[attempt-1]
	h.s.cfg.Logf("webhook: message %s [%s] to %s failed: %s; retrying in %s", m.Hook.UUID, types, rep.URL, failure, human.Duration(delay))
	h.s.spawn(func() {
		if h.s.sleep(delay) {
			h.deliver(h.s.ctx, m, attempt+1)
		}
	})
}

// spawn runs f on a goroutine that Close waits for, unless the server is
// already closing.
func (s *Server) spawn(f func()) {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// sleep waits d and reports false if the server closed meanwhile.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}
