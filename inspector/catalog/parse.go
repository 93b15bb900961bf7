package catalog

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The catalogue parses events with its own small JSON parser instead of
// encoding/json: a checked event must be walked generically (unknown
// fields, wrong types, nulls) and also filled into typed structs, and doing
// both with encoding/json means two reflection-driven passes, which on a
// 1 MiB delivery costs several times the whole budget. One pass builds a
// flat tree of spans into the input; checks, typed payloads and field lists
// all read that tree.

// kind is a JSON value kind.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

func (k kind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "a boolean"
	case kindNumber:
		return "a number"
	case kindString:
		return "a string"
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	}
	return "unknown"
}

// node is one JSON value. Children of objects and arrays are linked through
// first/next indexes into the tree's node slice, so a whole event is one
// allocation (plus growth).
type node struct {
	kind kind
	// esc marks a string (value or key) holding backslash escapes.
	esc, keyEsc bool
	// start/end span the value in the input; for strings, the bytes
	// between the quotes.
	start, end int32
	// keyStart/keyEnd span an object member's key (between the quotes).
	keyStart, keyEnd int32
	first, next      int32
	// after is the index of the first node past this value's subtree, so a
	// subtree is the index range [i, after).
	after int32
}

// tree is a parsed JSON document. The source is a string so that every
// unescaped string value can be handed out as a substring without copying:
// one allocation per event instead of one per field.
type tree struct {
	src   string
	nodes []node
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 256

// syntaxError is a JSON syntax error at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte offset %d", e.msg, e.off) }

type parser struct {
	src    string
	pos    int
	nodes  []node
	record bool
	// split, when set, makes the root object's "events" array a leaf
	// whose elements are parsed later in pieces (parseSplit).
	split *splitEvents
}

// parse parses src as a single JSON value (whitespace around it allowed).
func parse(src string, nodes []node) (*tree, error) {
	if nodes == nil {
		// Generated batches measure one node per 30 bytes; one per 24 leaves
		// headroom so the arena is rarely grown.
		nodes = make([]node, 0, len(src)/24+8)
	}
	p := parser{src: src, nodes: nodes[:0], record: true}
	if _, err := p.document(); err != nil {
		return nil, err
	}
	return &tree{src: src, nodes: p.nodes}, nil
}

// valid reports whether src is a single well-formed JSON value, without
// building a tree.
func valid(src []byte) bool {
	if len(src) == 0 {
		return false
	}
	// The string view is only read during this call and never retained.
	p := parser{src: unsafe.String(&src[0], len(src))}
	_, err := p.document()
	return err == nil
}

func (p *parser) document() (int32, error) {
	p.ws()
	root, err := p.value(0)
	if err != nil {
		return -1, err
	}
	p.ws()
	if p.pos != len(p.src) {
		return -1, p.fail("unexpected data after the JSON value")
	}
	return root, nil
}

func (p *parser) fail(msg string) error { return &syntaxError{off: p.pos, msg: msg} }

func (p *parser) ws() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) add(n node) int32 {
	if !p.record {
		return -1
	}
	n.after = int32(len(p.nodes) + 1)
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1)
}

