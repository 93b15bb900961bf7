package resends

import "strings"

// answerClosed starts Attempt.Answer for a connection closed unanswered.
const answerClosed = "closed unanswered"

// Kind is what the service got for an attempt, in the four classes the
// faces show alike (the window colours its timeline marks by it).
type Kind string

// The kinds.
const (
	// KindOK is a 2xx in time: the service takes the message as received.
	KindOK Kind = "2xx"
	// KindStatus is another status (500, 503, 401, ...).
	KindStatus Kind = "status"
	// KindClosed is a connection closed without an answer.
	KindClosed Kind = "closed"
	// KindHeld is no answer within the service's 10 s time-out (held,
	// or none recorded).
	KindHeld Kind = "held"
)

// Kind says what the service got for the attempt.
func (a Attempt) Kind() Kind {
	switch {
	case a.OK:
		return KindOK
	case strings.HasPrefix(a.Answer, answerClosed):
		return KindClosed
	case a.Status != 0:
		return KindStatus
	}
	return KindHeld
}
