package inspector

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/tidwall/pretty"
)

// JSONChange is one difference between two copies of a JSON value: at
// Path, Old became New. Old is empty where the path was added, New where it
// was removed. Values are compact JSON.
type JSONChange struct {
	// Path names the value: "payload.media.name", "tags[2]",
	// `headers["x-y"]`; "" is the whole value.
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
	// SameNumber marks two numbers of equal value written differently (1
	// and 1.0): copies are compared as written, as a consumer comparing
	// the raw text would, so this is a difference, said as what it is.
	SameNumber bool `json:"same_number,omitempty"`
}

// Added reports a path present only in the second copy.
func (c JSONChange) Added() bool { return c.Old == "" }

// Removed reports a path present only in the first copy.
func (c JSONChange) Removed() bool { return c.New == "" }

// String is the change in one line: `payload.media.name: "A" → "B"`,
// `payload.media.tags: added ["x"]`, `payload.x: removed 5`.
func (c JSONChange) String() string {
	path := c.Path
	if path == "" {
		path = "(the whole value)"
	}
	switch {
	case c.Added():
		return path + ": added " + c.New
	case c.Removed():
		return path + ": removed " + c.Old
	case c.SameNumber:
		return path + ": " + c.Old + " → " + c.New + " (the same number, written differently)"
	}
	return path + ": " + c.Old + " → " + c.New
}

// DiffJSON lists what changed from a to b, path by path, in the order of
// the (sorted) keys and of the array elements. Equality is CanonicalHash's:
// key order, white space and string escapes are not differences; numbers
// compare as written; of a repeated key the last counts. So DiffJSON is
// empty exactly when the two canonical hashes are equal, and a divergent
// copy always has at least one change. Input that is not JSON is compared
// byte for byte and shown as one change of the whole value.
//
// Array elements are aligned (an element inserted in front is one added
// path, not every later element changed). Paths of removed elements carry
// the first copy's index, all others the second copy's.
func DiffJSON(a, b []byte) []JSONChange {
	fa, okA := canonicalForm(a)
	fb, okB := canonicalForm(b)
	if bytes.Equal(fa, fb) {
		return nil
	}
	whole := []JSONChange{{Old: string(a), New: string(b)}}
	if !okA || !okB {
		return whole
	}
	na, errA := parseJNode(a)
	nb, errB := parseJNode(b)
	if errA != nil || errB != nil {
		return whole
	}
	var out []JSONChange
	diffNodes(&out, "", na, nb)
	if len(out) == 0 {
		return whole // never: the tree and the canonical form agree
	}
	return out
}

// UnifiedJSONDiff is the full line diff of two JSON values, each
// pretty-printed with sorted keys so that key order does not show as a
// change: every line of the value, those only in a marked "-", those only
// in b "+". Empty when the printed forms are equal.
func UnifiedJSONDiff(a, b []byte, nameA, nameB string) string {
	opts := &pretty.Options{Width: 80, Indent: "  ", SortKeys: true}
	pa, pb := a, b
	if json.Valid(a) {
		pa = pretty.PrettyOptions(a, opts)
	}
	if json.Valid(b) {
		pb = pretty.PrettyOptions(b, opts)
	}
	la, lb := difflib.SplitLines(string(pa)), difflib.SplitLines(string(pb))
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: la, B: lb, FromFile: nameA, ToFile: nameB, Context: max(len(la), len(lb)),
	})
	if err != nil {
		return "" // writes to a strings.Builder do not fail
	}
	return strings.TrimSuffix(s, "\n")
}

// jnode is a parsed JSON value in canonical terms.
type jnode struct {
	kind jsontext.Kind
	// text is a scalar's canonical text: a string's decoded value (invalid
	// UTF-8 as U+FFFD), a number or literal as written.
	text string
	// keys are an object's member names, sorted, each once (the last of a
	// repeated name wins); kids are their values, or an array's elements.
	keys []string
	kids []*jnode
	// sum identifies the canonical value, to align array elements.
	sum [sha256.Size]byte
}

func parseJNode(raw []byte) (*jnode, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return readJNode(dec)
}

func readJNode(dec *jsontext.Decoder) (*jnode, error) {
	n := &jnode{kind: dec.PeekKind()}
	h := sha256.New()
	h.Write([]byte{byte(n.kind)})
	switch n.kind {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		members := map[string]*jnode{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			key := canonText(name)
			v, err := readJNode(dec)
			if err != nil {
				return nil, err
			}
			members[key] = v
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n.keys = make([]string, 0, len(members))
		for k := range members {
			n.keys = append(n.keys, k)
		}
		slices.Sort(n.keys)
		for _, k := range n.keys {
			v := members[k]
			n.kids = append(n.kids, v)
			h.Write(strconv.AppendInt(nil, int64(len(k)), 10))
			h.Write([]byte(":" + k))
			h.Write(v.sum[:])
		}
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		for dec.PeekKind() != ']' {
			v, err := readJNode(dec)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, v)
			h.Write(v.sum[:])
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
	default:
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		n.text = string(v)
		if n.kind == '"' {
			n.text = canonText(v)
		}
		h.Write([]byte(n.text))
	}
	h.Sum(n.sum[:0])
	return n, nil
}

// render writes n as compact JSON.
func (n *jnode) render(dst []byte) []byte {
	switch n.kind {
	case '{':
		dst = append(dst, '{')
		for i, k := range n.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, _ = jsontext.AppendQuote(dst, k)
			dst = append(dst, ':')
			dst = n.kids[i].render(dst)
		}
		return append(dst, '}')
	case '[':
		dst = append(dst, '[')
		for i, k := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = k.render(dst)
		}
		return append(dst, ']')
	case '"':
		dst, _ = jsontext.AppendQuote(dst, n.text)
		return dst
	}
	return append(dst, n.text...)
}

