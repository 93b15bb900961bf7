package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The contract checks read an event as a tree that keeps what decoding
// into Go values loses: an object's members in the order sent, repeated
// keys, and each value's text as written (numbers such as 50.0, the JSON
// of a value of the wrong kind). jsontext tokenizes and validates; the
// tree is only the members of objects, as the checks walk nothing else.

// kind is a JSON value's kind: jsontext's, whose byte is the first of the
// value's text ('0' for numbers, 't' and 'f' for booleans).
type kind jsontext.Kind

func (k kind) String() string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '0':
		return "a number"
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "unknown"
}

// isBool is true for both boolean kinds.
func (k kind) isBool() bool { return k == 't' || k == 'f' }

// value is one JSON value of an event.
type value struct {
	kind kind
	// raw is the value's JSON text as written (a string with its quotes),
	// a sub-slice of the parsed input.
	raw []byte
	// text is a string's decoded text. Invalid UTF-8 reads as U+FFFD.
	text string
	// members are an object's members in the order sent; arrays keep
	// only raw.
	members []member
}

// member is one member of an object.
type member struct {
	key string
	val *value
}

// get returns the member of object v named key (the last one when the key
// repeats, as encoding/json and most consumers read it), or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != '{' {
		return nil
	}
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].key == key {
			return v.members[i].val
		}
	}
	return nil
}

// str is v's decoded text when v is a string, else "".
func (v *value) str() string {
	if v == nil || v.kind != '"' {
		return ""
	}
	return v.text
}

// num is v's value when v is a number that fits a float64.
func (v *value) num() (float64, bool) {
	if v == nil || v.kind != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.raw), 64)
	return f, err == nil
}

// parse reads src as a single JSON value; white space may surround it.
// The tree's raw texts are sub-slices of src.
func parse(src []byte) (*value, error) {
	// Accepted as encoding/json accepts them: repeated keys (the checks
	// report them) and invalid UTF-8.
	dec := jsontext.NewDecoder(bytes.NewBuffer(src), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	v, err := parseValue(dec, src)
	if err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value at byte offset %d", dec.InputOffset())
	}
	return v, nil
}

func parseValue(dec *jsontext.Decoder, src []byte) (*value, error) {
	if dec.PeekKind() != '{' {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		end := dec.InputOffset()
		v := &value{kind: kind(raw.Kind()), raw: src[end-int64(len(raw)) : end]}
		if v.kind == '"' {
			v.text = unquote(v.raw)
		}
		return v, nil
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	start := dec.InputOffset() - 1
	v := &value{kind: '{'}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		key := unquote(name)
		m, err := parseValue(dec, src)
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, member{key: key, val: m})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	v.raw = src[start:dec.InputOffset()]
	return v, nil
}

// unquote decodes a JSON string the decoder has validated.
func unquote(quoted []byte) string {
	if s := quoted[1 : len(quoted)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	// The error only says that invalid UTF-8 was replaced.
	b, _ := jsontext.AppendUnquote(nil, quoted)
	return string(b)
}

// syntaxError words a parse error for people: what is wrong and where.
func syntaxError(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%v at byte offset %d", se.Err, se.ByteOffset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of JSON")
	}
	return err
}
