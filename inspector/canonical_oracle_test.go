package inspector

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
)

// The oracle: the single-pass canonicaliser CanonicalHash used until the
// canonical form went back to its encoding/json definition (docs/catalog.md).
// Hashes stored by those versions came from it (or, where it deferred, from
// the definition itself), so FuzzCanonicalHash checks that CanonicalHash
// still gives the same hash for every input.

// oracleCanonicalHash is the CanonicalHash of the versions with the
// single-pass canonicaliser.
func oracleCanonicalHash(raw json.RawMessage) string {
	if out, ok := oracleAppendCanonical(make([]byte, 0, len(raw)), raw); ok {
		sum := sha256.Sum256(out)
		return hex.EncodeToString(sum[:])
	}
	return CanonicalHash(raw)
}

// oracleAppendCanonical appends the canonical form of the JSON value in src
// to dst in one pass, without building a tree. It reports false for
// anything it did not handle exactly like the definition (malformed JSON,
// duplicate keys, data after the value); the definition decided those.
func oracleAppendCanonical(dst, src []byte) ([]byte, bool) {
	c := oracleCanon{src: src}
	i := oracleSkipWS(src, 0)
	dst, i, ok := c.value(dst, i, 0)
	if !ok || oracleSkipWS(src, i) != len(src) {
		return nil, false
	}
	return dst, true
}

// oracleMaxDepth matches encoding/json's nesting limit; deeper input took
// the definition's path, which reports it as not JSON.
const oracleMaxDepth = 10000

type oracleMember struct {
	key        []byte
	start, end int // the member's `"key":value` bytes in dst
}

type oracleCanon struct {
	src []byte
	tmp []byte
	// members is a stack shared by all objects being written: each object
	// uses the tail from its own base index.
	members []oracleMember
}

func oracleSkipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (c *oracleCanon) value(dst []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(c.src) || depth > oracleMaxDepth {
		return dst, i, false
	}
	switch ch := c.src[i]; {
	case ch == '{':
		return c.object(dst, i, depth)
	case ch == '[':
		return c.array(dst, i, depth)
	case ch == '"':
		s, simple, j, ok := c.str(i)
		if !ok {
			return dst, i, false
		}
		return oracleAppendQuoted(dst, s, simple), j, true
	case ch == 't':
		return oracleLiteral(dst, c.src, i, "true")
	case ch == 'f':
		return oracleLiteral(dst, c.src, i, "false")
	case ch == 'n':
		return oracleLiteral(dst, c.src, i, "null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		j, ok := oracleScanNumber(c.src, i)
		if !ok {
			return dst, i, false
		}
		return append(dst, c.src[i:j]...), j, true
	}
	return dst, i, false
}

func oracleLiteral(dst, src []byte, i int, lit string) ([]byte, int, bool) {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return dst, i, false
	}
	return append(dst, lit...), i + len(lit), true
}

// scanNumber checks the JSON number grammar and returns its end.
func oracleScanNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i, i > s
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// str reads the string starting at src[i] == '"'. Plain printable ASCII
// (no escapes) comes back as a slice of src with simple set: strconv.Quote
// would write it unchanged. Anything else is decoded by encoding/json so
// the result (U+FFFD for bad UTF-8 or lone surrogates) is exactly the
// reference's.
func (c *oracleCanon) str(i int) (s []byte, simple bool, next int, ok bool) {
	b := c.src
	j := i + 1
	simple = true
	for j < len(b) {
		ch := b[j]
		if ch == '"' {
			break
		}
		if ch < 0x20 {
			return nil, false, i, false
		}
		if ch == '\\' {
			simple = false
			j += 2
			continue
		}
		if ch >= 0x7f {
			simple = false
		}
		j++
	}
	if j >= len(b) {
		return nil, false, i, false
	}
	if simple {
		return b[i+1 : j], true, j + 1, true
	}
	var d string
	if err := json.Unmarshal(b[i:j+1], &d); err != nil {
		return nil, false, i, false
	}
	return []byte(d), false, j + 1, true
}

// appendQuoted writes s as strconv.Quote would.
func oracleAppendQuoted(dst, s []byte, simple bool) []byte {
	if simple {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	return strconv.AppendQuote(dst, string(s))
}

func (c *oracleCanon) array(dst []byte, i, depth int) ([]byte, int, bool) {
	dst = append(dst, '[')
	i = oracleSkipWS(c.src, i+1)
	if i < len(c.src) && c.src[i] == ']' {
		return append(dst, ']'), i + 1, true
	}
	for n := 0; ; n++ {
		if n > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, i, ok = c.value(dst, i, depth+1); !ok {
			return dst, i, false
		}
		i = oracleSkipWS(c.src, i)
		if i >= len(c.src) {
			return dst, i, false
		}
		switch c.src[i] {
		case ',':
			i = oracleSkipWS(c.src, i+1)
		case ']':
			return append(dst, ']'), i + 1, true
		default:
			return dst, i, false
		}
	}
}

func (c *oracleCanon) object(dst []byte, i, depth int) ([]byte, int, bool) {
	objStart := len(dst)
	dst = append(dst, '{')
	i = oracleSkipWS(c.src, i+1)
	if i < len(c.src) && c.src[i] == '}' {
		return append(dst, '}'), i + 1, true
	}
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	sorted := true
	for {
		if i >= len(c.src) || c.src[i] != '"' {
			return dst, i, false
		}
		key, simple, j, ok := c.str(i)
		if !ok {
			return dst, i, false
		}
		if len(c.members) > base {
			if bytes.Compare(key, c.members[len(c.members)-1].key) <= 0 {
				sorted = false
			}
			dst = append(dst, ',')
		}
		start := len(dst)
		dst = oracleAppendQuoted(dst, key, simple)
		dst = append(dst, ':')
		i = oracleSkipWS(c.src, j)
		if i >= len(c.src) || c.src[i] != ':' {
			return dst, i, false
		}
		i = oracleSkipWS(c.src, i+1)
		if dst, i, ok = c.value(dst, i, depth+1); !ok {
			return dst, i, false
		}
		c.members = append(c.members, oracleMember{key: key, start: start, end: len(dst)})
		i = oracleSkipWS(c.src, i)
		if i >= len(c.src) {
			return dst, i, false
		}
		if c.src[i] == ',' {
			i = oracleSkipWS(c.src, i+1)
			continue
		}
		if c.src[i] != '}' {
			return dst, i, false
		}
		i++
		break
	}
	if !sorted {
		ms := c.members[base:]
		slices.SortStableFunc(ms, func(a, b oracleMember) int { return bytes.Compare(a.key, b.key) })
		for k := 1; k < len(ms); k++ {
			if bytes.Equal(ms[k].key, ms[k-1].key) {
				// encoding/json keeps the last duplicate; leave that rule
				// to the reference path.
				return dst, i, false
			}
		}
		c.tmp = append(c.tmp[:0], dst[objStart+1:]...)
		off := objStart + 1
		dst = dst[:off]
		for k, m := range ms {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, c.tmp[m.start-off:m.end-off]...)
		}
	}
	return append(dst, '}'), i, true
}
