package catalog

import (
	"encoding/json"
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
