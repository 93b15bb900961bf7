package catalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/tidwall/pretty"
)

// event returns a valid generated event of typ as a generic map that a test
// case can damage.
func event(t testing.TB, typ string) map[string]any {
	t.Helper()
	g := simulate.New(99)
	b, err := json.Marshal(g.Event(typ))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at returns the object at a dotted path inside m.
func at(m map[string]any, path string) map[string]any {
	for _, k := range strings.Split(path, ".") {
		if k == "" {
			continue
		}
		m = m[k].(map[string]any)
	}
	return m
}

func TestContractRules(t *testing.T) {
	cases := []struct {
		name   string
		typ    string
		damage func(e map[string]any)
		sev    catalog.Severity
		path   string
		phrase string
	}{
		{"descriptive field missing", catalog.TypeMediaCreated, func(e map[string]any) { delete(at(e, "payload.media"), "name") },
			catalog.SeverityWarning, "payload.media.name", "(spec 2.4)"},
		{"identifier missing", catalog.TypeMediaCreated, func(e map[string]any) { delete(at(e, "payload.media"), "id") },
			catalog.SeverityError, "payload.media.id", "missing"},
		{"identifier null", catalog.TypeViewingPlay, func(e map[string]any) { at(e, "payload.viewing_session")["id"] = nil },
			catalog.SeverityError, "payload.viewing_session.id", "null"},
		{"identifier empty", catalog.TypeLiveEventRegistration, func(e map[string]any) { at(e, "payload.live_event")["id"] = "" },
			catalog.SeverityError, "payload.live_event.id", "empty"},
		{"identifier of the wrong type", catalog.TypeMediaReady, func(e map[string]any) { at(e, "payload.media")["id"] = 42 },
			catalog.SeverityError, "payload.media.id", "is a number; the spec says a string"},
		{"required object missing", catalog.TypeViewingPlay, func(e map[string]any) { delete(at(e, "payload"), "visitor") },
			catalog.SeverityError, "payload.visitor", "missing"},
		{"envelope field missing", catalog.TypeMediaReady, func(e map[string]any) { delete(e, "uuid") },
			catalog.SeverityError, "uuid", "missing"},
		{"account id missing", catalog.TypeMediaReady, func(e map[string]any) { delete(at(e, "metadata"), "account_id") },
			catalog.SeverityError, "metadata.account_id", "missing"},
		{"empty uuid", catalog.TypeMediaReady, func(e map[string]any) { e["uuid"] = "" },
			catalog.SeverityError, "uuid", "empty"},
		{"wrong type string", catalog.TypeMediaReady, func(e map[string]any) { at(e, "payload.media")["duration"] = "92.4" },
			catalog.SeverityError, "payload.media.duration", "is a string; the spec says a number"},
		{"wrong type object", catalog.TypeMediaCreated, func(e map[string]any) { at(e, "payload")["project"] = "Marketing" },
			catalog.SeverityError, "payload.project", "the spec says an object"},
		{"wrong type bool", catalog.TypeMediaLocalizationCreated, func(e map[string]any) { at(e, "payload.localization")["enabled"] = "yes" },
			catalog.SeverityError, "payload.localization.enabled", "a boolean"},
		{"percent not integer", catalog.TypeViewingPercentWatched, func(e map[string]any) { at(e, "payload")["percent_watched"] = 33.3 },
			catalog.SeverityError, "payload.percent_watched", "integer"},
		{"project absent where listed", catalog.TypeMediaDeleted, func(e map[string]any) { delete(at(e, "payload"), "project") },
			catalog.SeverityWarning, "payload.project", "missing"},
		{"project present where absent: ready", catalog.TypeMediaReady, func(e map[string]any) { at(e, "payload")["project"] = map[string]any{"id": "p", "name": "n"} },
			catalog.SeverityNotice, "payload.project", "carry no project"},
		{"project present where absent: viewing", catalog.TypeViewingPlay, func(e map[string]any) { at(e, "payload")["project"] = map[string]any{"id": "p", "name": "n"} },
			catalog.SeverityNotice, "payload.project", "carry no project"},
		{"project present where absent: live", catalog.TypeLiveEventRegistration, func(e map[string]any) { at(e, "payload")["project"] = map[string]any{} },
			catalog.SeverityNotice, "payload.project", "carry no project"},
		{"deleted media with more than id", catalog.TypeMediaDeleted, func(e map[string]any) { at(e, "payload.media")["name"] = "Intro" },
			catalog.SeverityNotice, "payload.media.name", "only id"},
		{"percent watched not a threshold", catalog.TypeViewingPercentWatched, func(e map[string]any) { at(e, "payload")["percent_watched"] = 60 },
			catalog.SeverityError, "payload.percent_watched", "25, 50, 75 or 100"},
		{"percent watched written as float", catalog.TypeViewingPercentWatched, func(e map[string]any) { at(e, "payload")["percent_watched"] = json.Number("50.0") },
			catalog.SeverityNotice, "payload.percent_watched", "written 50.0"},
		{"visitor email outside percent_watched", catalog.TypeViewingPlay, func(e map[string]any) { at(e, "payload.visitor")["email"] = "a@b.example" },
			catalog.SeverityNotice, "payload.visitor.email", "only in viewing_session.percent_watched"},
		{"visitor name in turnstile", catalog.TypeViewingTurnstile, func(e map[string]any) { at(e, "payload.visitor")["name"] = "Jane" },
			catalog.SeverityNotice, "payload.visitor.name", "belongs at payload.name"},
		{"generated_at not ISO 8601", catalog.TypeMediaReady, func(e map[string]any) { e["generated_at"] = "March 2, 2026" },
			catalog.SeverityError, "generated_at", "not an ISO 8601"},
		{"generated_at not UTC", catalog.TypeMediaReady, func(e map[string]any) { e["generated_at"] = "2026-03-02T10:00:00+01:00" },
			catalog.SeverityWarning, "generated_at", "not in UTC"},
		{"generated_at without zone", catalog.TypeMediaReady, func(e map[string]any) { e["generated_at"] = "2026-03-02T10:00:00" },
			catalog.SeverityError, "generated_at", "no time zone"},
		{"localization timestamp without offset", catalog.TypeMediaLocalizationCreated, func(e map[string]any) { at(e, "payload.localization")["created_at"] = "2026-03-02T10:00:00" },
			catalog.SeverityError, "payload.localization.created_at", "no offset"},
		{"localization timestamp not ISO", catalog.TypeMediaLocalizationCreated, func(e map[string]any) { at(e, "payload.localization.source_media")["updated_at"] = "yesterday" },
			catalog.SeverityError, "payload.localization.source_media.updated_at", "not an ISO 8601"},
		{"localization timestamp with Z", catalog.TypeMediaLocalizationCreated, func(e map[string]any) { at(e, "payload.localization")["enabled_at"] = "2026-03-02T10:00:00Z" },
			catalog.SeverityNotice, "payload.localization.enabled_at", "+00:00"},
		{"live event start not ISO", catalog.TypeLiveEventRegistration, func(e map[string]any) { at(e, "payload.live_event")["starts_at"] = "next Tuesday" },
			catalog.SeverityError, "payload.live_event.starts_at", "not an ISO 8601"},
		{"unknown field", catalog.TypeMediaCreated, func(e map[string]any) { at(e, "payload.media")["description"] = "new" },
			catalog.SeverityNotice, "payload.media.description", "may add fields"},
		{"unknown envelope field", catalog.TypeMediaCreated, func(e map[string]any) { e["attempt"] = 2 },
			catalog.SeverityNotice, "attempt", "may add fields"},
		{"null duration", catalog.TypeMediaReady, func(e map[string]any) { at(e, "payload.media")["duration"] = nil },
			catalog.SeverityWarning, "payload.media.duration", "null"},
		{"null descriptive string", catalog.TypeMediaReady, func(e map[string]any) { at(e, "payload.media")["name"] = nil },
			catalog.SeverityWarning, "payload.media.name", "(spec 2.4)"},
		{"null optional object", catalog.TypeMediaReady, func(e map[string]any) { at(e, "payload.media")["thumbnail"] = nil },
			catalog.SeverityWarning, "payload.media.thumbnail", "null"},
		{"null optional reason", catalog.TypeMediaTranscriptFailed, func(e map[string]any) { at(e, "payload.transcript")["reason"] = nil },
			catalog.SeverityWarning, "payload.transcript.reason", "null"},
		{"registration field not a string", catalog.TypeLiveEventRegistration, func(e map[string]any) { at(e, "payload.registration.fields")["phone"] = 5550100 },
			catalog.SeverityWarning, "payload.registration.fields.phone", "strings"},
		{"unknown type", catalog.TypeMediaReady, func(e map[string]any) { e["type"] = "media.archived" },
			catalog.SeverityNotice, "type", "not one of the 17"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := event(t, c.typ)
			c.damage(e)
			raw, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got := catalog.DecodeEvent(raw)
			if len(got.Problems) != 1 {
				t.Fatalf("want exactly one problem, got %+v\n%s", got.Problems, raw)
			}
			p := got.Problems[0]
			if p.Severity != c.sev || p.Path != c.path || !strings.Contains(p.Message, c.phrase) {
				t.Errorf("got %s %s %q; want %s %s containing %q", p.Severity, p.Path, p.Message, c.sev, c.path, c.phrase)
			}
			if got.Summary == "" || len(got.Fields) == 0 {
				t.Errorf("a damaged event must still render: %+v", got)
			}
		})
	}
}

