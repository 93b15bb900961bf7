package catalog

import (
	"encoding/json"
	"errors"
	"runtime"
	"sync"
)

// A big message is parsed on every core: parsing was the one sequential
// step left of decoding a 1 MiB message (docs/benchmarks.md). The root
// object is parsed as usual except for its "events" array, which a fast
// structural scan (skipValue: no validation, no nodes) crosses while
// choosing where to cut it into one piece per core; each piece is then
// parsed, fully validated, into its own tree. The pieces cover exactly the
// bytes between the brackets, so the message is valid JSON if and only if
// the root parse and every piece parse succeed. On any failure the
// caller parses sequentially, which also words the error as before.

// splitParseMin is the body size from which ParseMessage parses in pieces.
const splitParseMin = 128 << 10

// splitEvents is what the root parse learns about the events array.
type splitEvents struct {
	pieces int // wanted
	node   int32
	// cuts are the offsets of the commas the array is cut at, then the
	// offset of its closing bracket; start is just after its '['.
	start int
	cuts  []int
	empty bool
}

var errSplit = errors.New("events array not splittable")

// splitArray records the events array at p.pos as a leaf node and chooses
// its cuts.
func (p *parser) splitArray() (int32, error) {
	sp := p.split
	s := p.pos
	self := p.add(node{kind: kindArray, start: int32(s), first: -1, next: -1})
	cuts, end, ok := cutArray(p.src, s, sp.pieces, true)
	if !ok {
		return -1, errSplit
	}
	sp.start = s + 1
	sp.cuts = append(cuts, end)
	sp.empty = len(cuts) == 0 && skipWS(p.src, s+1) == end
	p.pos = end + 1
	p.close(self)
	sp.node = self
	return self, nil
}

// cutArray chooses up to pieces-1 commas that cut the array starting at
// src[s] == '[' into runs of elements of about equal length (measured
// against the rest of src, which a message's events array nearly fills).
// With toEnd it crosses the whole array and returns the offset of its
// closing bracket; else it stops at the last cut. ok is false when the
// scan finds no valid structure (the input is then parsed sequentially,
// which reports the error).
func cutArray(src string, s, pieces int, toEnd bool) (cuts []int, end int, ok bool) {
	i := skipWS(src, s+1)
	if i < len(src) && src[i] == ']' {
		return nil, i, true
	}
	step := (len(src) - s) / pieces
	next := s + step
	for {
		if i = skipValue(src, i); i < 0 {
			return nil, 0, false
		}
		i = skipWS(src, i)
		if i >= len(src) {
			return nil, 0, false
		}
		switch src[i] {
		case ',':
			if i >= next && len(cuts) < pieces-1 {
				cuts = append(cuts, i)
				next = i + step
				if !toEnd && len(cuts) == pieces-1 {
					return cuts, 0, true
				}
			}
			i = skipWS(src, i+1)
		case ']':
			return cuts, i, true
		default:
			return nil, 0, false
		}
	}
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the value starting at s[i], trusting s to
// be JSON (the piece parsers check it), or -1 when it visibly is not.
func skipValue(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch c := s[i]; c {
		case '"':
			if i = skipString(s, i+1); i < 0 || depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				if depth < 0 {
					return -1
				}
				return i + 1
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return -1
			}
		default:
			if depth == 0 {
				// A number or literal on its own.
				for i < len(s) && !isDelim(s[i]) {
					i++
				}
				return i
			}
		}
		i++
	}
	return -1
}

func isDelim(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':'
}

// skipString returns the offset after the closing quote of the string
// whose content starts at s[i], eight bytes at a time.
func skipString(s string, i int) int {
	for {
		for i+8 <= len(s) {
			v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if hasByte(v, '"')|hasByte(v, '\\') != 0 {
				break
			}
			i += 8
		}
		for i < len(s) && s[i] != '"' && s[i] != '\\' {
			i++
		}
		if i >= len(s) {
			return -1
		}
		if s[i] == '"' {
			return i + 1
		}
		i += 2
	}
}

// eventRef is one event: its tree (the message's, or its piece's) and node.
type eventRef struct {
	t    *tree
	root int32
}

// parseSplit parses a big message in pieces; ok is false when the caller
// must parse it sequentially (invalid JSON, no plain "events" key at the
// root, or an events array the scan could not cross).
func parseSplit(body []byte, src string, pieces int) (*ParsedMessage, bool) {
	sp := &splitEvents{pieces: pieces, node: -1}
	p := parser{src: src, nodes: make([]node, 0, 64), record: true, split: sp}
	if _, err := p.document(); err != nil {
		return nil, false
	}
	t := &tree{src: src, nodes: p.nodes}
	if t.kindOf(0) != kindObject || sp.node < 0 || t.get(0, "events") != sp.node {
		// The events array the catalogue reads is another member (a
		// repeated or escaped key): rare enough for the slow path.
		return nil, false
	}
	pm := &ParsedMessage{HookUUID: t.text(t.get(t.get(0, "hook"), "uuid"))}
	if sp.empty {
		return pm, true
	}
	type piece struct {
		t     *tree
		roots []int32
		ok    bool
	}
	out := make([]piece, len(sp.cuts))
	var wg sync.WaitGroup
	for k := range sp.cuts {
		start := sp.start
		if k > 0 {
			start = sp.cuts[k-1] + 1
		}
		end := sp.cuts[k]
		parse := func() { out[k].t, out[k].roots, out[k].ok = parsePiece(src, start, end) }
		if k == len(sp.cuts)-1 {
			parse()
			continue
		}
		wg.Go(parse)
	}
	wg.Wait()
	n := 0
	for _, pc := range out {
		if !pc.ok {
			return nil, false
		}
		n += len(pc.roots)
	}
	pm.refs = make([]eventRef, 0, n)
	pm.Raw = make([]json.RawMessage, 0, n)
	for _, pc := range out {
		for _, r := range pc.roots {
			pm.refs = append(pm.refs, eventRef{t: pc.t, root: r})
			pm.Raw = append(pm.Raw, rawSpan(body, &pc.t.nodes[r]))
		}
	}
	return pm, true
}

// parsePiece parses the elements of the events array in src[start:end]
// (comma-separated, white space around them allowed, at least one) into
// their own tree, at the depth they have in the message.
func parsePiece(src string, start, end int) (*tree, []int32, bool) {
	p := parser{src: src, pos: start, nodes: arena((end-start)/24 + 8), record: true}
	var roots []int32
	for {
		p.ws()
		r, err := p.value(2)
		if err != nil {
			return nil, nil, false
		}
		roots = append(roots, r)
		p.ws()
		switch {
		case p.pos == end:
			return &tree{src: src, nodes: p.nodes}, roots, true
		case p.pos < end && p.src[p.pos] == ',':
			p.pos++
		default:
			return nil, nil, false
		}
	}
}

// splitPieces is how many pieces a big message is parsed in.
func splitPieces() int { return min(runtime.GOMAXPROCS(0), 8) }
