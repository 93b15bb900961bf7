package replay

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// ChaosOptions shape a chaos replay: the things the service's at-least-once,
// unordered, batching delivery does to a consumer, on demand.
type ChaosOptions struct {
	Target string
	// Times sends every message this many times (same bytes, same hook
	// uuid: a re-send). Zero means 1.
	Times int
	// Shuffle mixes the order of all sends, copies included.
	Shuffle bool
	// Split sends each event of a batch as its own message (new hook uuid).
	Split bool
	// Merge sends every selected event in one message (new hook uuid).
	Merge bool
	// EventUUIDs, when set with Split or Merge, keeps only these events of
	// the selected deliveries (the view's event selection).
	EventUUIDs []string
	// Delay waits between sends.
	Delay time.Duration
	// Secret re-signs every message. Split and Merge build new bodies, so
	// they need it.
	Secret []byte
	// Seed makes hook uuids and the shuffle reproducible; zero is random.
	Seed int64
	// OnResult, when set, is called after each send (for progress).
	OnResult func(done, total int, r *Result)
}

// Planned is one message a chaos run sends.
type Planned struct {
	Mode    Mode
	Sources []int64
	// Copy is which send of this message it is, out of Copies (--times).
	Copy, Copies int
	// Part is which message of a split delivery it is (one per event),
	// out of Parts; 0 when the run does not split.
	Part, Parts int
	HookUUID    string
	Events      []string
	Request     Request
}

// Label says which message of the run a send is, in words: "split part 2
// of 3, copy 1 of 2" (the mode, then Position).
func (p Planned) Label() string { return label(p.Mode, p.Position()) }

// Position says which message of the run a send is, in words shared by the
// CLI and the window: "part 2 of 3, copy 1 of 2". A part is named only
// for a split and a copy only when messages are sent more than once; ""
// when neither.
func (p Planned) Position() string { return position(p.Part, p.Parts, p.Copy, p.Copies) }

// Label is Planned.Label for the send that was made.
func (r *Result) Label() string { return label(r.Mode, r.Position()) }

// Position is Planned.Position for the send that was made.
func (r *Result) Position() string { return position(r.Part, r.Parts, r.Copy, r.Copies) }

func label(m Mode, pos string) string {
	if pos == "" {
		return string(m)
	}
	return string(m) + " " + pos
}

func position(part, parts, cp, copies int) string {
	var s []string
	if parts > 0 {
		s = append(s, fmt.Sprintf("part %d of %d", part, parts))
	}
	if copies > 1 {
		s = append(s, fmt.Sprintf("copy %d of %d", cp, copies))
	}
	return strings.Join(s, ", ")
}

// ChaosReport sums up a chaos run.
type ChaosReport struct {
	Target  string    `json:"target"`
	Results []*Result `json:"results"`
	// Answered2xx, Refused and Failed count 2xx answers, other answers and
	// sends without an answer.
	Answered2xx int `json:"answered_2xx"`
	Refused     int `json:"refused"`
	Failed      int `json:"failed"`
}

// ErrSplitMerge is returned for a chaos run asked to both split and merge.
var ErrSplitMerge = errors.New("split and merge exclude each other: split sends one event per message, merge sends all events in one")

// PlanChaos works out what a chaos run sends, without sending: the UI
// previews it and tests check it.
func PlanChaos(ds []*inspector.Delivery, opts ChaosOptions) ([]Planned, error) {
	if opts.Split && opts.Merge {
		return nil, ErrSplitMerge
	}
	if len(ds) == 0 {
		return nil, errors.New("nothing selected to replay")
	}
	if (opts.Split || opts.Merge) && len(opts.Secret) == 0 {
		return nil, errors.New("split and merge build new messages, which must be signed: give the secret to sign them with")
	}
	if opts.Times < 0 {
		return nil, fmt.Errorf("times must be 1 or more, got %d", opts.Times)
	}
	times := max(opts.Times, 1)
	rng := newRNG(opts.Seed)
	for _, d := range ds {
		if d.Truncated {
			return nil, fmt.Errorf("delivery %d was cut at the body cap: replaying it would send a different body", d.ID)
		}
	}
	keep := func(ev inspector.RawEvent) bool {
		if len(opts.EventUUIDs) == 0 {
			return true
		}
		for _, u := range opts.EventUUIDs {
			if u == ev.UUID {
				return true
			}
		}
		return false
	}
	var base []Planned
	switch {
	case opts.Split:
		for _, d := range ds {
			m, err := inspector.DecodeMessage(d.Body)
			if err != nil {
				return nil, fmt.Errorf("split delivery %d: it is not a webhook message: %w", d.ID, err)
			}
			first := len(base)
			for _, ev := range m.Events {
				if !keep(ev) {
					continue
				}
				p := newMessage(d, []inspector.RawEvent{ev}, rng, opts.Secret)
				p.Mode, p.Sources = ModeSplit, []int64{d.ID}
				p.Part = len(base) - first + 1
				base = append(base, p)
			}
			for i := first; i < len(base); i++ {
				base[i].Parts = len(base) - first
			}
		}
	case opts.Merge:
		var evs []inspector.RawEvent
		var srcs []int64
		for _, d := range ds {
			m, err := inspector.DecodeMessage(d.Body)
			if err != nil {
				return nil, fmt.Errorf("merge delivery %d: it is not a webhook message: %w", d.ID, err)
			}
			n := len(evs)
			for _, ev := range m.Events {
				if keep(ev) {
					evs = append(evs, ev)
				}
			}
			if len(evs) > n {
				srcs = append(srcs, d.ID)
			}
		}
		if len(evs) == 0 {
			return nil, errors.New("none of the chosen events is in the selected deliveries")
		}
		p := newMessage(ds[0], evs, rng, opts.Secret)
		p.Mode, p.Sources = ModeMerged, srcs
		base = append(base, p)
	default:
		if len(opts.EventUUIDs) > 0 {
			return nil, errors.New("choosing events needs split or merge: a whole delivery is replayed as it is")
		}
		for _, d := range ds {
			p := Planned{Mode: ModeRaw, Sources: []int64{d.ID}, Request: BuildRequest(d, nil, opts.Secret)}
			if len(opts.Secret) > 0 {
				p.Mode = ModeResigned
			}
			var r Result
			describeBody(&r, d.Body)
			p.HookUUID, p.Events = r.HookUUID, r.Events
			base = append(base, p)
		}
	}
	if len(base) == 0 {
		return nil, errors.New("none of the chosen events is in the selected deliveries")
	}
	var plan []Planned
	for _, p := range base {
		for c := 1; c <= times; c++ {
			p.Copy, p.Copies = c, times
			plan = append(plan, p)
		}
	}
	if opts.Shuffle {
		rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	}
	return plan, nil
}

