package catalog

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// AppendCanonical appends the canonical JSON of raw, a single JSON value,
// to dst: object members sorted by their decoded keys in byte order, no
// white space, every string (keys too) written as strconv.Quote writes its
// decoded text (encoding/json's decoding: invalid UTF-8 and lone
// surrogates become U+FFFD), numbers and literals as written. It is the
// form inspector.CanonicalHash hashes, written from the catalogue's own
// parse.
//
// ok is false for input the catalogue's parser rejects (not JSON, or
// nested deeper than it allows) and for an object with a repeated key:
// encoding/json keeps the last one, a rule left to the caller's reference
// path so that it is defined in one place only.
func AppendCanonical(dst, raw []byte) (out []byte, ok bool) {
	if len(raw) == 0 {
		return dst, false
	}
	// The string view is only read during this call; nothing returned
	// points into it (dst gets copies).
	t, err := parse(unsafe.String(&raw[0], len(raw)), nil)
	if err != nil {
		return dst, false
	}
	var c canonWriter
	return c.value(t, dst, 0)
}

// canonMember is one object member being sorted. It holds no pointers,
// so filling the shared stack costs no GC write barriers: the key is read
// back from the tree, decoded only when it has escapes or non-ASCII bytes.
type canonMember struct {
	node  int32
	plain bool // the key's bytes are its decoded text
}

// canonWriter writes canonical JSON from a parsed tree. Its member stack is
// shared by all objects being written (each uses the tail from its own
// base), so one writer reused across events allocates nothing once warm.
type canonWriter struct {
	members []canonMember
}

func (c *canonWriter) value(t *tree, dst []byte, i int32) ([]byte, bool) {
	n := &t.nodes[i]
	switch n.kind {
	case kindString:
		return appendCanonString(dst, t.src[n.start:n.end], n.esc), true
	case kindObject:
		base := len(c.members)
		dst, ok := c.object(t, dst, i, base)
		c.members = c.members[:base]
		return dst, ok
	case kindArray:
		dst = append(dst, '[')
		for m, k := n.first, 0; m >= 0; m, k = t.nodes[m].next, k+1 {
			if k > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = c.value(t, dst, m); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	// Numbers and literals: the parser checked the grammar, and the
	// reference keeps numbers as written (json.Number).
	return append(dst, t.src[n.start:n.end]...), true
}

// key is member m's decoded key.
func (c *canonWriter) key(t *tree, m canonMember) string {
	n := &t.nodes[m.node]
	if m.plain {
		return t.src[n.keyStart:n.keyEnd]
	}
	return canonText(t.src[n.keyStart:n.keyEnd], n.keyEsc)
}

func (c *canonWriter) object(t *tree, dst []byte, i int32, base int) ([]byte, bool) {
	sorted := true
	prev := ""
	for m := t.nodes[i].first; m >= 0; m = t.nodes[m].next {
		n := &t.nodes[m]
		raw := t.src[n.keyStart:n.keyEnd]
		cm := canonMember{node: m, plain: !n.keyEsc && printableASCII(raw)}
		k := raw
		if !cm.plain {
			k = canonText(raw, n.keyEsc)
		}
		if len(c.members) > base && k <= prev {
			sorted = false
		}
		prev = k
		c.members = append(c.members, cm)
	}
	// Later appends by nested objects go past this tail, so ms stays
	// valid even if the stack is reallocated.
	ms := c.members[base:]
	if !sorted {
		slices.SortFunc(ms, func(a, b canonMember) int { return strings.Compare(c.key(t, a), c.key(t, b)) })
		for k := 1; k < len(ms); k++ {
			if c.key(t, ms[k]) == c.key(t, ms[k-1]) {
				return dst, false
			}
		}
	}
	dst = append(dst, '{')
	for k, m := range ms {
		if k > 0 {
			dst = append(dst, ',')
		}
		n := &t.nodes[m.node]
		if m.plain {
			dst = append(dst, '"')
			dst = append(dst, t.src[n.keyStart:n.keyEnd]...)
			dst = append(dst, '"')
		} else {
			dst = appendCanonString(dst, t.src[n.keyStart:n.keyEnd], n.keyEsc)
		}
		dst = append(dst, ':')
		var ok bool
		if dst, ok = c.value(t, dst, m.node); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendCanonString writes the string whose bytes between the quotes are
// s. Printable ASCII without escapes (nearly every string of a webhook) is
// what strconv.Quote writes unchanged, so it is copied as is.
func appendCanonString(dst []byte, s string, esc bool) []byte {
	if !esc && printableASCII(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	return strconv.AppendQuote(dst, canonText(s, esc))
}

// printableASCII reports whether s (string content the parser accepted, so
// without control characters, quotes or backslashes when unescaped) has
// only bytes below 0x7f, eight at a time.
func printableASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte >= 0x80 has its top bit set; 0x7f gets it from the +1.
		// A carry out of a byte only happens from 0xff, already caught.
		if (v|(v+lsb))&msb != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// canonText decodes string content s as encoding/json does: escapes
// resolved (lone surrogates become U+FFFD, which unescape already does)
// and every byte that is not part of valid UTF-8 replaced by U+FFFD.
func canonText(s string, esc bool) string {
	if esc {
		s = unescapeContent(s)
	}
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}
