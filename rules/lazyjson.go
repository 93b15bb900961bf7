package rules

import (
	"bytes"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// jsonObject is a JSON object read lazily: looking a member up scans the
// raw bytes (skipping the other members without decoding them) and
// returns the member, itself lazy when it is an object. An expression
// over a payload reaches one or two members of a ~2 KB event; decoding the
// whole of every body into maps was most of a search's time (finding 14).
// Anything else (iterating, comparing, size) decodes the object whole,
// once, and defers to CEL's own map.
type jsonObject struct {
	sc   *scanner
	raw  []byte
	full traits.Mapper
	// found are the members looked up so far (nil: absent): has(x.y)
	// then x.y scans once.
	found map[string]ref.Val
}

// lazyJSON returns raw as a CEL value: an object lazily (scanned with
// sc), anything else decoded.
func lazyJSON(sc *scanner, raw []byte) ref.Val {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) > 0 && raw[0] == '{' {
		return &jsonObject{sc: sc, raw: raw}
	}
	var v any
	if len(raw) == 0 || unmarshalLenient(raw, &v) != nil {
		return types.NullValue
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// scanner scans the JSON of one evaluation: its decoder (a few KB of
// state) is made once and reused for every lookup. An evaluation runs on
// one goroutine, so it needs no lock.
type scanner struct {
	dec *jsontext.Decoder
}

func (sc *scanner) decoder() *jsontext.Decoder {
	if sc.dec == nil {
		sc.dec = jsontext.NewDecoder(bytes.NewBuffer(nil))
	}
	return sc.dec
}

// memberRaw finds key among the members of the JSON object raw and
// returns its value's bytes (a slice of raw). A name given twice is its
// last value, as decoding the object whole gives.
func (sc *scanner) memberRaw(raw []byte, key string) ([]byte, bool) {
	var found []byte
	dec := sc.decoder()
	dec.Reset(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		// The token is void after the next call: compare its name first.
		match := tok.String() == key
		start := dec.InputOffset()
		if err := dec.SkipValue(); err != nil {
			return nil, false
		}
		if match {
			// The value follows the colon and any whitespace.
			found = bytes.TrimLeft(raw[start:dec.InputOffset()], " \t\r\n:")
		}
	}
	return found, found != nil
}

// elementRaw returns the bytes of the i-th element of the JSON array raw.
func (sc *scanner) elementRaw(raw []byte, i int) ([]byte, bool) {
	dec := sc.decoder()
	dec.Reset(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	for n := 0; ; n++ {
		if k := dec.PeekKind(); k == ']' || k == 0 {
			return nil, false
		}
		start := dec.InputOffset()
		if err := dec.SkipValue(); err != nil {
			return nil, false
		}
		if n == i {
			return bytes.TrimLeft(raw[start:dec.InputOffset()], " \t\r\n,"), true
		}
	}
}

func (o *jsonObject) decoded() traits.Mapper {
	if o.full == nil {
		var m map[string]any
		if unmarshalLenient(o.raw, &m) != nil {
			m = map[string]any{}
		}
		o.full = types.DefaultTypeAdapter.NativeToValue(m).(traits.Mapper)
	}
	return o.full
}

// Find looks a member up without decoding the others.
func (o *jsonObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return o.decoded().Find(key)
	}
	if v, ok := o.found[string(k)]; ok {
		return v, v != nil
	}
	var v ref.Val
	if raw, ok := o.sc.memberRaw(o.raw, string(k)); ok {
		v = lazyJSON(o.sc, raw)
	}
	if o.found == nil {
		o.found = map[string]ref.Val{}
	}
	o.found[string(k)] = v
	return v, v != nil
}

// Get returns a member, or CEL's "no such key" error.
func (o *jsonObject) Get(key ref.Val) ref.Val {
	if v, ok := o.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

// Contains is `key in object`.
func (o *jsonObject) Contains(key ref.Val) ref.Val {
	_, ok := o.Find(key)
	return types.Bool(ok)
}

// Iterator, Size, the conversions, Equal and Value decode the object
// whole (once) and defer to CEL's map; Type is a map's.
func (o *jsonObject) Iterator() traits.Iterator { return o.decoded().Iterator() }
func (o *jsonObject) Size() ref.Val             { return o.decoded().Size() }
func (o *jsonObject) ConvertToNative(t reflect.Type) (any, error) {
	return o.decoded().ConvertToNative(t)
}
func (o *jsonObject) ConvertToType(t ref.Type) ref.Val { return o.decoded().ConvertToType(t) }
func (o *jsonObject) Equal(other ref.Val) ref.Val {
	if p, ok := other.(*jsonObject); ok {
		other = p.decoded()
	}
	return o.decoded().Equal(other)
}
func (o *jsonObject) Type() ref.Type { return types.MapType }
func (o *jsonObject) Value() any     { return o.decoded().Value() }
