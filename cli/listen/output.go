package listen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/station"
)

// printer writes listen's standard output: the start line, one entry per
// delivery, one per tunnel state change. Each entry is text for a person
// or, with --json, one JSON object on one line. Every entry is one write
// under the printer's lock, so entries from the engine's and the tunnel's
// goroutines never interleave. Another kind of entry is one method that
// builds its text and its JSON value and calls emit.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	json  bool
	color bool

	// Forwarding can finish before analysis: an attempt's entry is held
	// until its delivery's line is out (shown is the highest delivery id
	// printed), or for holdFor at most, so it reads under its delivery.
	held    map[int64][][]byte
	shown   int64
	flusher *time.Timer
	// before is the newest delivery stored before this run: an attempt
	// for one of those (owed since the last run) is written at once,
	// since its delivery's line was printed then, not now.
	before int64
}

// holdFor bounds how long an attempt's entry waits for its delivery's
// line: during a flood analysis falls behind, forwarding need not.
const holdFor = time.Second

func newPrinter(w io.Writer, jsonOut, color bool) *printer {
	return &printer{w: w, json: jsonOut, color: color && !jsonOut}
}

// emit writes one entry: v as a JSON line with --json, else text (which
// ends with a newline). text is only called for text output.
func (p *printer) emit(text func() string, v any) {
	b := p.entry(text, v)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w.Write(b) //nolint:errcheck // nowhere better to report a broken stdout
}

// emitAfter writes an entry that belongs under delivery id's line: at
// once when that line is out, else when it is (or after holdFor).
func (p *printer) emitAfter(id int64, text func() string, v any) {
	b := p.entry(text, v)
	if len(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id <= p.shown || id <= p.before {
		p.w.Write(b) //nolint:errcheck // as in emit
		return
	}
	if p.held == nil {
		p.held = map[int64][][]byte{}
	}
	p.held[id] = append(p.held[id], b)
	if p.flusher == nil {
		p.flusher = time.AfterFunc(holdFor, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.flusher = nil
			p.writeHeld(math.MaxInt64)
		})
	}
}

// writeHeld writes the held entries of deliveries up to id, in id order.
// The caller holds p.mu.
func (p *printer) writeHeld(id int64) {
	ids := make([]int64, 0, len(p.held))
	for k := range p.held {
		if k <= id {
			ids = append(ids, k)
		}
	}
	slices.Sort(ids)
	for _, k := range ids {
		for _, b := range p.held[k] {
			p.w.Write(b) //nolint:errcheck // as in emit
		}
		delete(p.held, k)
	}
}

// flush writes every held entry (at exit).
func (p *printer) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flusher != nil {
		p.flusher.Stop()
		p.flusher = nil
	}
	p.writeHeld(math.MaxInt64)
}

// entry is one entry's bytes: v as a JSON line with --json, else text.
func (p *printer) entry(text func() string, v any) []byte {
	var b []byte
	if p.json {
		var err error
		if b, err = json.Marshal(v); err != nil {
			b, _ = json.Marshal(map[string]string{"error": fmt.Sprintf("encode output: %v", err)})
		}
		b = append(b, '\n')
	} else {
		b = []byte(text())
	}
	return b
}

// paint colours s for a terminal (nothing otherwise).
func (p *printer) paint(c, s string) string {
	if !p.color {
		return s
	}
	return c + s + ansiReset
}

// start is what the start entry says.
type start struct {
	url, store string
	secrets    int
	rules      *rules.Rules
	// rulesFrom names where the rules came from: "--answer" or the
	// window's settings.
	rulesFrom string
	fwd       *forward.Config
	// using is what was taken from the window's saved settings.
	using []string
}