func (n *jnode) String() string { return string(n.render(nil)) }

// maxAlign bounds the element pairs an array alignment may weigh; past it
// elements are compared index by index (the alignment's cost grows with
// the product of the two lengths, and events come from the network).
const maxAlign = 1 << 16

func diffNodes(out *[]JSONChange, path string, a, b *jnode) {
	if a.sum == b.sum {
		return
	}
	switch {
	case a.kind == '{' && b.kind == '{':
		i, j := 0, 0
		for i < len(a.keys) || j < len(b.keys) {
			switch {
			case j == len(b.keys) || i < len(a.keys) && a.keys[i] < b.keys[j]:
				*out = append(*out, JSONChange{Path: memberPath(path, a.keys[i]), Old: a.kids[i].String()})
				i++
			case i == len(a.keys) || b.keys[j] < a.keys[i]:
				*out = append(*out, JSONChange{Path: memberPath(path, b.keys[j]), New: b.kids[j].String()})
				j++
			default:
				diffNodes(out, memberPath(path, a.keys[i]), a.kids[i], b.kids[j])
				i++
				j++
			}
		}
	case a.kind == '[' && b.kind == '[':
		diffArrays(out, path, a.kids, b.kids)
	default:
		c := JSONChange{Path: path, Old: a.String(), New: b.String()}
		c.SameNumber = a.kind == '0' && b.kind == '0' && sameNumber(a.text, b.text)
		*out = append(*out, c)
	}
}

func diffArrays(out *[]JSONChange, path string, a, b []*jnode) {
	elem := func(i int) string { return path + "[" + strconv.Itoa(i) + "]" }
	// pair diffs a[i:i+n] against b[j:j+n] index by index.
	pair := func(i, j, n int) {
		for k := range n {
			diffNodes(out, elem(j+k), a[i+k], b[j+k])
		}
	}
	removed := func(from, to int) {
		for i := from; i < to; i++ {
			*out = append(*out, JSONChange{Path: elem(i), Old: a[i].String()})
		}
	}
	added := func(from, to int) {
		for j := from; j < to; j++ {
			*out = append(*out, JSONChange{Path: elem(j), New: b[j].String()})
		}
	}
	if len(a) == len(b) {
		pair(0, 0, len(a))
		return
	}
	// Equal ends are skipped, so one element inserted into or removed from
	// a long array is one change however long the array is.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre].sum == b[pre].sum {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf].sum == b[len(b)-1-suf].sum {
		suf++
	}
	ma, mb := len(a)-pre-suf, len(b)-pre-suf
	if ma == 0 || mb == 0 || ma*mb > maxAlign {
		n := min(ma, mb)
		pair(pre, pre, n)
		removed(pre+n, pre+ma)
		added(pre+n, pre+mb)
		return
	}
	sums := func(ns []*jnode) []string {
		s := make([]string, len(ns))
		for i, n := range ns {
			s[i] = string(n.sum[:])
		}
		return s
	}
	m := difflib.NewMatcherWithJunk(sums(a[pre:pre+ma]), sums(b[pre:pre+mb]), false, nil)
	for _, op := range m.GetOpCodes() {
		op.I1, op.I2, op.J1, op.J2 = op.I1+pre, op.I2+pre, op.J1+pre, op.J2+pre
		switch op.Tag {
		case 'r':
			n := min(op.I2-op.I1, op.J2-op.J1)
			pair(op.I1, op.J1, n)
			removed(op.I1+n, op.I2)
			added(op.J1+n, op.J2)
		case 'd':
			removed(op.I1, op.I2)
		case 'i':
			added(op.J1, op.J2)
		}
	}
}

// memberPath appends an object member to a path: ".name" for names that
// read as identifiers, `["other name"]` for the rest.
func memberPath(path, key string) string {
	if isIdent(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	q, _ := jsontext.AppendQuote(nil, key)
	return path + "[" + string(q) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// sameNumber reports whether two JSON numbers have the same value, exactly
// (1, 1.0, 10e-1 and 0.1e1 are one number). Written digits are compared,
// not floats, so large integers that round alike still differ.
func sameNumber(a, b string) bool {
	na, okA := decimal(a)
	nb, okB := decimal(b)
	return okA && okB && na == nb
}

// decimal reduces a JSON number to sign, significant digits and exponent.
func decimal(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	e := 0
	if exp != "" {
		if len(strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")) > 9 {
			return "", false // beyond any exponent this comparison needs
		}
		var err error
		if e, err = strconv.Atoi(exp); err != nil {
			return "", false
		}
	}
	digits := intPart + frac
	e -= len(frac)
	trimmed := strings.TrimLeft(digits, "0")
	if trimmed == "" {
		return "0", true // -0 and 0 are one value
	}
	n := len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	e += n - len(trimmed)
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.Itoa(e), true
}
