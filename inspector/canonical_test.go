package inspector

import (
	"encoding/json"
	"testing"
)

var canonicalCases = []string{
	`{"b":1,"a":{"y":[1,2],"x":"é"}}`,
	"{ \"a\" : {\"x\":\"\\u00e9\", \"y\":[1, 2]},\n \"b\":1 }",
	`{"a":1,"a":2}`,
	`{"z":{"b":[{"d":1,"c":2}],"a":null},"y":true,"x":false}`,
	`[]`, `{}`, `[{}]`, `""`, `"\ud800"`, `"\ud83d\ude00"`, "\"\xff\xfe\"",
	`"tab\there"`, `"quote\"and\\"`, `"\u0007bell"`, `"日本語"`, `"\u2028"`,
	`-0.5e+10`, `0`, `1.0`, `01`, `1.`, `-`, `1e`, `tru`, `nul`,
	`{"a":1} trailing`, `{"a":1}  `, `  [1,2]`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`,
	`{"k\u0041":1,"kA":2}`, `{"b":1,"a":2,"b":3}`, "\"ctl\x01\"", `{`, `[`, `"open`,
	`{"é":1,"e":2,"z":3}`, `{"B":1,"a":2,"_":3}`,
}

func TestCanonicalMatchesReference(t *testing.T) {
	for _, c := range canonicalCases {
		if got, want := CanonicalHash(json.RawMessage(c)), canonicalHashSlow(json.RawMessage(c)); got != want {
			t.Errorf("%q: fast hash %s, reference %s", c, got, want)
		}
	}
}

// FuzzCanonicalHash checks the single-pass canonicaliser against the
// encoding/json reference on arbitrary input: hashes stored by older
// versions must keep matching.
func FuzzCanonicalHash(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := CanonicalHash(b), canonicalHashSlow(b); got != want {
			t.Fatalf("%q: fast hash %s, reference %s", b, got, want)
		}
	})
}

// BenchmarkCanonicalHash compares the single-pass canonicaliser with the
// encoding/json reference on a ~1 MiB message of realistic events.
func BenchmarkCanonicalHash(b *testing.B) {
	ev := `{"uuid":"0123456789abcdef","type":"media.updated","payload":{"media":{"id":"abcdefghij","name":"Launch webinar – part 2","duration":1234.5,"thumbnail":{"url":"https://example.com/t.jpg","width":640,"height":360},"tags":["a","b"]},"previous_attributes":{"name":"Old"},"project":{"id":"p1","name":"Marketing"}},"metadata":{"account_id":"a1"},"generated_at":"2026-01-01T00:00:00Z"}`
	var buf []byte
	buf = append(buf, `{"hook":{"uuid":"h"},"events":[`...)
	for i := 0; len(buf) < 1<<20; i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ev...)
	}
	buf = append(buf, "]}"...)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			CanonicalHash(buf)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			canonicalHashSlow(buf)
		}
	})
}
