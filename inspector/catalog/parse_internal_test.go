package catalog

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzUnescape checks the hand-written unescaper against encoding/json.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`"a\nb"`, `"\u00e9\ud83d\ude00"`, `"\ud83d"`, `"\ud83d\u0041"`, `"\"\\\/\b\f\r\t"`, `"\udc00x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Invalid UTF-8 is kept byte for byte (the bytes are what arrived);
		// encoding/json would replace it, so only valid text is compared.
		if !utf8.ValidString(s) {
			return
		}
		p := parser{src: s, record: true}
		if _, err := p.document(); err != nil || len(p.nodes) != 1 || p.nodes[0].kind != kindString {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("parser accepted %q, encoding/json did not: %v", s, err)
		}
		n := p.nodes[0]
		if got := unescape(s[n.start-1 : n.end+1]); got != want {
			t.Errorf("unescape(%q) = %q, want %q", s, got, want)
		}
	})
}

// TestStringScanEveryOffset puts each byte the fast scanner must stop at
// at every position of a 8-byte block.
func TestStringScanEveryOffset(t *testing.T) {
	for pos := 0; pos < 20; pos++ {
		for _, c := range []byte{0x00, 0x1f, '\n', '"', '\\'} {
			b := []byte(`"` + strings.Repeat("a", 20) + `"`)
			b[1+pos] = c
			want := json.Valid(b)
			if got := valid(b); got != want {
				t.Errorf("byte %#x at %d: valid=%v, encoding/json says %v", c, pos, got, want)
			}
		}
	}
	if !valid([]byte(`"` + strings.Repeat("é~\x7f", 10) + `"`)) {
		t.Errorf("high and DEL bytes rejected")
	}
}