// newMessage builds a message of evs (each kept byte for byte) with a new
// hook uuid, signed, carrying the headers of the delivery it came from.
func newMessage(from *inspector.Delivery, evs []inspector.RawEvent, rng *rand.Rand, secret []byte) Planned {
	hook := hexID(rng)
	var b bytes.Buffer
	b.WriteString(`{"hook":{"uuid":`)
	q, _ := json.Marshal(hook)
	b.Write(q)
	b.WriteString(`},"events":[`)
	ids := make([]string, len(evs))
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(ev.Raw)
		ids[i] = ev.UUID
	}
	b.WriteString("]}")
	return Planned{HookUUID: hook, Events: ids, Request: BuildRequest(from, b.Bytes(), secret)}
}

func newRNG(seed int64) *rand.Rand {
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = int64(binary.LittleEndian.Uint64(b[:]) | 1)
	}
	return rand.New(rand.NewPCG(uint64(seed), 0x6a09e667f3bcc908))
}

// hexID returns 32 hex characters, the shape of the service's hook uuids.
func hexID(rng *rand.Rand) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rng.Uint64())
	return hex.EncodeToString(b[:])
}

// Chaos plans and runs a chaos replay of ds, recording every send. It
// sends through net/http on kept-alive connections: the body and header
// values as planned, header names in Go's canonical case and order (a
// chaos run tests what a consumer does with repeats, order and batches,
// not how it reads a header block). It stops early only when ctx ends;
// answers, good or bad, are in the report.
func (r *Replayer) Chaos(ctx context.Context, ds []*inspector.Delivery, opts ChaosOptions) (*ChaosReport, error) {
	target, err := ParseTarget(opts.Target)
	if err != nil {
		return nil, err
	}
	plan, err := PlanChaos(ds, opts)
	if err != nil {
		return nil, err
	}
	rep := &ChaosReport{Target: RedactURL(target.String())}
	client := r.httpClient()
	defer client.CloseIdleConnections()
	for i, p := range plan {
		if i > 0 && opts.Delay > 0 {
			t := time.NewTimer(opts.Delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return rep, fmt.Errorf("chaos replay stopped after %d of %s: %w", i, plural.S(len(plan), "send"), ctx.Err())
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return rep, fmt.Errorf("chaos replay stopped after %d of %s: %w", i, plural.S(len(plan), "send"), ctx.Err())
		}
		res := &Result{DeliveryID: p.Sources[0], Sources: p.Sources, Mode: p.Mode, Copy: p.Copy, Copies: p.Copies,
			Part: p.Part, Parts: p.Parts, HookUUID: p.HookUUID, Events: p.Events, BodySize: len(p.Request.Body)}
		res.Target, res.SentAt = rep.Target, r.now().UTC()
		a, err := sendHTTP(ctx, client, target, p.Request, r.timeout(), r.maxResponse())
		res, err = r.record(ctx, target, res, a, err)
		if res != nil {
			rep.Results = append(rep.Results, res)
			switch {
			case res.Status == 0:
				rep.Failed++
			case res.OK():
				rep.Answered2xx++
			default:
				rep.Refused++
			}
			if opts.OnResult != nil {
				opts.OnResult(i+1, len(plan), res)
			}
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Line describes one result in one line of text, for the CLI and logs.
func (r *Result) Line() string {
	var b strings.Builder
	if len(r.Sources) > 1 {
		ids := make([]string, len(r.Sources))
		for i, s := range r.Sources {
			ids[i] = strconv.FormatInt(s, 10)
		}
		fmt.Fprintf(&b, "deliveries %s", strings.Join(ids, ","))
	} else {
		fmt.Fprintf(&b, "delivery %d", r.DeliveryID)
	}
	fmt.Fprintf(&b, " %s", r.Label())
	if len(r.Events) > 0 {
		fmt.Fprintf(&b, " (%s)", plural.S(len(r.Events), "event"))
	}
	fmt.Fprintf(&b, " -> %s: ", r.Target)
	switch {
	case r.Status == 0:
		fmt.Fprintf(&b, "no answer: %s", r.Error)
	default:
		fmt.Fprintf(&b, "%d %s in %s", r.Status, r.StatusText, human.Duration(r.Latency))
		if r.Error != "" {
			fmt.Fprintf(&b, " (%s)", r.Error)
		}
	}
	return b.String()
}
