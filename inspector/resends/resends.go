// Package resends is the re-send observatory: for each message (hook
// uuid) the timeline of the service's attempts, what each was answered
// and the gap since the one before; across all messages, the re-send
// schedule learned from real traffic ("after a failed answer the service
// re-sent after ~1 min (n=41), ~5 min (n=38); nothing after a 2xx
// (n=1,200)"), which the service's spec leaves out. Answer rules
// (package rules) are the way to provoke it. The package never imports
// Fyne; the store implements Source.
package resends

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// Arrival is one stored delivery of a message, as the store has it.
type Arrival struct {
	HookUUID   string
	DeliveryID int64
	ReceivedAt time.Time
	// Status is what Hookscope answered (0: nothing, see Answer).
	Status int
	// Answer is how the receiver answered beside Status (Delivery.Answer:
	// "close", "after 12s", "close after 3s", "pass-through"; see
	// inspector.ReplyOf).
	Answer string
	// Relayed is the status the service got from the developer's app in
	// pass-through (its forward attempt), 0 when none is recorded.
	Relayed int
}

// Source gives the stored arrivals of messages (the store implements
// it): fn with each delivery carrying one of hooks (all messages when
// hooks is nil), grouped by hook uuid, oldest first within a message.
type Source interface {
	EachArrival(ctx context.Context, hooks []string, fn func(Arrival) error) error
}

// Attempt is one attempt on a message's timeline.
type Attempt struct {
	// Number counts the message's attempts from 1.
	Number     int       `json:"attempt"`
	DeliveryID int64     `json:"delivery_id"`
	ReceivedAt time.Time `json:"received_at"`
	// Status is the status the service got, 0 when it got none.
	Status int `json:"status"`
	// Answer says what the service got in words: "200", "500", "closed
	// unanswered", "200 after 3 s", "held 12 s (past 10 s)", "502 (from
	// the app)".
	Answer string `json:"answer"`
	// By is who answered: "hookscope" or "app" (pass-through).
	By string `json:"by"`
	// OK: the service took the answer as accepted (a 2xx in time).
	OK bool `json:"ok"`
	// Gap is the time since the previous attempt (0 for the first).
	Gap time.Duration `json:"gap_ns"`
}

// Timeline is one message's attempts, oldest first.
type Timeline struct {
	HookUUID string    `json:"hook_uuid"`
	Attempts []Attempt `json:"attempts"`
}

// attempt interprets one arrival: what the service got from the
// receiver's answer (inspector.Reply), or from the app's in pass-through.
func attempt(a Arrival) Attempt {
	at := Attempt{DeliveryID: a.DeliveryID, ReceivedAt: a.ReceivedAt, By: "hookscope"}
	r := inspector.ReplyOf(a.Status, a.Answer)
	at.Status = r.ServiceStatus()
	switch {
	case a.Answer == inspector.AnswerPassThrough:
		at.By, at.Status = "app", a.Relayed
		at.Answer = fmt.Sprintf("%d (from the app)", a.Relayed)
		if a.Relayed == 0 {
			at.Answer = "no answer recorded (pass-through)"
		}
	case r.Close && r.Delay > 0:
		at.Answer = answerClosed + " after " + human.Duration(r.Delay)
	case r.Close:
		at.Answer = answerClosed
	case r.Delay >= inspector.ServiceTimeout:
		// The service gave up before the answer: a failure to it,
		// whatever came after.
		at.Answer = fmt.Sprintf("held %s (past %s)", human.Duration(r.Delay), human.Duration(inspector.ServiceTimeout))
	case r.Delay > 0:
		at.Answer = fmt.Sprintf("%d after %s", r.Status, human.Duration(r.Delay))
	case r.Status == 0:
		at.Answer = "no answer"
	default:
		at.Answer = fmt.Sprint(r.Status)
	}
	at.OK = at.Status >= 200 && at.Status < 300
	return at
}

