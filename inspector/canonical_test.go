package inspector

import (
	"bytes"
	"encoding/json"
	"strings"
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
	"{\"\xff\":1,\"\xfe\":2}", `{"\u00e9":1,"é":2}`, `{"a":{"c":1,"b":2},"a ":[{"y":1,"x":[{"q":1,"p":2}]}]}`,
	"\"\xed\xa0\x80\"", "\"\xc3\\u00a9\"", `"a\/b"`, `"\u007f\u0080"`, "\"\x7f\"",
	`{"k":"v","k":"v"}`, `[[[{"b":1,"a":1}]]]`,
	`1x`, `1 x`, `"a"x`, `"a" x`, `true false`, `truex`, `[1]x`, `{"a":{"b":1,"b":{"c":2}},"a":[3]}`, ` 1`, `1}`, "1\n",
	strings.Repeat(`{"b":1,"a":`, 30) + "1" + strings.Repeat("}", 30),
}

// deepCases sit at encoding/json's nesting limit. They are not fuzz seeds:
// the fuzzer spends its time minimizing their mutants.
var deepCases = []string{
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	strings.Repeat(`{"b":1,"a":`, 10000) + "1" + strings.Repeat("}", 10000),
}

// TestCanonicalMatchesOracle: CanonicalHash gives the hashes earlier
// versions stored.
func TestCanonicalMatchesOracle(t *testing.T) {
	for _, c := range append(canonicalCases, deepCases...) {
		if got, want := CanonicalHash(json.RawMessage(c)), oracleCanonicalHash(json.RawMessage(c)); got != want {
			t.Errorf("%.100q: hash %s, oracle %s", c, got, want)
		}
	}
}

// FuzzCanonicalHash checks CanonicalHash against the single-pass writer
// earlier versions stored hashes with, on arbitrary input: stored hashes
// must keep matching new copies of the same event.
func FuzzCanonicalHash(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := CanonicalHash(b), oracleCanonicalHash(b); got != want {
			t.Fatalf("%q: hash %s, oracle %s", b, got, want)
		}
	})
}

// FuzzAnalysisHashes checks what the engine stores for every event of
// arbitrary message bodies: the hash earlier versions stored, the event
// read as DecodeMessage reads it, and raw JSON that does not alias the
// body.
func FuzzAnalysisHashes(f *testing.F) {
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"uuid":"e1","type":"media.ready","payload":{"media":{"id":"m","name":"Café – \u00e9","duration":1.50}},"metadata":{"account_id":"a"},"generated_at":"2026-01-01T00:00:00Z"},{"b":{"d":[1,{"y":2,"x":3}],"c":"\ud83d\ude00"},"a":null}]}`))
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"a":1,"a":2},{"\u0061":1,"a":2},{}]}`))
	f.Add([]byte(`{"events":[{"k":"\u2028\u0007"}],"hook":{"uuid":"h"}}`))
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"type":"media.created","payload":{"media":{"id":"a","id":"b"},"media.id":"c"},"payload.media.id":"d"},{"type":"x","payload":{"media":{"id":7},"viewing_session":{"id":null},"live_event":{"id":"\u006c"}}},{"type":"viewing_session.play","uuid":"","payload":{"visitor":{"id":"v","email":"e"},"viewing_session":{"id":"s"},"media":{"id":"m","duration":null}}}]}`))
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[{"uuid":"u","uuid":"v","metadata":{"account_id":"a"},"metadata":{}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		hook, events, _, err := decodeForAnalysis(body)
		m, merr := DecodeMessage(orig)
		if (err == nil) != (merr == nil) {
			t.Fatalf("%q: analysis error %v, DecodeMessage error %v", orig, err, merr)
		}
		if err != nil {
			return
		}
		if hook != m.HookUUID || len(events) != len(m.Events) {
			t.Fatalf("%q: hook %q, %d events; DecodeMessage: %q, %d", orig, hook, len(events), m.HookUUID, len(m.Events))
		}
		for i, e := range events {
			if want := oracleCanonicalHash(e.Raw); e.Hash != want {
				t.Fatalf("event %d %q: stored hash %s, oracle %s", i, e.Raw, e.Hash, want)
			}
			r := m.Events[i]
			if !bytes.Equal(e.Raw, r.Raw) || e.UUID != r.UUID || e.Type != r.Type || e.AccountID != r.AccountID || e.GeneratedRaw != r.GeneratedRaw {
				t.Fatalf("event %d %q: analysis %+v, DecodeMessage %+v", i, e.Raw, e, r)
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

// BenchmarkCanonicalHash compares CanonicalHash with the single-pass
// writer of earlier versions (the oracle) on a ~1 MiB message of
// realistic events.
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
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			CanonicalHash(buf)
		}
	})
	b.Run("oracle", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			oracleCanonicalHash(buf)
		}
	})
}
