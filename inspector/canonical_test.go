package inspector

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hookscope/hookscope/inspector/catalog"
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
	"{\"\xff\":1,\"\xfe\":2}", `{"\u00e9":1,"é":2}`, `{"a":{"c":1,"b":2},"a ":[{"y":1,"x":[{"q":1,"p":2}]}]}`,
	"\"\xed\xa0\x80\"", "\"\xc3\\u00a9\"", `"a\/b"`, `"\u007f\u0080"`, "\"\x7f\"",
	`{"k":"v","k":"v"}`, `[[[{"b":1,"a":1}]]]`,
}

// parseCanonicalHash is the hash written from the catalogue's parse tree
// (what the engine stores), or "" where that path defers to the reference.
func parseCanonicalHash(b []byte) string {
	out, ok := catalog.AppendCanonical(nil, b)
	if !ok {
		return ""
	}
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:])
}

func TestCanonicalMatchesReference(t *testing.T) {
	for _, c := range canonicalCases {
		want := canonicalHashSlow(json.RawMessage(c))
		if got := CanonicalHash(json.RawMessage(c)); got != want {
			t.Errorf("%q: fast hash %s, reference %s", c, got, want)
		}
		if got := parseCanonicalHash([]byte(c)); got != "" && got != want {
			t.Errorf("%q: hash from the parse %s, reference %s", c, got, want)
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
		want := canonicalHashSlow(b)
		if got := CanonicalHash(b); got != want {
			t.Fatalf("%q: fast hash %s, reference %s", b, got, want)
		}
		if got := parseCanonicalHash(b); got != "" && got != want {
			t.Fatalf("%q: hash from the parse %s, reference %s", b, got, want)
		}
	})
}

// FuzzAnalysisHashes checks the hashes the engine stores, written from the
// message's one parse (on several cores for big messages), against the
// reference for every event of arbitrary message bodies.
func FuzzAnalysisHashes(f *testing.F) {
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"uuid":"e1","type":"media.ready","payload":{"media":{"id":"m","name":"Café – \u00e9","duration":1.50}},"metadata":{"account_id":"a"},"generated_at":"2026-01-01T00:00:00Z"},{"b":{"d":[1,{"y":2,"x":3}],"c":"\ud83d\ude00"},"a":null}]}`))
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"a":1,"a":2},{"\u0061":1,"a":2},{}]}`))
	f.Add([]byte(`{"events":[{"k":"\u2028\u0007"}],"hook":{"uuid":"h"}}`))
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"type":"media.created","payload":{"media":{"id":"a","id":"b"},"media.id":"c"},"payload.media.id":"d"},{"type":"x","payload":{"media":{"id":7},"viewing_session":{"id":null},"live_event":{"id":"\u006c"}}},{"type":"viewing_session.play","uuid":"","payload":{"visitor":{"id":"v","email":"e"},"viewing_session":{"id":"s"},"media":{"id":"m","duration":null}}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		_, events, err := decodeForAnalysis(body)
		if err != nil {
			return
		}
		for i, e := range events {
			if want := canonicalHashSlow(e.Raw); e.Hash != want {
				t.Fatalf("event %d %q: stored hash %s, reference %s", i, e.Raw, e.Hash, want)
			}
			// Decoded without keeping field lists or payloads, the event
			// must still be stored as a full decode of it says.
			full := catalog.DecodeEvent(e.Raw)
			if e.Subject != subjectFromFields(full.Fields) || e.Summary != full.Summary || !reflect.DeepEqual(e.Problems, full.Problems) ||
				e.UUID != full.UUID || e.Type != full.Type || e.AccountID != full.AccountID || e.GeneratedRaw != full.GeneratedAt {
				t.Fatalf("event %d %q: stored %+v, full decode %+v (subject %q)", i, e.Raw, e, full, subjectFromFields(full.Fields))
			}
		}
		// Raw must not alias the body the receiver may reuse.
		for i := range body {
			body[i] = 'x'
		}
		for i, e := range events {
			if bytes.Contains(e.Raw, []byte("xxxx")) && !bytes.Contains(orig, []byte("xxxx")) {
				t.Fatalf("event %d's raw aliases the body", i)
			}
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
