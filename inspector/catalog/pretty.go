package catalog

import (
	"sync"
	"unsafe"
)

// prettyWidth is tidwall/pretty's default line width: an array of
// scalars that fits in what is left of the line is written on one line.
const prettyWidth = 80

// indentSpaces holds the indentation of the deepest value the parser
// accepts, so indenting is one copy. Read-only.
var indentSpaces = func() string {
	b := make([]byte, 2*(maxDepth+2))
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}()

// prettyWriter indents JSON while checking it, in one pass. It writes
// exactly the bytes tidwall/pretty.Pretty writes (so what the UI shows and
// what users copied before stays the same), but validates with the
// catalogue's parser as it goes instead of in a separate pass, copies
// strings eight bytes at a time and indents with one copy: on a 1 MiB
// message it is several times faster (docs/benchmarks.md).
//
// The layout rules are tidwall's: members and elements one per line,
// indented two spaces per level, "key": value; an array holding no object
// goes on one line as [a, b] when that fits in the 80 columns left after
// the last newline; a newline, the output ends with one. Its column
// arithmetic has a quirk kept on purpose: after the first element of a
// multi-line array, the newline itself is not counted.
//
// An array of at least splitMin bytes (a big message's events) is cut
// into runs of elements written on every core, as ParseMessage does, and
// the runs' output joined: each run is validated to end exactly at its
// cut, so validity is still exact.
type prettyWriter struct {
	p   parser // record off: validation only
	out []byte
	// nl is where tidwall's nl would point: the last newline written, or
	// one past it after an array's separator.
	nl int
	// pieces is how many runs a big array is cut into (1: never).
	pieces, splitMin int
}

// prettyAppend appends src indented to dst; ok is false when src is not
// a single JSON value as the catalogue's parser defines it.
func prettyAppend(dst, src []byte) (out []byte, ok bool) {
	return prettyAppendSplit(dst, src, prettyPieces(splitPieces()), splitParseMin)
}

// prettySplitMinCores is the fewest cores on which a big array is
// pretty-printed in runs. On two cores one run measured faster: the
// 1 MiB message in 2.9-3.3 ms and 3.8-4.3 CPU-ms, against 3.9-4.9 ms and
// 6.1-7.6 CPU-ms in two runs (five interleaved rounds each,
// docs/benchmarks.md), because the scan for the cut and the copy of the
// second run's output are sequential work a second core does not repay.
const prettySplitMinCores = 4

// prettyPieces is how many runs Pretty cuts a big array into on cores.
func prettyPieces(cores int) int {
	if cores < prettySplitMinCores {
		return 1
	}
	return cores
}

// prettyAppendSplit is prettyAppend with the cutting of big arrays chosen
// by the caller (tests cut small inputs).
func prettyAppendSplit(dst, src []byte, pieces, splitMin int) (out []byte, ok bool) {
	if len(src) == 0 {
		return dst, false
	}
	// The view is only read during the call; dst receives copies.
	w := prettyWriter{p: parser{src: unsafe.String(&src[0], len(src))}, out: dst, nl: len(dst), pieces: pieces, splitMin: splitMin}
	w.p.ws()
	if !w.value(0, 0) {
		return dst, false
	}
	w.p.ws()
	if w.p.pos != len(w.p.src) {
		return dst, false
	}
	return append(w.out, '\n'), true
}

func (w *prettyWriter) indent(tabs int) {
	if 2*tabs <= len(indentSpaces) {
		w.out = append(w.out, indentSpaces[:2*tabs]...)
		return
	}
	for range tabs {
		w.out = append(w.out, ' ', ' ')
	}
}

// newline starts a line, replacing a trailing space as tidwall does.
func (w *prettyWriter) newline() {
	w.nl = len(w.out)
	if w.out[w.nl-1] == ' ' {
		w.out[w.nl-1] = '\n'
	} else {
		w.out = append(w.out, '\n')
	}
}

// scalar copies a string, number or literal as written.
func (w *prettyWriter) scalar() bool {
	p := &w.p
	s := p.pos
	switch c := p.src[p.pos]; {
	case c == '"':
		if _, _, _, err := p.str(); err != nil {
			return false
		}
	case c == 't':
		if _, err := p.lit("true", kindBool); err != nil {
			return false
		}
	case c == 'f':
		if _, err := p.lit("false", kindBool); err != nil {
			return false
		}
	case c == 'n':
		if _, err := p.lit("null", kindNull); err != nil {
			return false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if _, err := p.number(); err != nil {
			return false
		}
	default:
		return false
	}
	w.out = append(w.out, p.src[s:p.pos]...)
	return true
}

// value writes the value at the parser's position (white space skipped)
// at nesting depth, indented tabs levels.
func (w *prettyWriter) value(depth, tabs int) bool {
	p := &w.p
	if depth > maxDepth || p.pos >= len(p.src) {
		return false
	}
	switch p.src[p.pos] {
	case '{':
		return w.object(depth, tabs)
	case '[':
		if max := prettyWidth - (len(w.out) - w.nl); max > 3 {
			pos, n := p.pos, len(w.out)
			fits, ok := w.inline(depth, n+max)
			if !ok {
				return false
			}
			if fits {
				return true
			}
			p.pos, w.out = pos, w.out[:n]
		}
		return w.array(depth, tabs)
	}
	return w.scalar()
}

// inline tries the one-line form of the array at the parser's position,
// which must end by offset limit of the output. fits is false when the
// array holds an object or is too long (the caller rewinds); ok is false
// only for invalid JSON.
func (w *prettyWriter) inline(depth, limit int) (fits, ok bool) {
	p := &w.p
	if depth > maxDepth {
		return false, false
	}
	p.pos++
	w.out = append(w.out, '[')
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		w.out = append(w.out, ']')
		return len(w.out) <= limit, true
	}
	for n := 0; ; n++ {
		p.ws()
		if n > 0 {
			w.out = append(w.out, ',', ' ')
		}
		if p.pos >= len(p.src) || depth+1 > maxDepth {
			return false, false
		}
		switch p.src[p.pos] {
		case '{':
			return false, true
		case '[':
			if fits, ok := w.inline(depth+1, limit); !fits || !ok {
				return fits, ok
			}
		default:
			if !w.scalar() {
				return false, false
			}
		}
		if len(w.out) > limit {
			return false, true
		}
		p.ws()
		if p.pos >= len(p.src) {
			return false, false
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			w.out = append(w.out, ']')
			return len(w.out) <= limit, true
		default:
			return false, false
		}
	}
}