func (p *parser) value(depth int) (int32, error) {
	if depth > maxDepth {
		return -1, p.fail(fmt.Sprintf("JSON nested deeper than %d levels", maxDepth))
	}
	if p.pos >= len(p.src) {
		return -1, p.fail("unexpected end of JSON")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, e, esc, err := p.str()
		if err != nil {
			return -1, err
		}
		return p.add(node{kind: kindString, start: int32(s), end: int32(e), esc: esc, first: -1, next: -1}), nil
	case c == 't':
		return p.lit("true", kindBool)
	case c == 'f':
		return p.lit("false", kindBool)
	case c == 'n':
		return p.lit("null", kindNull)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return -1, p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *parser) lit(word string, k kind) (int32, error) {
	if len(p.src)-p.pos < len(word) || p.src[p.pos:p.pos+len(word)] != word {
		return -1, p.fail("invalid literal")
	}
	s := p.pos
	p.pos += len(word)
	return p.add(node{kind: k, start: int32(s), end: int32(p.pos), first: -1, next: -1}), nil
}

func (p *parser) digits() int {
	s := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - s
}

func (p *parser) number() (int32, error) {
	s := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '0' {
		p.pos++
	} else if p.digits() == 0 {
		return -1, p.fail("invalid number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return -1, p.fail("invalid number: no digits after the decimal point")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return -1, p.fail("invalid number: no digits in the exponent")
		}
	}
	return p.add(node{kind: kindNumber, start: int32(s), end: int32(p.pos), first: -1, next: -1}), nil
}

// plain marks the bytes a string can hold without a closer look: not a
// quote, not a backslash, not a control character. Read-only.
var plain = func() (t [256]bool) {
	for i := range t {
		t[i] = i >= 0x20 && i != '"' && i != '\\'
	}
	return t
}()

// str scans a string starting at its opening quote and returns the span
// between the quotes.
func (p *parser) str() (start, end int, esc bool, err error) {
	p.pos++ // opening quote
	start = p.pos
	src := p.src
	i := p.pos
	for {
		// Eight bytes at a time while none of them needs a closer look:
		// most of a webhook body is plain string content (ids, names, URLs).
		for i+8 <= len(src) {
			v := uint64(src[i]) | uint64(src[i+1])<<8 | uint64(src[i+2])<<16 | uint64(src[i+3])<<24 |
				uint64(src[i+4])<<32 | uint64(src[i+5])<<40 | uint64(src[i+6])<<48 | uint64(src[i+7])<<56
			if hasLess(v, 0x20)|hasByte(v, '"')|hasByte(v, '\\') != 0 {
				break
			}
			i += 8
		}
		for i < len(src) && plain[src[i]] {
			i++
		}
		if i >= len(src) {
			p.pos = i
			return 0, 0, false, p.fail("unterminated string")
		}
		switch c := src[i]; {
		case c == '"':
			p.pos = i + 1
			return start, i, esc, nil
		case c == '\\':
			esc = true
			i++
			if i >= len(src) {
				p.pos = i
				return 0, 0, false, p.fail("unterminated string")
			}
			switch src[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				if len(src)-i < 4 || !isHex(src[i]) || !isHex(src[i+1]) || !isHex(src[i+2]) || !isHex(src[i+3]) {
					p.pos = i
					return 0, 0, false, p.fail("invalid \\u escape")
				}
				i += 4
			default:
				p.pos = i
				return 0, 0, false, p.fail("invalid escape in string")
			}
		default:
			p.pos = i
			return 0, 0, false, p.fail("control character in string")
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasLess is non-zero when some byte of v is below n (n <= 128): the
// classic SWAR test, exact for this use.
func hasLess(v uint64, n byte) uint64 { return (v - lsb*uint64(n)) & ^v & msb }

// hasByte is non-zero when some byte of v equals b.
func hasByte(v uint64, b byte) uint64 { return hasLess(v^(lsb*uint64(b)), 1) }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (p *parser) object(depth int) (int32, error) {
	s := p.pos
	p.pos++
	self := p.add(node{kind: kindObject, start: int32(s), first: -1, next: -1})
	prev := int32(-1)
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.close(self)
		return self, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return -1, p.fail("expected a string key in object")
		}
		ks, ke, kesc, err := p.str()
		if err != nil {
			return -1, err
		}
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return -1, p.fail("expected ':' after object key")
		}
		p.pos++
		p.ws()
		var child int32
		if p.split != nil && p.split.node < 0 && depth == 0 && !kesc && p.src[ks:ke] == "events" && p.pos < len(p.src) && p.src[p.pos] == '[' {
			child, err = p.splitArray()
		} else {
			child, err = p.value(depth + 1)
		}
		if err != nil {
			return -1, err
		}
		if p.record {
			c := &p.nodes[child]
			c.keyStart, c.keyEnd, c.keyEsc = int32(ks), int32(ke), kesc
			p.link(self, prev, child)
			prev = child
		}
		p.ws()
		if p.pos >= len(p.src) {
			return -1, p.fail("unterminated object")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.close(self)
			return self, nil
		default:
			return -1, p.fail("expected ',' or '}' in object")
		}
	}
}

func (p *parser) array(depth int) (int32, error) {
	s := p.pos
	p.pos++
	self := p.add(node{kind: kindArray, start: int32(s), first: -1, next: -1})
	prev := int32(-1)
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.close(self)
		return self, nil
	}
	for {
		p.ws()
		child, err := p.value(depth + 1)
		if err != nil {
			return -1, err
		}
		if p.record {
			p.link(self, prev, child)
			prev = child
		}
		p.ws()
		if p.pos >= len(p.src) {
			return -1, p.fail("unterminated array")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.close(self)
			return self, nil
		default:
			return -1, p.fail("expected ',' or ']' in array")
		}
	}
}