func TestVisitorContactAllowedInPercentWatched(t *testing.T) {
	e := event(t, catalog.TypeViewingPercentWatched)
	v := at(e, "payload.visitor")
	v["email"], v["name"] = "jane@acme.example", "Jane Doe"
	raw, _ := json.Marshal(e)
	got := catalog.DecodeEvent(raw)
	if len(got.Problems) != 0 {
		t.Fatalf("problems: %+v", got.Problems)
	}
	p := got.Payload.(*catalog.ViewingPercentWatched)
	if p.Visitor.Email == nil || *p.Visitor.Email != "jane@acme.example" || p.PercentWatched == nil {
		t.Errorf("typed payload %+v", p.Visitor)
	}
}

func TestDecodeKeepsGoing(t *testing.T) {
	for _, raw := range []string{``, `nope`, `[1,2]`, `"str"`, `{"type": 5}`, `{"payload": []}`, `{"type":"x.y","payload":{"a":1}}`} {
		got := catalog.DecodeEvent(json.RawMessage(raw))
		if len(got.Problems) == 0 {
			t.Errorf("%q: no problems", raw)
		}
		if got.Summary == "" {
			t.Errorf("%q: no summary", raw)
		}
	}
	got := catalog.DecodeEvent(json.RawMessage(`{"uuid":"0123456789abcdef0123456789abcdef","type":"x.y","payload":{"a":1},"metadata":{"account_id":"1"},"generated_at":"2026-01-01T00:00:00Z"}`))
	if got.Known || len(got.Problems) != 1 || got.Problems[0].Severity != catalog.SeverityNotice {
		t.Errorf("unknown type: %+v", got)
	}
	if g, ok := got.Payload.(*catalog.Generic); !ok || string(g.Fields["a"]) != "1" {
		t.Errorf("generic payload %+v", got.Payload)
	}
}