// Timelines reads the timelines of hooks (every message when nil), in
// the order the source gives the messages.
func Timelines(ctx context.Context, src Source, hooks []string) ([]Timeline, error) {
	var out []Timeline
	err := src.EachArrival(ctx, hooks, func(a Arrival) error {
		if len(out) == 0 || out[len(out)-1].HookUUID != a.HookUUID {
			out = append(out, Timeline{HookUUID: a.HookUUID})
		}
		tl := &out[len(out)-1]
		at := attempt(a)
		at.Number = len(tl.Attempts) + 1
		if n := len(tl.Attempts); n > 0 {
			at.Gap = a.ReceivedAt.Sub(tl.Attempts[n-1].ReceivedAt)
		}
		tl.Attempts = append(tl.Attempts, at)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read re-send timelines: %w", err)
	}
	return out, nil
}

// Bucket is one bar of the gap histogram: the gaps from Lo (inclusive)
// to Hi (exclusive).
type Bucket struct {
	Lo time.Duration `json:"lo_ns"`
	Hi time.Duration `json:"hi_ns"`
	// N is how many gaps fell in it; Median is their median (the figure
	// a person reads: "~1 min").
	N      int           `json:"n"`
	Median time.Duration `json:"median_ns"`
}

// Label names the bucket by its median, rounded for reading: "~1 min".
func (b Bucket) Label() string { return "~" + Approx(b.Median) }

// bucketEdges are the histogram's bounds: roughly ×2 to ×3 apart, each
// bar centred on an interval retry schedules commonly use (1, 5, 10, 30
// s; 1, 2, 5, 10, 30 min; 1, 2, 6, 12, 24 h), so a real schedule puts
// each retry in one bar; a bar is labelled with its own median gap.
var bucketEdges = []time.Duration{
	0, 700 * time.Millisecond, 3 * time.Second, 7 * time.Second, 20 * time.Second, 45 * time.Second,
	90 * time.Second, 3 * time.Minute, 7 * time.Minute, 15 * time.Minute, 45 * time.Minute,
	90 * time.Minute, 3 * time.Hour, 9 * time.Hour, 18 * time.Hour, 36 * time.Hour, 1<<63 - 1,
}

// histogram buckets gaps, dropping empty bars.
func histogram(gaps []time.Duration) []Bucket {
	slices.Sort(gaps)
	var out []Bucket
	for i := 0; i+1 < len(bucketEdges); i++ {
		lo, hi := bucketEdges[i], bucketEdges[i+1]
		var in []time.Duration
		for _, g := range gaps {
			if g >= lo && g < hi {
				in = append(in, g)
			}
		}
		if len(in) > 0 {
			out = append(out, Bucket{Lo: lo, Hi: hi, N: len(in), Median: in[len(in)/2]})
		}
	}
	return out
}

// Retry is the learned gap before one re-send: the k-th re-send of a
// message came Median after the answer to the attempt before it.
type Retry struct {
	// Number is the re-send's number (1: the first re-send, the second
	// attempt).
	Number int           `json:"resend"`
	N      int           `json:"n"`
	Median time.Duration `json:"median_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Schedule is what the service's re-sends look like across messages.
type Schedule struct {
	// Messages counts the messages read; Resent those with more than one
	// attempt.
	Messages int `json:"messages"`
	Resent   int `json:"resent"`
	// AfterFailure is the histogram of gaps that followed a failed answer
	// (not a 2xx in time); Retries the same gaps by re-send number.
	AfterFailure []Bucket `json:"after_failure"`
	Retries      []Retry  `json:"retries"`
	// AfterSuccess is the histogram of gaps that followed a 2xx: the
	// service re-sent a message it had been told it got.
	AfterSuccess []Bucket `json:"after_success"`
	// SettledOK counts messages whose last attempt was answered 2xx and
	// that were not sent again: "nothing after a 2xx".
	SettledOK int `json:"settled_ok"`
	// Waiting counts messages whose last attempt failed with nothing
	// after it (yet): the service gave up, or has not re-sent so far.
	Waiting int `json:"waiting"`
}

// Summary is the schedule in one sentence, as every face shows it:
// "Learned from 1,251 messages (51 re-sent): after a failed answer ...".
func (s Schedule) Summary() string {
	noun := "messages"
	if s.Messages == 1 {
		noun = "message"
	}
	return fmt.Sprintf("Learned from %s %s (%s re-sent): %s.", human.Count(s.Messages), noun, human.Count(s.Resent), s.Sentence())
}

// Details are the lines under the summary: each re-send's gap
// ("re-send 1: after ~1 min (n=41, 58 s to 1 min 2 s)") and the messages
// still waiting for one.
func (s Schedule) Details() []string {
	var lines []string
	for _, r := range s.Retries {
		spread := human.Duration(r.Min)
		if r.Max != r.Min {
			spread += " to " + human.Duration(r.Max)
		}
		lines = append(lines, fmt.Sprintf("re-send %d: after ~%s (n=%s, %s)", r.Number, Approx(r.Median), human.Count(r.N), spread))
	}
	if s.Waiting > 0 {
		lines = append(lines, plural.Count(s.Waiting, "message", "messages")+" had a failed answer last and "+
			map[bool]string{true: "was", false: "were"}[s.Waiting == 1]+" not sent again (yet)")
	}
	return lines
}

// Learn works out the schedule from timelines.
func Learn(tls []Timeline) Schedule {
	s := Schedule{Messages: len(tls)}
	var afterFail, afterOK []time.Duration
	byRetry := map[int][]time.Duration{}
	for _, tl := range tls {
		as := tl.Attempts
		if len(as) == 0 {
			continue
		}
		if len(as) > 1 {
			s.Resent++
		}
		for i := 1; i < len(as); i++ {
			if as[i-1].OK {
				afterOK = append(afterOK, as[i].Gap)
				continue
			}
			afterFail = append(afterFail, as[i].Gap)
			byRetry[i] = append(byRetry[i], as[i].Gap)
		}
		if as[len(as)-1].OK {
			s.SettledOK++
		} else {
			s.Waiting++
		}
	}
	s.AfterFailure, s.AfterSuccess = histogram(afterFail), histogram(afterOK)
	for _, k := range slices.Sorted(maps.Keys(byRetry)) {
		g := byRetry[k]
		slices.Sort(g)
		s.Retries = append(s.Retries, Retry{Number: k, N: len(g), Median: g[len(g)/2], Min: g[0], Max: g[len(g)-1]})
	}
	return s
}

// Sentence says the schedule in one line, as the issue puts it: "after a
// failed answer the service re-sent after ~1 min (n=41), ~5 min (n=38);
// nothing after a 2xx (n=1,200)".
func (s Schedule) Sentence() string {
	var parts []string
	if len(s.AfterFailure) > 0 {
		var bars []string
		for _, b := range s.AfterFailure {
			bars = append(bars, fmt.Sprintf("%s (n=%s)", b.Label(), human.Count(b.N)))
		}
		parts = append(parts, "after a failed answer the service re-sent after "+strings.Join(bars, ", "))
	} else if s.Waiting > 0 {
		parts = append(parts, "no re-send seen after a failed answer yet")
	}
	switch {
	case len(s.AfterSuccess) > 0:
		n := 0
		for _, b := range s.AfterSuccess {
			n += b.N
		}
		parts = append(parts, fmt.Sprintf("re-sent %s after a 2xx; nothing after a 2xx (n=%s)", times(n), human.Count(s.SettledOK)))
	case s.SettledOK > 0:
		parts = append(parts, fmt.Sprintf("nothing after a 2xx (n=%s)", human.Count(s.SettledOK)))
	}
	if len(parts) == 0 {
		return "no messages yet"
	}
	return strings.Join(parts, "; ")
}

// times says "once" or "3 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return human.Count(n) + " times"
}

// Approx writes a learned gap as a schedule is read (human.Duration
// rounded to the second below 2 min, the minute below 2 h, the hour
// above): "45 s", "5 min", "30 min", "3 h".
func Approx(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return human.Duration(d)
	case d < 2*time.Hour:
		return human.Duration(d.Round(time.Minute))
	}
	return human.Duration(d.Round(time.Hour))
}

// SortNewest orders timelines by their latest attempt, newest last (the
// order a terminal reads best).
func SortNewest(tls []Timeline) {
	slices.SortStableFunc(tls, func(a, b Timeline) int {
		return cmp.Compare(a.Attempts[len(a.Attempts)-1].DeliveryID, b.Attempts[len(b.Attempts)-1].DeliveryID)
	})
}

// WriteCSV writes one row per attempt (hook_uuid, attempt, delivery_id,
// received_at, status, answer, by, ok, gap_seconds): `hookscope resends
// --csv` and the observatory pane's export.
func WriteCSV(w io.Writer, tls []Timeline) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"hook_uuid", "attempt", "delivery_id", "received_at", "status", "answer", "by", "ok", "gap_seconds"})
	for _, tl := range tls {
		for _, a := range tl.Attempts {
			_ = cw.Write([]string{tl.HookUUID, strconv.Itoa(a.Number), strconv.FormatInt(a.DeliveryID, 10), a.ReceivedAt.Format(time.RFC3339Nano),
				strconv.Itoa(a.Status), a.Answer, a.By, strconv.FormatBool(a.OK), strconv.FormatFloat(a.Gap.Seconds(), 'f', -1, 64)})
		}
	}
	cw.Flush()
	return cw.Error()
}
