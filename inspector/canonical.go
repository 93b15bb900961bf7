package inspector

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// CanonicalHash returns the SHA-256 (hex) of the canonical form of a JSON
// value: object keys sorted, insignificant white space removed, numbers kept
// as written. Two copies of one event with equal content hash equally
// however the sender formatted them.
//
// The canonical form is what encoding/json's decoding defines: the first
// JSON value of raw (what follows an object or array is ignored, as
// json.Decoder ignores it), strings decoded (invalid UTF-8 and lone
// surrogates become U+FFFD) and written as strconv.Quote writes them, object
// keys sorted bytewise, the last value of a repeated key, numbers as
// written. Input that is not JSON is hashed as it is, so equal garbage
// still compares equal. Stored hashes are compared with new ones to find
// divergent copies, so these bytes never change: FuzzCanonicalHash holds
// them to the writer earlier versions stored hashes with.
//
// Own writer on jsontext's tokens: decoding into Go maps slowed analysis's backlog visibly (docs/benchmarks.md, finding 6).
func CanonicalHash(raw json.RawMessage) string {
	out, _ := canonicalForm(raw)
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:])
}

// canonicalForm returns the bytes CanonicalHash hashes, and whether raw was
// JSON (when not, the bytes are raw itself).
func canonicalForm(raw []byte) ([]byte, bool) {
	c := canonWriter{dec: jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	out, err := c.value(make([]byte, 0, len(raw)))
	if err != nil || !c.endsCleanly(raw) {
		return raw, false
	}
	return out, true
}

// canonWriter writes the canonical form of the value dec reads.
type canonWriter struct {
	dec *jsontext.Decoder
	// tmp holds an object's members while they are put in order.
	tmp []byte
	// scalar is set when the top-level value is not an object or array.
	scalar bool
}

// endsCleanly reports whether json.Decoder would accept what follows the
// value just read: anything after an object or array (it stops at the
// closing bracket), only white space or the end right after a scalar.
func (c *canonWriter) endsCleanly(raw []byte) bool {
	off := c.dec.InputOffset()
	if !c.scalar || off >= int64(len(raw)) {
		return true
	}
	switch raw[off] {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// canonMember is one object member's key and canonical bytes in dst.
type canonMember struct {
	key        string
	start, end int
}

func (c *canonWriter) value(dst []byte) ([]byte, error) {
	top := c.dec.StackDepth() == 0
	switch c.dec.PeekKind() {
	case '{':
		return c.object(dst)
	case '[':
		if _, err := c.dec.ReadToken(); err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for n := 0; c.dec.PeekKind() != ']'; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = c.value(dst); err != nil {
				return dst, err
			}
		}
		if _, err := c.dec.ReadToken(); err != nil {
			return dst, err
		}
		return append(dst, ']'), nil
	}
	c.scalar = top
	v, err := c.dec.ReadValue()
	if err != nil {
		return dst, err
	}
	if v.Kind() == '"' && !plainASCII(v) {
		return strconv.AppendQuote(dst, canonText(v)), nil
	}
	return append(dst, v...), nil
}

func (c *canonWriter) object(dst []byte) ([]byte, error) {
	if _, err := c.dec.ReadToken(); err != nil {
		return dst, err
	}
	open := len(dst)
	dst = append(dst, '{')
	var ms []canonMember
	for c.dec.PeekKind() != '}' {
		name, err := c.dec.ReadValue()
		if err != nil {
			return dst, err
		}
		if len(ms) > 0 {
			dst = append(dst, ',')
		}
		m := canonMember{key: canonText(name), start: len(dst)}
		dst = strconv.AppendQuote(dst, m.key)
		dst = append(dst, ':')
		if dst, err = c.value(dst); err != nil {
			return dst, err
		}
		m.end = len(dst)
		ms = append(ms, m)
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return dst, err
	}
	// Members in order already (most objects) stay where they were
	// written; reordering copies the object, once per level of nesting.
	if slices.IsSortedFunc(ms, func(a, b canonMember) int { return cmpStrict(a.key, b.key) }) {
		return append(dst, '}'), nil
	}
	// Stable, so that of a repeated key the last comes last and is kept.
	slices.SortStableFunc(ms, func(a, b canonMember) int { return strings.Compare(a.key, b.key) })
	c.tmp = append(c.tmp[:0], dst[open+1:]...)
	base := open + 1
	dst = dst[:base]
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].key == m.key {
			continue
		}
		if len(dst) > base {
			dst = append(dst, ',')
		}
		dst = append(dst, c.tmp[m.start-base:m.end-base]...)
	}
	return append(dst, '}'), nil
}

// cmpStrict orders keys so that a repeated key counts as out of order.
func cmpStrict(a, b string) int {
	if a == b {
		return -1
	}
	return strings.Compare(a, b)
}

// canonText decodes a JSON string as encoding/json does (invalid UTF-8
// becomes U+FFFD; jsontext reports it, and the replacement is the point).
func canonText(quoted []byte) string {
	b, _ := jsontext.AppendUnquote(nil, quoted)
	return string(b)
}

// plainASCII reports whether a string's bytes between its quotes are
// printable ASCII without escapes: strconv.Quote writes such a string back
// unchanged, so it is copied as it came (most strings of a webhook).
func plainASCII(quoted []byte) bool {
	for _, b := range quoted[1 : len(quoted)-1] {
		if b < 0x20 || b >= 0x7f || b == '\\' || b == '"' {
			return false
		}
	}
	return true
}