func TestSummaries(t *testing.T) {
	raw := `{"uuid":"abcdef0123456789","type":"media.ready","payload":{"media":{"id":"a1b2c3d4e5","name":"Product tour","url":"https://x.example/medias/a1b2c3d4e5","duration":92.4,"thumbnail":{"url":"https://x.example/t.jpg"}}},"metadata":{"account_id":"1"},"generated_at":"2026-03-02T09:00:00Z"}`
	got := catalog.DecodeEvent(json.RawMessage(raw))
	if want := `media.ready — "Product tour" (a1b2c3d4e5) 92.4 s`; got.Summary != want {
		t.Errorf("summary %q, want %q", got.Summary, want)
	}
	if len(got.Problems) != 0 {
		t.Errorf("problems %+v", got.Problems)
	}
	want := []catalog.Field{
		{Label: "Event UUID", Value: "abcdef0123456789", Path: "uuid"},
		{Label: "Type", Value: "media.ready", Path: "type"},
		{Label: "Account ID", Value: "1", Path: "metadata.account_id"},
		{Label: "Generated at", Value: "2026-03-02T09:00:00Z", Path: "generated_at"},
		{Label: "Media ID", Value: "a1b2c3d4e5", Path: "payload.media.id"},
		{Label: "Media name", Value: "Product tour", Path: "payload.media.name"},
		{Label: "Media URL", Value: "https://x.example/medias/a1b2c3d4e5", Path: "payload.media.url"},
		{Label: "Duration", Value: "92.4 s", Path: "payload.media.duration"},
		{Label: "Thumbnail URL", Value: "https://x.example/t.jpg", Path: "payload.media.thumbnail.url"},
	}
	if fmt.Sprint(got.Fields) != fmt.Sprint(want) {
		t.Errorf("fields\n%v\nwant\n%v", got.Fields, want)
	}
}