// listening prints the start entry: where deliveries are received, how
// signatures are checked, what was taken from the window's settings, when
// it is not 200 how the receiver answers, and where deliveries are
// forwarded.
func (p *printer) listening(s start) {
	fwdText, fwdJSON := forwardStart(s.fwd)
	v := map[string]any{"listening": s.url, "store": s.store, "secrets": s.secrets, "answer_rules": s.rules.Lines()}
	if w := s.rules.Warning(); w != "" {
		v["answer_warning"] = w
	}
	if len(s.using) > 0 {
		v["settings_used"] = s.using
	}
	if fwdJSON != nil {
		v["forward"] = fwdJSON
	}
	p.emit(func() string {
		verify := "signatures not verified (no --secret)"
		if s.secrets > 0 {
			verify = "verifying signatures with " + plural.S(s.secrets, "secret")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Listening on %s  (%s; store %s)\n", s.url, verify, s.store)
		if len(s.using) > 0 {
			fmt.Fprintf(&b, "Using the window's settings: %s (flags override them; --no-settings ignores them).\n", strings.Join(s.using, ", "))
		}
		if w := s.rules.Warning(); w != "" {
			fmt.Fprintf(&b, "Warning: %s (%s): the service takes any answer but a 2xx within 10 s as a failure and sends the message again.\n", w, s.rulesFrom)
		}
		if note := station.PassThroughNote(s.fwd, len(s.rules.List())); note != "" {
			fmt.Fprintf(&b, "Note: %s.\n", note)
		}
		b.WriteString(fwdText)
		b.WriteString("Press Ctrl+C to stop.\n")
		return b.String()
	}, v)
}

// delivery prints one analysed (or not yet analysed) delivery; firsts
// holds, by event index, the first copy of each divergent event and what
// changed from it.
func (p *printer) delivery(r *inspector.Record, firsts map[int]*inspector.FirstCopy) {
	b := p.entry(func() string { return deliveryText(r, firsts, p.color) }, listenJSON(r, firsts))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w.Write(b) //nolint:errcheck // as in emit
	p.shown = max(p.shown, r.Delivery.ID)
	if len(p.held) > 0 {
		p.writeHeld(p.shown)
	}
}

// divergences finds the first copy of every divergent event of r, for
// delivery; a first copy that cannot be read is left out (the mark says
// divergent still).
func divergences(ctx context.Context, store inspector.RecordGetter, r *inspector.Record) map[int]*inspector.FirstCopy {
	var out map[int]*inspector.FirstCopy
	if r.Analysis == nil {
		return nil
	}
	for i, e := range r.Analysis.Events {
		if !e.Divergent {
			continue
		}
		if fc, err := inspector.DivergentFrom(ctx, store, r, i); err == nil && fc != nil {
			if out == nil {
				out = map[int]*inspector.FirstCopy{}
			}
			out[i] = fc
		}
	}
	return out
}

// maxChangesShown bounds the changes listed under a divergent event; the
// rest are counted (--json lists them all).
const maxChangesShown = 5

// listenEvent is one event in listen's --json output.
type listenEvent struct {
	UUID        string `json:"uuid"`
	Type        string `json:"type"`
	GeneratedAt string `json:"generated_at"`
	AccountID   string `json:"account_id"`
	// Duplicate: an earlier delivery carried this uuid (Copies > 1).
	Duplicate bool `json:"duplicate"`
	// Copies numbers this copy of the uuid in arrival order: 1 is the
	// first, 2 the second copy (the first duplicate), and so on.
	Copies     int    `json:"copies"`
	FirstID    int64  `json:"first_delivery_id"`
	Divergent  bool   `json:"divergent"`
	OutOfOrder bool   `json:"out_of_order"`
	OrderNote  string `json:"order_note,omitempty"`
	// Changes lists, for a divergent copy, what changed from the first
	// copy, path by path.
	Changes  []inspector.JSONChange `json:"changes,omitempty"`
	Summary  string                 `json:"summary,omitempty"`
	Problems []catalog.Problem      `json:"problems"`
}

// listenLine is one delivery in listen's --json output.
type listenLine struct {
	DeliveryID int64  `json:"delivery_id"`
	ReceivedAt string `json:"received_at"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Status     int    `json:"status"`
	Answer     string `json:"answer,omitempty"`
	// Source is where it came from when not this receiver ("relay", with
	// the relay's stream sequence).
	Source          string `json:"source,omitempty"`
	RelaySeq        uint64 `json:"relay_seq,omitempty"`
	BodyLength      int64  `json:"body_length"`
	Signature       string `json:"signature"`
	SignatureReason string `json:"signature_reason,omitempty"`
	// SignatureNote says how a valid signature departs from the service's
	// form (a "sha256=" prefix, upper-case hex).
	SignatureNote string            `json:"signature_note,omitempty"`
	SecretMatched *int              `json:"secret_matched"`
	HookUUID      string            `json:"hook_uuid"`
	Resend        bool              `json:"resend"`
	ResendOf      int64             `json:"resend_of,omitempty"`
	Error         *string           `json:"error"`
	ErrorOffset   *int64            `json:"error_offset,omitempty"`
	Truncated     bool              `json:"truncated"`
	Rejected      bool              `json:"rejected"`
	Problems      []catalog.Problem `json:"problems"`
	Events        []listenEvent     `json:"events"`
}

func listenJSON(r *inspector.Record, firsts map[int]*inspector.FirstCopy) listenLine {
	d, a := r.Delivery, r.Analysis
	l := listenLine{
		DeliveryID: d.ID,
		ReceivedAt: d.ReceivedAt.UTC().Format(time.RFC3339Nano),
		Method:     d.Method,
		Path:       d.Path,
		Status:     d.Status,
		Answer:     d.Answer,
		RelaySeq:   d.RelaySeq,
		BodyLength: d.BodyLength,
		Truncated:  d.Truncated,
		Rejected:   d.Rejected,
		Problems:   []catalog.Problem{},
		Events:     []listenEvent{},
	}
	if d.Source != "receiver" {
		l.Source = d.Source
	}
	if a == nil {
		l.Signature = "pending"
		return l
	}
	l.Signature = string(a.Signature.Status)
	l.SignatureReason = a.Signature.Reason
	l.SignatureNote = a.Signature.Note()
	if a.Signature.SecretIndex >= 0 {
		i := a.Signature.SecretIndex
		l.SecretMatched = &i
	}
	l.HookUUID, l.Resend, l.ResendOf = a.HookUUID, a.Resend, a.ResendOf
	if a.Error != nil {
		l.Error = &a.Error.Reason
		if a.Error.Offset >= 0 {
			off := a.Error.Offset
			l.ErrorOffset = &off
		}
	}
	if a.Problems != nil {
		l.Problems = a.Problems
	}
	for i, e := range a.Events {
		ps := e.Problems
		if ps == nil {
			ps = []catalog.Problem{}
		}
		le := listenEvent{
			UUID: e.UUID, Type: e.Type, GeneratedAt: e.GeneratedRaw, AccountID: e.AccountID,
			Duplicate: e.Duplicate, Copies: e.Copies, FirstID: e.FirstDeliveryID, Divergent: e.Divergent,
			OutOfOrder: e.OutOfOrder, OrderNote: e.OrderNote, Summary: e.Summary, Problems: ps,
		}
		if fc := firsts[i]; fc != nil {
			le.Changes = fc.Changes
		}
		l.Events = append(l.Events, le)
	}
	return l
}

// ANSI colours for the text form on a terminal.
const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
)

// deliveryText is a delivery for a person: a head line (time, id, request,
// answer, signature verdict, marks), then an indented line for every
// reason the window and --json give: why a signature is not valid, or the
// note on a valid one in another form than the service's; each header
// problem; why the body is not a message; and under each event its marks,
// problems and why it is out of order.
func deliveryText(r *inspector.Record, firsts map[int]*inspector.FirstCopy, color bool) string {
	paint := func(c, s string) string {
		if !color {
			return s
		}
		return c + s + ansiReset
	}
	d, a := r.Delivery, r.Analysis
	var b strings.Builder
	status := fmt.Sprint(d.Status)
	switch reply := d.Reply(); {
	case d.Answer == inspector.AnswerPassThrough:
	case reply.Close && reply.Delay > 0:
		status = "closed after " + human.Duration(reply.Delay)
	case reply.Close:
		status = "closed"
	case reply.Delay > 0:
		status = fmt.Sprintf("%d after %s", reply.Status, human.Duration(reply.Delay))
	}
	fmt.Fprintf(&b, "%s  #%-5d %s %s  %s", d.ReceivedAt.Local().Format("15:04:05.000"), d.ID, d.Method, d.Path, status)
	if d.Source == relay.DeliverySource {
		fmt.Fprintf(&b, "  via relay #%d", d.RelaySeq)
	}
	if a == nil {
		b.WriteString("  (not analyzed)\n")
		return b.String()
	}
	sig := a.Signature
	head := "signature " + string(sig.Status)
	note := sig.Note()
	switch sig.Status {
	case inspector.SignatureValid:
		if sig.SecretIndex > 0 {
			head += fmt.Sprintf(" (secret #%d)", sig.SecretIndex+1)
		}
		if note != "" {
			head += " (with a note)"
		}
		head = paint(ansiGreen, head)
	case inspector.SignatureInvalid, inspector.SignatureMissing:
		head = paint(ansiRed, head)
	default:
		head = paint(ansiDim, head)
	}
	fmt.Fprintf(&b, "  %s", head)
	if d.Truncated {
		b.WriteString(paint(ansiYellow, fmt.Sprintf("  TRUNCATED (%d bytes sent)", d.BodyLength)))
	}
	if a.Resend {
		b.WriteString(paint(ansiYellow, fmt.Sprintf("  re-sent message (first #%d)", a.ResendOf)))
	}
	if n := len(a.Problems); n > 0 {
		b.WriteString("  " + plural.S(n, "header problem"))
	}
	b.WriteByte('\n')
	// The reasons, one indented line each. An unverified signature's reason
	// (no secret) is said once, on the start line, not under every delivery.
	switch {
	case sig.Status == inspector.SignatureInvalid || sig.Status == inspector.SignatureMissing:
		fmt.Fprintf(&b, "    %s %s\n", paint(ansiRed, "signature "+string(sig.Status)+":"), sig.Reason)
	case note != "":
		fmt.Fprintf(&b, "    %s %s\n", paint(ansiYellow, "signature note:"), note)
	}
	for _, p := range a.Problems {
		fmt.Fprintf(&b, "    %s\n", problemText(p, paint))
	}
	if a.Error != nil {
		fmt.Fprintf(&b, "    %s %s\n", paint(ansiRed, "undecodable:"), a.Error.Reason)
	}
	for i, e := range a.Events {
		marks := "new"
		if e.Duplicate {
			marks = paint(ansiYellow, fmt.Sprintf("duplicate: copy %d, first in #%d", e.Copies, e.FirstDeliveryID))
		}
		if e.Divergent {
			marks += " " + paint(ansiRed+ansiBold, "DIVERGENT")
		}
		if e.OutOfOrder {
			marks += " " + paint(ansiYellow, "out-of-order")
		}
		if n := len(e.Problems); n > 0 {
			marks += " " + plural.S(n, "problem")
		}
		typ := e.Type
		if typ == "" {
			typ = "(no type)"
		}
		uuid := e.UUID
		if uuid == "" {
			uuid = "(no uuid)"
		}
		fmt.Fprintf(&b, "    %-42s %-34s %s\n", typ, uuid, marks)
		if e.Divergent {
			fmt.Fprintf(&b, "      %s same uuid as #%d, other content", paint(ansiRed, "divergent:"), e.FirstDeliveryID)
			if fc := firsts[i]; fc != nil && len(fc.Changes) > 0 {
				b.WriteString(":\n")
				for _, c := range fc.Changes[:min(len(fc.Changes), maxChangesShown)] {
					fmt.Fprintf(&b, "        %s\n", c)
				}
				if n := len(fc.Changes) - maxChangesShown; n > 0 {
					fmt.Fprintf(&b, "        … and %s (--json lists them all)\n", plural.S(n, "more change"))
				}
			} else {
				b.WriteString("\n")
			}
		}
		if e.OutOfOrder && e.OrderNote != "" {
			fmt.Fprintf(&b, "      %s %s\n", paint(ansiYellow, "out of order:"), e.OrderNote)
		}
		for _, p := range e.Problems {
			fmt.Fprintf(&b, "      %s\n", problemText(p, paint))
		}
	}
	return b.String()
}

// problemText is one contract problem on a line: its severity, where it
// is (a JSON path or a header name) and what is wrong.
func problemText(p catalog.Problem, paint func(c, s string) string) string {
	sev := string(p.Severity)
	switch p.Severity {
	case catalog.SeverityError:
		sev = paint(ansiRed, sev)
	case catalog.SeverityWarning:
		sev = paint(ansiYellow, sev)
	default:
		sev = paint(ansiDim, sev)
	}
	if p.Path == "" {
		return sev + ": " + p.Message
	}
	return sev + " " + p.Path + ": " + p.Message
}
