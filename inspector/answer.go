package inspector

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Reply is how the receiver answers one delivery: a status, or the
// connection closed without an answer, either at once or after holding
// the request for Delay. Answer rules (package rules) choose it per
// delivery, so a developer can provoke the service's re-sends on purpose.
type Reply struct {
	// Status is the HTTP status answered (0 with Close).
	Status int `json:"status,omitempty"`
	// Close closes the connection without an answer.
	Close bool `json:"close,omitempty"`
	// Delay is how long the request is held before the answer (or the
	// close).
	Delay time.Duration `json:"delay,omitempty"`
}

// Answerer chooses the receiver's answer to each delivery it takes (a POST
// read whole, under the body cap); requests it refuses keep their answer
// (405, 413, 400), and in pass-through the app answers the deliveries a
// route takes. rules.Rules implements it.
type Answerer interface {
	// Answer is called once per delivery, before it is stored, with the
	// receiver's secrets (for its signature). It may count the delivery
	// as one more attempt of its message. It runs on the ack path: it must
	// be fast and never block.
	Answer(d *Delivery, secrets [][]byte) Reply
}

// ServiceTimeout is how long the service waits for an answer (spec
// section 8): a delivery held longer is a failure to it, whatever comes
// after, and it sends the message again.
const ServiceTimeout = 10 * time.Second

// HangFor is how long the "hang" answer holds a request before answering
// 200: longer than ServiceTimeout, so the service gives up and re-sends.
const HangFor = 15 * time.Second

// The values of Delivery.Answer beside a plain status ("") and a held one
// ("after 12s", "close after 3s": see Delivery.SetReply).
const (
	// AnswerClose: the connection was closed without an answer.
	AnswerClose = "close"
	// AnswerPassThrough: the developer's app answered through a Tap
	// (pass-through forwarding); the status the service got is in the
	// forward attempt and, once it is recorded, in Delivery.Status.
	AnswerPassThrough = "pass-through"
	// answerHang is what versions before answer rules wrote for a request
	// held HangFor, then answered 200 (Status 0).
	answerHang = "hang"
	// heldPrefix starts the Answer of a held reply: "after 12s".
	heldPrefix = "after "
)

// String writes the reply as an answer rule does: "500", "200 after 12s",
// "close", "close after 3s".
func (r Reply) String() string {
	s := fmt.Sprint(r.Status)
	if r.Close {
		s = AnswerClose
	}
	if r.Delay > 0 {
		s += " " + heldPrefix + r.Delay.String()
	}
	return s
}

// ServiceStatus is the status the service takes from the reply: Status,
// or 0 when the connection was closed or held past ServiceTimeout (the
// service gave up before the answer).
func (r Reply) ServiceStatus() int {
	if r.Close || r.Delay >= ServiceTimeout {
		return 0
	}
	return r.Status
}

// SetReply writes r into d's Status and Answer, as the store keeps them
// (Delivery.Reply reads it back).
func (d *Delivery) SetReply(r Reply) {
	d.Status, d.Answer = r.Status, ""
	if r.Close {
		d.Status, d.Answer = 0, AnswerClose
	}
	if r.Delay > 0 {
		d.Answer = strings.TrimPrefix(d.Answer+" "+heldPrefix+r.Delay.String(), " ")
	}
}

// ReplyOf reads what the receiver answered from a delivery's stored
// Status and Answer (Delivery.Reply). A pass-through delivery gives the
// status the app's answer gave the service (0 until it is recorded).
func ReplyOf(status int, answer string) Reply {
	switch {
	case answer == "" || answer == AnswerPassThrough:
		return Reply{Status: status}
	case answer == AnswerClose:
		return Reply{Close: true}
	case answer == answerHang:
		return Reply{Status: http.StatusOK, Delay: HangFor}
	}
	r := Reply{Status: status}
	held, closed := strings.CutPrefix(answer, AnswerClose+" ")
	if closed {
		r = Reply{Close: true}
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(held, heldPrefix)); err == nil && strings.HasPrefix(held, heldPrefix) {
		r.Delay = d
	}
	return r
}

// Reply is what the receiver answered d (ReplyOf its Status and Answer).
func (d *Delivery) Reply() Reply { return ReplyOf(d.Status, d.Answer) }