func TestTypes(t *testing.T) {
	ts := catalog.Types()
	if len(ts) != 17 || ts[0].Name != "media.created" || ts[16].Name != "live_event.registration" {
		t.Fatalf("types %+v", ts)
	}
	for _, x := range ts {
		if x.OccursWhen == "" || len(x.Fields) == 0 {
			t.Errorf("%s lacks a description or fields", x.Name)
		}
	}
	if fmt.Sprint(ts[4].Fields) != "[media project previous_attributes]" {
		t.Errorf("media.updated fields %v", ts[4].Fields)
	}
}

func TestCheckDelivery(t *testing.T) {
	good := http.Header{"User-Agent": {"Service-Webhooks/0.0.47"}, "Content-Type": {"application/json"}, "Content-Length": {"10"}}
	if p := catalog.CheckDelivery(good, 10); len(p) != 0 {
		t.Errorf("good headers: %+v", p)
	}
	cases := []struct {
		name   string
		h      http.Header
		sev    catalog.Severity
		path   string
		phrase string
	}{
		{"other version", http.Header{"User-Agent": {"Service-Webhooks/0.0.52"}}, catalog.SeverityNotice, "User-Agent", "0.0.52"},
		{"other agent", http.Header{"User-Agent": {"curl/8.5.0"}}, catalog.SeverityWarning, "User-Agent", "curl"},
		{"no agent", http.Header{"User-Agent": nil}, catalog.SeverityWarning, "User-Agent", "no User-Agent"},
		{"form content type", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, catalog.SeverityError, "Content-Type", "application/json"},
		{"no content type", http.Header{"Content-Type": nil}, catalog.SeverityError, "Content-Type", "no Content-Type"},
		{"length mismatch", http.Header{"Content-Length": {"12"}}, catalog.SeverityError, "Content-Length", "12 bytes but the body has 10"},
		{"length missing", http.Header{"Content-Length": nil}, catalog.SeverityWarning, "Content-Length", "no Content-Length"},
		{"posted by a web page", http.Header{"Origin": {"https://evil.example"}}, catalog.SeverityWarning, "Origin", `Origin is "https://evil.example": a web page in a browser posted this, not the service`},
		{"posted by a sandboxed page", http.Header{"Origin": {"null"}}, catalog.SeverityWarning, "Origin", "a web page in a browser posted this"},
	}
	for _, c := range cases {
		h := good.Clone()
		for k, v := range c.h {
			if v == nil {
				delete(h, k)
			} else {
				h[k] = v
			}
		}
		p := catalog.CheckDelivery(h, 10)
		if len(p) != 1 || p[0].Severity != c.sev || p[0].Path != c.path || !strings.Contains(p[0].Message, c.phrase) {
			t.Errorf("%s: %+v", c.name, p)
		}
	}
	h := good.Clone()
	h.Set("Content-Type", "application/json; charset=utf-8")
	if p := catalog.CheckDelivery(h, 10); len(p) != 0 {
		t.Errorf("charset parameter: %+v", p)
	}
}

func TestPretty(t *testing.T) {
	in := []byte(`{"a":[1,2],"b":"x"}`)
	orig := bytes.Clone(in)
	out := catalog.Pretty(in)
	if !bytes.Equal(in, orig) || !bytes.Contains(out, []byte("\n  \"a\": [1, 2]")) {
		t.Errorf("pretty %q (input now %q)", out, in)
	}
	bad := []byte(`{"a":`)
	if got := catalog.Pretty(bad); !bytes.Equal(got, bad) {
		t.Errorf("non-JSON changed: %q", got)
	}
	if got := catalog.PrettyColor(in); !bytes.Contains(got, []byte("\x1b[")) {
		t.Errorf("no colour: %q", got)
	}
}

// TestPrettyIsTidwall: Pretty is tidwall/pretty behind encoding/json's
// validity check, colour included, for generated messages of every type and
// a big one.
func TestPrettyIsTidwall(t *testing.T) {
	g := simulate.New(5)
	bodies := [][]byte{bigMessage(t, 256<<10)}
	for _, typ := range catalog.TypeNames() {
		bodies = append(bodies, g.Message(g.Event(typ)).Body())
	}
	for _, body := range bodies {
		if got, want := catalog.Pretty(body), pretty.Pretty(body); !bytes.Equal(got, want) {
			t.Errorf("%d bytes:\ngot  %.200s\nwant %.200s", len(body), got, want)
		}
		if got, want := catalog.PrettyColor(body), pretty.Color(pretty.Pretty(body), nil); !bytes.Equal(got, want) {
			t.Errorf("colour: %d bytes, want %d", len(got), len(want))
		}
	}
}

