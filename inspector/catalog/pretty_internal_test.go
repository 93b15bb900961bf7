package catalog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/pretty"
)

// prettyReference is what Pretty returned before it had its own writer:
// tidwall/pretty for input the parser accepts, the input otherwise.
func prettyReference(b []byte) []byte {
	if !valid(b) {
		return b
	}
	return pretty.Pretty(b)
}

// prettyCases exercise tidwall's layout rules: one-line arrays at the edge
// of the 80 columns at several depths and positions (first element or
// not), arrays of arrays, objects in arrays, empty values, odd spacing.
func prettyCases() []string {
	cases := []string{
		`{}`, `[]`, `[{}]`, `[[]]`, `{"a":[]}`, `{"a":{}}`, `""`, `0`, `-1.5e+3`, `true`, `null`,
		` { "a" : [ 1 , 2 ] , "b" : "x" } `, "\t[\n1\r,2]\n", `{"a":[1,{"b":2},3]}`,
		`[[1,2],[3,[4,5]],[{"x":1}]]`, `{"k\"ey":"v\\\"a\u00e9l"}`, `[1,[2,[3,[4,[5,[]]]]]]`,
		`{"a":[[1,2,3],[4,5,6]],"b":[[[[]]]]}`, `[true,false,null,"s",-0.0e-0]`,
	}
	for n := 60; n <= 90; n++ {
		arr := "[" + strings.TrimSuffix(strings.Repeat("1,", n/2), ",") + "]"
		str := `["` + strings.Repeat("x", n) + `"]`
		for _, v := range []string{arr, str} {
			cases = append(cases, v, `{"key":`+v+`}`, `[`+v+`,`+v+`]`, `{"a":{"b":[`+v+`,0]}}`, `[[0],`+v+`]`, `[{"a":[`+v+`]},`+v+`]`)
		}
	}
	return cases
}

// prettyCut is Pretty with every array cut into pieces runs, however
// small, so the multi-core path meets the same inputs as the other.
func prettyCut(b []byte, pieces int) []byte {
	out, ok := prettyAppendSplit(nil, b, pieces, 0)
	if !ok {
		return b
	}
	return out
}

func TestPrettyMatchesTidwall(t *testing.T) {
	for _, c := range append(prettyCases(), `{"a":`, `[1,]`, `{"a":1}x`, "[\"\x01\"]", ``, ` `, `[1 2]`, strings.Repeat("[", 300)+strings.Repeat("]", 300)) {
		want := prettyReference([]byte(c))
		if got := Pretty([]byte(c)); !bytes.Equal(got, want) {
			t.Errorf("%q:\ngot  %q\nwant %q", c, got, want)
		}
		for pieces := 2; pieces <= 4; pieces++ {
			if got := prettyCut([]byte(c), pieces); !bytes.Equal(got, want) {
				t.Errorf("%q in %d runs:\ngot  %q\nwant %q", c, pieces, got, want)
			}
		}
	}
	// Nesting right at the parser's limit, with an array of scalars in
	// the deepest array (its elements one level deeper than allowed).
	for _, inner := range []string{"", "1", "[]", "[1]"} {
		for d := maxDepth - 1; d <= maxDepth+1; d++ {
			c := strings.Repeat("[", d) + inner + strings.Repeat("]", d)
			if got, want := Pretty([]byte(c)), prettyReference([]byte(c)); !bytes.Equal(got, want) {
				t.Errorf("depth %d, inner %q: got %d bytes, want %d", d, inner, len(got), len(want))
			}
		}
	}
}

// FuzzPretty checks the one-pass writer against tidwall/pretty behind the
// parser's validity check on arbitrary input.
func FuzzPretty(f *testing.F) {
	for _, c := range prettyCases() {
		f.Add([]byte(c))
	}
	f.Add([]byte(fmt.Sprintf(`{"hook":{"uuid":"h"},"events":[{"a":[%s],"b":{"c":[[1,2],[3]]}}]}`, strings.Repeat(`"abcdef",`, 12)+`1`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		got, want := Pretty(b), prettyReference(orig)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\ngot  %q\nwant %q", orig, got, want)
		}
		pieces := 2 + len(b)%3
		if got := prettyCut(b, pieces); !bytes.Equal(got, want) {
			t.Fatalf("%q in %d runs:\ngot  %q\nwant %q", orig, pieces, got, want)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("input changed")
		}
	})
}

// TestPrettyPieces pins where Pretty starts cutting big arrays: not on
// two cores, where one run measured faster.
func TestPrettyPieces(t *testing.T) {
	for _, c := range []struct{ cores, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 4}, {8, 8}} {
		if got := prettyPieces(c.cores); got != c.want {
			t.Errorf("prettyPieces(%d) = %d, want %d", c.cores, got, c.want)
		}
	}
}
