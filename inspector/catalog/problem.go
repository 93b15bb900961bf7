// Package catalog knows the service's webhook event types: it decodes each
// event into a typed payload, checks it against the published contract, and
// renders it for people (one-line summaries, field lists, pretty JSON).
package catalog

// Severity ranks a contract problem. None of them rejects a delivery: the
// service is allowed to evolve, and a developer must still see what arrived.
type Severity string

// The three severities, most serious first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityNotice  Severity = "notice"
)

// Problem is one place where an event or delivery departs from the contract.
type Problem struct {
	Severity Severity `json:"severity"`
	// Path is a JSON path into the event object (for example
	// "payload.media.duration"), or a header name for delivery-level problems.
	Path    string `json:"path"`
	Message string `json:"message"`
}