// FuzzPretty: valid JSON comes out as tidwall/pretty writes it, anything
// else unchanged, and the input is never modified.
func FuzzPretty(f *testing.F) {
	for _, c := range []string{`{}`, `[]`, `{"a":[1,2],"b":{"c":[[1],[2,3]]}}`, `{"a":`, `[1,]`, `{"a":1}x`, "[\"\x01\"]", ``, ` `, "\"\xff\"", strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		want := orig
		if json.Valid(orig) {
			want = pretty.Pretty(orig)
		}
		if got := catalog.Pretty(b); !bytes.Equal(got, want) {
			t.Fatalf("%q:\ngot  %q\nwant %q", orig, got, want)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("input changed")
		}
	})
}

// bigMessage builds a message of at least size bytes from generated events
// of every type.
func bigMessage(tb testing.TB, size int) []byte {
	g := simulate.New(1)
	var evs []simulate.Event
	n := 0
	for n < size {
		for _, typ := range catalog.TypeNames() {
			e := g.Event(typ)
			b, _ := json.Marshal(e)
			n += len(b) + 1
			evs = append(evs, e)
		}
	}
	return g.Message(evs...).Body()
}

// BenchmarkDecodeEvent decodes, checks and renders every event of a 1 MiB
// message, one at a time.
func BenchmarkDecodeEvent(b *testing.B) {
	var m struct{ Events []json.RawMessage }
	body := bigMessage(b, 1<<20)
	if err := json.Unmarshal(body, &m); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range m.Events {
			catalog.DecodeEvent(raw)
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	g := simulate.New(1)
	for _, typ := range append(catalog.TypeNames(), "unknown.type") {
		b, _ := json.Marshal(g.Event(typ))
		f.Add(b)
	}
	for _, s := range []string{``, `{}`, `null`, `[`, `{"type":"media.ready","payload":{"media":null}}`,
		`{"type":"viewing_session.percent_watched","payload":{"percent_watched":1e400}}`,
		`{"type":"media.updated","payload":{"previous_attributes":"x"}}`, `{"a\u00e9":"\ud83d\ude00"}`,
		`{"uuid":"a","uuid":"b","type":"media.created","payload":{"media":{"id":1,"id":"x","thumbnail":{"url":2}},"media":{"id":"y"},"project":[]}}`,
		`{"type":"viewing_session.play","payload":{"visitor":{"id":"v","email":"e","name":null},"viewing_session":"s","media":{"duration":null}}}`,
		`{"type":"viewing_session.percent_watched","metadata":{"account_id":7},"payload":{"visitor":{"email":"e"},"percent_watched":50.0}}`,
		`{"type":"media.localization_created","payload":{"localization":{"enabled":true,"enabled":false,"source_media":{"duration":"1"},"transcript":{}}}}`,
		`{"type":"live_event.registration","payload":{"location":{"a":"b","c":1},"utm":null,"registration":{"fields":{"email":"x@y","email":"z"}},"live_event":{"starts_at":"2026-01-01T00:00:00+02:00"}}}`,
		`{"type":"unknown.x","payload":{"media":{"id":"m"},"a":[1]},"payload":{}}`, `{"type":"media.deleted","payload":{"media":{"id":"\u0041","name":"n"}}}`,
		"{\"uuid\":\"\xff\",\"type\":\"media.ready\"}", `{"a":1} {"b":2}`, strings.Repeat("[", 600) + strings.Repeat("]", 600)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e := catalog.DecodeEvent(raw)
		if e.Summary == "" {
			t.Errorf("empty summary for %q", raw)
		}
		if json.Valid(raw) != (len(e.Problems) == 0 || !strings.Contains(e.Problems[0].Message, "not valid JSON")) {
			t.Errorf("validity disagrees with encoding/json for %q: %+v", raw, e.Problems)
		}
		for _, p := range e.Problems {
			if p.Severity != catalog.SeverityError && p.Severity != catalog.SeverityWarning && p.Severity != catalog.SeverityNotice {
				t.Errorf("%q: severity %q", raw, p.Severity)
			}
		}
	})
}