func (p *parser) link(parent, prev, child int32) {
	if prev < 0 {
		p.nodes[parent].first = child
	} else {
		p.nodes[prev].next = child
	}
}

func (p *parser) close(self int32) {
	if p.record {
		p.nodes[self].end = int32(p.pos)
		p.nodes[self].after = int32(len(p.nodes))
	}
}

// --- reading the tree ---

// raw returns the value's text as it appears in the input (strings
// without their quotes).
func (t *tree) raw(i int32) string {
	n := &t.nodes[i]
	return t.src[n.start:n.end]
}

// json returns the value's JSON text (strings with their quotes).
func (t *tree) json(i int32) string {
	n := &t.nodes[i]
	if n.kind == kindString {
		return t.src[n.start-1 : n.end+1]
	}
	return t.src[n.start:n.end]
}

// text returns a string value decoded, or "" for other kinds.
func (t *tree) text(i int32) string {
	if i < 0 || t.nodes[i].kind != kindString {
		return ""
	}
	n := &t.nodes[i]
	if !n.esc {
		return t.src[n.start:n.end]
	}
	return unescape(t.src[n.start-1 : n.end+1])
}

// key returns an object member's key decoded.
func (t *tree) key(i int32) string {
	n := &t.nodes[i]
	if !n.keyEsc {
		return t.src[n.keyStart:n.keyEnd]
	}
	return unescape(t.src[n.keyStart-1 : n.keyEnd+1])
}

// get returns the member of object i named k, or -1.
func (t *tree) get(i int32, k string) int32 {
	if i < 0 || t.nodes[i].kind != kindObject {
		return -1
	}
	for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
		n := &t.nodes[c]
		if n.keyEsc {
			if t.key(c) == k {
				return c
			}
		} else if t.src[n.keyStart:n.keyEnd] == k {
			return c
		}
	}
	return -1
}

// kindOf returns the kind of node i; callers check i >= 0 first.
func (t *tree) kindOf(i int32) kind { return t.nodes[i].kind }

// num returns a number value, or ok=false for other kinds.
func (t *tree) num(i int32) (float64, bool) {
	if i < 0 || t.nodes[i].kind != kindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(t.raw(i), 64)
	return f, err == nil
}

// unescape decodes a quoted JSON string with escapes, which the parser
// has already validated. Lone surrogates become U+FFFD, as in encoding/json.
func unescape(quoted string) string { return unescapeContent(quoted[1 : len(quoted)-1]) }

// unescapeContent is unescape for the bytes between the quotes.
func unescapeContent(in string) string {
	b := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		switch in[i] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(in[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
					r2 = hex4(in[i+3 : i+7])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
		default: // '"', '\\', '/'
			b = append(b, in[i])
		}
	}
	return string(b)
}

func hex4(s string) rune {
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