func (w *prettyWriter) array(depth, tabs int) bool {
	p := &w.p
	if w.pieces > 1 && len(p.src)-p.pos >= w.splitMin {
		if ok, done := w.splitArray(depth, tabs); done {
			return ok
		}
	}
	p.pos++
	w.out = append(w.out, '[')
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		w.out = append(w.out, ']')
		return true
	}
	if !w.elements(depth, tabs, -1, false) {
		return false
	}
	w.close(tabs)
	return true
}

// close ends a multi-line array at its ']'.
func (w *prettyWriter) close(tabs int) {
	w.p.pos++
	w.newline()
	w.indent(tabs)
	w.out = append(w.out, ']')
}

// elements writes array elements, each on its own line, until the ']'
// (stop < 0; the parser is left on it) or until the element that ends
// right before offset stop. cont means the line of the first element was
// already started by someone else (a run written on another core).
func (w *prettyWriter) elements(depth, tabs, stop int, cont bool) bool {
	p := &w.p
	for n := 0; ; n++ {
		p.ws()
		if n > 0 {
			w.out = append(w.out, ',', ' ')
		}
		if n > 0 || !cont {
			w.newline()
		}
		w.indent(tabs + 1)
		if !w.value(depth+1, tabs+1) {
			return false
		}
		p.ws()
		switch {
		case p.pos == stop:
			return true
		case p.pos >= len(p.src) || (stop >= 0 && p.pos > stop):
			return false
		case p.src[p.pos] == ',':
			p.pos++
		case p.src[p.pos] == ']' && stop < 0:
			return true
		default:
			return false
		}
	}
}

// splitArray writes the big array at the parser's position in runs on
// every core. done is false when it would not cut the array (the caller
// writes it in one run).
func (w *prettyWriter) splitArray(depth, tabs int) (ok, done bool) {
	p := &w.p
	cuts, _, found := cutArray(p.src, p.pos, w.pieces, false)
	if !found || len(cuts) == 0 {
		return false, false
	}
	type run struct {
		out []byte
		end int
		ok  bool
	}
	runs := make([]run, len(cuts))
	var wg sync.WaitGroup
	for k, c := range cuts {
		stop := -1
		if k+1 < len(cuts) {
			stop = cuts[k+1]
		}
		size := len(p.src) / w.pieces
		wg.Go(func() {
			// tidwall's column count after an array separator starts at
			// the line's first byte, which is where this run's output
			// starts: nl 0.
			rw := prettyWriter{p: parser{src: p.src, pos: c + 1}, out: make([]byte, 0, 2*size+16), pieces: 1}
			runs[k].ok = rw.elements(depth, tabs, stop, true)
			runs[k].out, runs[k].end = rw.out, rw.p.pos
		})
	}
	p.pos++
	w.out = append(w.out, '[')
	pieces := w.pieces
	w.pieces = 1 // nested arrays are small: one run each
	ok = w.elements(depth, tabs, cuts[0], false)
	w.pieces = pieces
	wg.Wait()
	if !ok {
		return false, true
	}
	for _, r := range runs {
		if !r.ok {
			return false, true
		}
		w.out = append(w.out, ',', '\n')
		w.out = append(w.out, r.out...)
	}
	p.pos = runs[len(runs)-1].end
	w.close(tabs)
	return true, true
}

func (w *prettyWriter) object(depth, tabs int) bool {
	p := &w.p
	p.pos++
	w.out = append(w.out, '{')
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		w.out = append(w.out, '}')
		return true
	}
	for n := 0; ; n++ {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return false
		}
		if n > 0 {
			w.out = append(w.out, ',')
		}
		w.newline()
		w.indent(tabs + 1)
		if !w.scalar() {
			return false
		}
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return false
		}
		p.pos++
		w.out = append(w.out, ':', ' ')
		p.ws()
		if !w.value(depth+1, tabs+1) {
			return false
		}
		p.ws()
		if p.pos >= len(p.src) {
			return false
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			w.newline()
			w.indent(tabs)
			w.out = append(w.out, '}')
			return true
		default:
			return false
		}
	}
}
