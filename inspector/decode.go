package inspector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is a decoded webhook message (spec 2.3). Events keep their raw
// JSON so nothing is lost in translation.
type Message struct {
	HookUUID string
	Events   []RawEvent
}

// RawEvent is one element of events[] with its envelope fields pulled out.
// Fields with the wrong JSON type are left empty; the catalogue's contract
// checks report them.
type RawEvent struct {
	UUID         string
	Type         string
	AccountID    string
	GeneratedRaw string
	GeneratedAt  time.Time
	Payload      json.RawMessage
	Raw          json.RawMessage
}

// maxDepth bounds JSON nesting before decoding: encoding/json would recurse
// through a 100,000-deep document and use a lot of stack for nothing.
const maxDepth = 512

// DecodeMessage parses a body as a webhook message. It fails with a
// *DecodeError giving a precise reason (and the byte offset of a JSON syntax
// error) when the body is not JSON or not of the message's shape. Events
// that are objects but miss fields are kept: those are contract problems,
// not decode failures.
func DecodeMessage(body []byte) (*Message, error) {
	hook, items, err := splitMessage(body)
	if err != nil {
		return nil, err
	}
	m := &Message{HookUUID: hook, Events: make([]RawEvent, 0, len(items))}
	for _, raw := range items {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(raw, &obj) // splitMessage checked it is an object
		ev := RawEvent{Raw: raw, Payload: obj["payload"]}
		_ = json.Unmarshal(obj["uuid"], &ev.UUID)
		_ = json.Unmarshal(obj["type"], &ev.Type)
		_ = json.Unmarshal(obj["generated_at"], &ev.GeneratedRaw)
		if md, ok := obj["metadata"]; ok {
			var meta struct {
				AccountID json.RawMessage `json:"account_id"`
			}
			if json.Unmarshal(md, &meta) == nil {
				_ = json.Unmarshal(meta.AccountID, &ev.AccountID)
			}
		}
		ev.GeneratedAt = ParseTime(ev.GeneratedRaw)
		m.Events = append(m.Events, ev)
	}
	return m, nil
}

// splitMessage checks that body is a webhook message and returns its hook
// uuid and the JSON of each element of events[] (copies, not aliasing
// body). Its errors are DecodeMessage's.
func splitMessage(body []byte) (hook string, events []json.RawMessage, err error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return "", nil, &DecodeError{Reason: "the body is empty; a webhook message is a JSON object with hook and events", Offset: -1}
	}
	if !utf8.Valid(body) {
		off := invalidUTF8Offset(body)
		return "", nil, &DecodeError{Reason: fmt.Sprintf("the body is not valid UTF-8 (first bad byte at offset %d); JSON must be UTF-8", off), Offset: int64(off)}
	}
	if off, ok := tooDeep(body, maxDepth); !ok {
		return "", nil, &DecodeError{Reason: fmt.Sprintf("JSON nesting deeper than %d levels at byte offset %d", maxDepth, off), Offset: int64(off)}
	}
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return "", nil, jsonError(body, err, "the body")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", nil, &DecodeError{Reason: fmt.Sprintf("unexpected data after the JSON object at byte offset %d", dec.InputOffset()), Offset: dec.InputOffset()}
	}
	if top == nil {
		return "", nil, &DecodeError{Reason: "the body is JSON null, not a message object", Offset: 0}
	}
	raw, ok := top["hook"]
	if !ok {
		return "", nil, &DecodeError{Reason: `the message has no "hook" object (expected {"hook": {"uuid": …}, "events": [...]})`, Offset: -1}
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(raw, &h); err != nil || h == nil {
		return "", nil, &DecodeError{Reason: fmt.Sprintf(`"hook" is %s, expected an object with "uuid"`, jsonKind(raw)), Offset: -1}
	}
	if u, ok := h["uuid"]; ok {
		if err := json.Unmarshal(u, &hook); err != nil {
			return "", nil, &DecodeError{Reason: fmt.Sprintf(`"hook.uuid" is %s, expected a string`, jsonKind(u)), Offset: -1}
		}
	}
	if hook == "" {
		return "", nil, &DecodeError{Reason: `"hook.uuid" is missing or empty`, Offset: -1}
	}
	evs, ok := top["events"]
	if !ok {
		return "", nil, &DecodeError{Reason: `the message has no "events" array (it is always an array, even for one event)`, Offset: -1}
	}
	if err := json.Unmarshal(evs, &events); err != nil || events == nil {
		return "", nil, &DecodeError{Reason: fmt.Sprintf(`"events" is %s, expected an array (always an array, even for one event)`, jsonKind(evs)), Offset: -1}
	}
	for i, raw := range events {
		if k := jsonKind(raw); k != "an object" {
			return "", nil, &DecodeError{Reason: fmt.Sprintf("events[%d] is %s, expected an event object", i, k), Offset: -1}
		}
	}
	return hook, events, nil
}

// ParseTime reads an ISO 8601 timestamp leniently (with or without
// fractional seconds, Z or an offset, or a space instead of T), returning
// the zero time when it cannot. Strictness is the contract checks' job.
func ParseTime(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999 UTC", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// jsonError turns an encoding/json error into a DecodeError with the byte
// offset and, for syntax errors, the line and column a person can find.
func jsonError(body []byte, err error, what string) *DecodeError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// encoding/json counts the bad byte as read; point at it instead.
		off := max(se.Offset-1, 0)
		line, col := lineCol(body, off)
		return &DecodeError{Reason: fmt.Sprintf("%s is not valid JSON: %s at byte offset %d (line %d, column %d)", what, se.Error(), off, line, col), Offset: off}
	case errors.As(err, &te):
		return &DecodeError{Reason: fmt.Sprintf("%s is JSON %s, expected a message object", what, te.Value), Offset: te.Offset}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &DecodeError{Reason: fmt.Sprintf("%s is not valid JSON: it ends early at byte offset %d (truncated?)", what, len(body)), Offset: int64(len(body))}
	default:
		return &DecodeError{Reason: fmt.Sprintf("%s is not valid JSON: %v", what, err), Offset: -1}
	}
}

func lineCol(b []byte, off int64) (line, col int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line, col = 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "missing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// tooDeep scans for nesting beyond limit without allocating, skipping
// strings. It returns the offset where the limit was crossed.
func tooDeep(b []byte, limit int) (int, bool) {
	depth := 0
	inStr, esc := false, false
	for i, c := range b {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > limit {
				return i, false
			}
		case '}', ']':
			depth--
		}
	}
	return 0, true
}
