package rules

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/hookscope/hookscope/inspector"
)

// decodeArrival decodes a body as inspector.DecodeMessage does, with the
// scanner's one jsontext decoder and no copies instead of encoding/json's
// several passes (a third of the time on a typical message; an answer
// rule that reads events pays it on the receiver's ack path). The events'
// JSON aliases body. It reports false, having decided nothing, for any
// body it is not sure DecodeMessage takes the same way (not a message,
// nested deeper than DecodeMessage allows, a name only Unicode folding
// would match): the caller then asks DecodeMessage, whose result and
// errors stay the reference (FuzzDecodeArrival holds the two equal).
func decodeArrival(sc *scanner, body []byte) (*inspector.Message, bool) {
	// DecodeMessage's own checks first: a non-empty, valid UTF-8 body
	// nested at most maxArrivalDepth deep (counted generously: every
	// bracket, strings' included).
	if len(bytes.TrimSpace(body)) == 0 || !utf8.Valid(body) ||
		bytes.Count(body, []byte("{"))+bytes.Count(body, []byte("[")) > maxArrivalDepth {
		return nil, false
	}
	var top [2][]byte
	if !sc.members(body, true, []string{"hook", "events"}, top[:]) {
		return nil, false
	}
	var hook [1][]byte
	if top[0] == nil || !sc.members(top[0], false, []string{"uuid"}, hook[:]) {
		return nil, false
	}
	uuid, isStr, ok := jsonString(hook[0])
	if !ok || !isStr || uuid == "" {
		return nil, false
	}
	items, ok := sc.objects(top[1])
	if !ok {
		return nil, false
	}
	m := &inspector.Message{HookUUID: uuid, Events: make([]inspector.RawEvent, 0, len(items))}
	for _, raw := range items {
		var f [5][]byte
		if !sc.members(raw, false, []string{"uuid", "type", "generated_at", "payload", "metadata"}, f[:]) {
			return nil, false
		}
		ev := inspector.RawEvent{Raw: raw, Payload: f[3]}
		for i, dst := range []*string{&ev.UUID, &ev.Type, &ev.GeneratedRaw} {
			if *dst, _, ok = jsonString(f[i]); !ok {
				return nil, false
			}
		}
		if f[4] != nil {
			if ev.AccountID, ok = sc.accountID(f[4]); !ok {
				return nil, false
			}
		}
		ev.GeneratedAt = inspector.ParseTime(ev.GeneratedRaw)
		m.Events = append(m.Events, ev)
	}
	return m, true
}

// maxArrivalDepth is DecodeMessage's nesting limit.
const maxArrivalDepth = 512

// members scans the JSON object raw and sets out[i] to the raw value (a
// slice of raw) of names[i], the last when a name is given twice (as a
// Go map decoded from it has), nil when absent. whole: raw must hold
// nothing after the object. false: raw is not an object.
func (sc *scanner) members(raw []byte, whole bool, names []string, out [][]byte) bool {
	dec := sc.decoder()
	dec.Reset(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		// The token is void after the next call: find its name first.
		i := -1
		for j, n := range names {
			if tok.String() == n {
				i = j
			}
		}
		start := dec.InputOffset()
		if err := dec.SkipValue(); err != nil {
			return false
		}
		if i >= 0 {
			out[i] = bytes.TrimLeft(raw[start:dec.InputOffset()], " \t\r\n:")
		}
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return false
	}
	if _, err := dec.ReadToken(); whole && !errors.Is(err, io.EOF) {
		return false
	}
	return true
}

// objects returns the elements (slices of raw) of the JSON array raw,
// each of them an object; false otherwise (DecodeMessage refuses a
// message whose events are not objects).
func (sc *scanner) objects(raw []byte) ([][]byte, bool) {
	dec := sc.decoder()
	dec.Reset(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	var out [][]byte
	for dec.PeekKind() != ']' {
		start := dec.InputOffset()
		if err := dec.SkipValue(); err != nil {
			return nil, false
		}
		el := bytes.TrimLeft(raw[start:dec.InputOffset()], " \t\r\n,")
		if len(el) == 0 || el[0] != '{' {
			return nil, false
		}
		out = append(out, el)
	}
	return out, true
}

// jsonString is raw as a string when it is a JSON string (isStr); a value
// of another type, or none, is "" (DecodeMessage leaves such a field
// empty). ok is false for a string that does not decode.
func jsonString(raw []byte) (s string, isStr, ok bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, true
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", true, false
	}
	return string(b), true, true
}

// accountID reads metadata.account_id as DecodeMessage does: into a
// struct field, whose name matches without regard to case (the last
// match wins); metadata that is not an object gives "". false: a name
// only Unicode folding might match, left to DecodeMessage.
func (sc *scanner) accountID(md []byte) (string, bool) {
	if md[0] != '{' {
		return "", true
	}
	dec := sc.decoder()
	dec.Reset(bytes.NewBuffer(md), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadToken(); err != nil {
		return "", false
	}
	id := ""
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return "", false
		}
		name := tok.String()
		match := strings.EqualFold(name, "account_id")
		if !match && !isASCII(name) && utf8.RuneCountInString(name) == len("account_id") {
			return "", false
		}
		start := dec.InputOffset()
		if err := dec.SkipValue(); err != nil {
			return "", false
		}
		if match {
			var ok bool
			if id, _, ok = jsonString(bytes.TrimLeft(md[start:dec.InputOffset()], " \t\r\n:")); !ok {
				return "", false
			}
		}
	}
	return id, true
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
