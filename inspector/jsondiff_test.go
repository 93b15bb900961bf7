package inspector

import (
	"strconv"
	"strings"
	"testing"
)

func TestDiffJSON(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want []string // JSONChange.String() of each change, in order
	}{
		{"equal", `{"a":1}`, `{"a":1}`, nil},
		{"key order is not a difference", `{"a":1,"b":{"x":"y","z":[1,2]}}`, `{"b":{"z":[1,2],"x":"y"},"a":1}`, nil},
		{"white space is not a difference", "{\"a\": [1, 2]}", "{\n  \"a\":[1,2]\n}", nil},
		{"string escapes are not a difference", `{"n":"\u00e9\/"}`, `{"n":"é/"}`, nil},
		{"the last of a repeated key counts", `{"a":1,"a":2}`, `{"a":2}`, nil},
		{"nested value", `{"payload":{"media":{"name":"A","id":"m1"}}}`, `{"payload":{"media":{"id":"m1","name":"B"}}}`,
			[]string{`payload.media.name: "A" → "B"`}},
		{"added and removed keys", `{"p":{"a":1,"b":2}}`, `{"p":{"b":2,"c":{"d":[3]}}}`,
			[]string{`p.a: removed 1`, `p.c: added {"d":[3]}`}},
		{"type change", `{"duration":12,"id":"7"}`, `{"duration":null,"id":7}`,
			[]string{`duration: 12 → null`, `id: "7" → 7`}},
		{"object becomes array", `{"x":{"a":1}}`, `{"x":[1]}`, []string{`x: {"a":1} → [1]`}},
		{"numbers are compared as written", `{"n":1,"m":100,"k":2}`, `{"n":1.0,"m":1e2,"k":3}`,
			[]string{`k: 2 → 3`, `m: 100 → 1e2 (the same number, written differently)`, `n: 1 → 1.0 (the same number, written differently)`}},
		{"minus zero", `[0]`, `[-0]`, []string{`[0]: 0 → -0 (the same number, written differently)`}},
		{"large integers that round alike differ", `[9007199254740993]`, `[9007199254740992]`,
			[]string{`[0]: 9007199254740993 → 9007199254740992`}},
		{"array element changed", `{"tags":["a","b","c"]}`, `{"tags":["a","x","c"]}`, []string{`tags[1]: "b" → "x"`}},
		{"array element inserted in front", `{"tags":["a","b","c"]}`, `{"tags":["z","a","b","c"]}`, []string{`tags[0]: added "z"`}},
		{"array element removed", `{"tags":["a","b","c"]}`, `{"tags":["a","c"]}`, []string{`tags[1]: removed "b"`}},
		{"array of objects", `{"l":[{"id":1,"v":"a"},{"id":2,"v":"b"}]}`, `{"l":[{"id":1,"v":"a"},{"id":2,"v":"c"},{"id":3}]}`,
			[]string{`l[1].v: "b" → "c"`, `l[2]: added {"id":3}`}},
		{"odd key names", `{"x-y":1,"a b":{"é":2},"":3}`, `{"x-y":2,"a b":{"é":3},"":4}`,
			[]string{`[""]: 3 → 4`, `["a b"]["é"]: 2 → 3`, `x-y: 1 → 2`}},
		{"whole scalar", `"a"`, `"b"`, []string{`(the whole value): "a" → "b"`}},
		{"not JSON", `{"a":`, `{"a":1}`, []string{`(the whole value): {"a": → {"a":1}`}},
		{"equal garbage", `{"a":`, `{"a":`, nil},
		{"invalid UTF-8 reads as U+FFFD", "\"\xff\"", `"\ufffd"`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range DiffJSON([]byte(tc.a), []byte(tc.b)) {
				got = append(got, c.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("DiffJSON(%s, %s) =\n%s\nwant\n%s", tc.a, tc.b, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if equal := CanonicalHash([]byte(tc.a)) == CanonicalHash([]byte(tc.b)); equal != (len(got) == 0) {
				t.Fatalf("hashes equal %v, but %d changes", equal, len(got))
			}
		})
	}
}

func TestUnifiedJSONDiffIgnoresKeyOrder(t *testing.T) {
	a := `{"b":2,"a":{"name":"A","id":"m1"}}`
	if d := UnifiedJSONDiff([]byte(a), []byte(`{"a":{"id":"m1","name":"A"},"b":2}`), "first", "this"); d != "" {
		t.Fatalf("reordered keys make a diff:\n%s", d)
	}
	d := UnifiedJSONDiff([]byte(a), []byte(`{"a":{"id":"m1","name":"B"},"b":2}`), "first", "this")
	for _, want := range []string{"--- first", "+++ this", `-    "name": "A"`, `+    "name": "B"`, `     "id": "m1",`} {
		if !strings.Contains(d, want) {
			t.Fatalf("diff lacks %q:\n%s", want, d)
		}
	}
}

// FuzzDiffJSON: "divergent" (the canonical hashes differ) and "what
// changed" agree on any input, and a value never differs from itself.
func FuzzDiffJSON(f *testing.F) {
	for i, c := range canonicalCases {
		f.Add([]byte(c), []byte(canonicalCases[(i+1)%len(canonicalCases)]))
		f.Add([]byte(c), []byte(c))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		changes := DiffJSON(a, b)
		if equal := CanonicalHash(a) == CanonicalHash(b); equal != (len(changes) == 0) {
			t.Fatalf("%q vs %q: hashes equal %v, changes %v", a, b, equal, changes)
		}
		if self := DiffJSON(a, a); len(self) != 0 {
			t.Fatalf("%q differs from itself: %v", a, self)
		}
		for _, c := range changes {
			if c.Old == "" && c.New == "" {
				t.Fatalf("%q vs %q: empty change %+v", a, b, c)
			}
		}
	})
}

// TestUnifiedJSONDiffShowsTheWholeValue: the full diff is every line, the
// changed ones marked, not only the lines around a change.
func TestUnifiedJSONDiffShowsTheWholeValue(t *testing.T) {
	a := `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`
	b := strings.Replace(a, `"k9":9`, `"k9":10`, 1)
	d := UnifiedJSONDiff([]byte(a), []byte(b), "a", "b")
	if !strings.Contains(d, `   "k0": 0,`) || !strings.Contains(d, `+  "k9": 10`) || strings.HasSuffix(d, "\n") {
		t.Fatalf("diff:\n%q", d)
	}
}

// TestDiffJSONLongArrays: past the alignment bound an insertion or a
// removal is still one change.
func TestDiffJSONLongArrays(t *testing.T) {
	long := func(extra string, from, n int) string {
		var b strings.Builder
		b.WriteString("[" + extra)
		for i := from; i < n; i++ {
			if i > from || extra != "" {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(i))
		}
		return b.String() + "]"
	}
	a := long("", 0, 1000)
	for _, tc := range []struct {
		b    string
		want string
	}{
		{long(`"new"`, 0, 1000), `[0]: added "new"`},
		{long("", 1, 1000), `[0]: removed 0`},
		{strings.Replace(a, ",500,", ",500,\"x\",", 1), `[501]: added "x"`},
	} {
		got := DiffJSON([]byte(a), []byte(tc.b))
		if len(got) != 1 || got[0].String() != tc.want {
			t.Errorf("%d changes, first %v; want %s", len(got), got[:min(len(got), 3)], tc.want)
		}
	}
}
