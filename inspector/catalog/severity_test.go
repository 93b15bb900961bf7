package catalog_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector/catalog"
)

// identifying are the fields docs/catalog.md's table counts as identifying:
// missing, null or empty, each is an error. Every other documented field
// is descriptive: missing or null, a warning.
var identifying = map[string]bool{
	"uuid": true, "type": true, "metadata": true, "metadata.account_id": true, "generated_at": true, "payload": true,
	"payload.media": true, "payload.media.id": true, "payload.project.id": true,
	"payload.transcript": true, "payload.transcript.hashed_id": true, "payload.transcript.language_code": true,
	"payload.localization": true, "payload.localization.hashed_id": true, "payload.localization.language_code": true,
	"payload.localization.source_media.hashed_id": true, "payload.localization.transcript.hashed_id": true,
	"payload.visitor": true, "payload.visitor.id": true, "payload.viewing_session": true, "payload.viewing_session.id": true,
	"payload.percent_watched": true, "payload.email": true,
	"payload.live_event": true, "payload.live_event.id": true, "payload.registration": true, "payload.registration.visitor_key": true,
}

// optional fields may be left out: no problem when they are.
var optional = map[string]bool{
	"payload.name": true, "payload.transcript.reason": true, "payload.visitor.email": true, "payload.visitor.name": true,
}

// open objects take any key: removing one of their members is no problem.
var open = []string{"payload.previous_attributes.", "payload.registration.fields.", "payload.location.", "payload.utm."}

// paths lists the JSON path of every member of m, parents before children.
func paths(m map[string]any, prefix string) []string {
	var out []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out = append(out, p)
		if sub, ok := m[k].(map[string]any); ok {
			out = append(out, paths(sub, p)...)
		}
	}
	return out
}

// edit applies f to the object holding the member at path and that
// member's key.
func edit(e map[string]any, path string, f func(parent map[string]any, key string)) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		f(e, path)
		return
	}
	f(at(e, path[:i]), path[i+1:])
}

// TestSeverityFollowsConsequence removes each field of a valid event of
// each of the 17 types in turn, then sets it to null: an identifying field
// gives exactly one error, a descriptive one exactly one warning citing
// the spec's section, an optional or open-object member nothing.
func TestSeverityFollowsConsequence(t *testing.T) {
	for _, typ := range catalog.TypeNames() {
		for _, path := range paths(event(t, typ), "") {
			isOpen := false
			for _, o := range open {
				isOpen = isOpen || strings.HasPrefix(path, o)
			}
			for _, op := range []string{"missing", "null"} {
				e := event(t, typ)
				edit(e, path, func(parent map[string]any, key string) {
					if op == "missing" {
						delete(parent, key)
					} else {
						parent[key] = nil
					}
				})
				raw, _ := json.Marshal(e)
				got := catalog.DecodeEvent(raw)
				var want catalog.Severity
				switch {
				case isOpen && op == "missing", optional[path] && op == "missing":
					if len(got.Problems) != 0 {
						t.Errorf("%s: %s %s: want no problem, got %+v", typ, path, op, got.Problems)
					}
					continue
				case isOpen:
					continue // a null inside an open object: its own rule (values are strings)
				case identifying[path]:
					want = catalog.SeverityError
				default:
					want = catalog.SeverityWarning
				}
				if len(got.Problems) != 1 {
					t.Errorf("%s: %s %s: want exactly one %s, got %+v", typ, path, op, want, got.Problems)
					continue
				}
				p := got.Problems[0]
				if p.Severity != want || p.Path != path {
					t.Errorf("%s: %s %s: got %s at %s (%s), want %s", typ, path, op, p.Severity, p.Path, p.Message, want)
				}
				if want == catalog.SeverityWarning && !strings.Contains(p.Message, "(spec ") {
					t.Errorf("%s: %s %s: the warning cites no spec section: %s", typ, path, op, p.Message)
				}
			}
		}
	}
}

// TestExtraFieldsAreNotices: fields the spec does not list, in the
// envelope or at any depth of any type's payload, are notices (open
// objects take any key and say nothing).
func TestExtraFieldsAreNotices(t *testing.T) {
	for _, typ := range catalog.TypeNames() {
	paths:
		for _, path := range append(paths(event(t, typ), ""), "") {
			for _, o := range open {
				if strings.HasPrefix(path+".", o) {
					continue paths
				}
			}
			e := event(t, typ)
			parent := e
			if path != "" {
				v, ok := lookupPath(e, path).(map[string]any)
				if !ok {
					continue
				}
				parent = v
			}
			parent["x_added_later"] = "new"
			raw, _ := json.Marshal(e)
			got := catalog.DecodeEvent(raw)
			if len(got.Problems) != 1 || got.Problems[0].Severity != catalog.SeverityNotice {
				t.Errorf("%s: extra field in %s: %+v", typ, path, got.Problems)
			}
		}
	}
}

func lookupPath(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// TestRepeatedKey: a repeated key is a warning, and the last value is the
// one checked, typed and summarised, as encoding/json reads it.
func TestRepeatedKey(t *testing.T) {
	raw := `{"uuid":"a","type":"media.ready","payload":{"media":{"id":"m1","name":"First","name":"Second","url":"u","duration":1,"thumbnail":{"url":"t"}}},"metadata":{"account_id":"1"},"generated_at":"2026-03-02T09:00:00Z"}`
	got := catalog.DecodeEvent(json.RawMessage(raw))
	if len(got.Problems) != 1 || got.Problems[0].Severity != catalog.SeverityWarning || got.Problems[0].Path != "payload.media.name" {
		t.Fatalf("problems %+v", got.Problems)
	}
	if p := got.Payload.(*catalog.MediaReady); p.Media.Name != "Second" || !strings.Contains(got.Summary, `"Second"`) {
		t.Errorf("payload %+v, summary %q", p.Media, got.Summary)
	}
	for _, f := range got.Fields {
		if f.Path == "payload.media.name" && f.Value != "Second" {
			t.Errorf("field list shows %q", f.Value)
		}
	}
}

func TestSubject(t *testing.T) {
	tests := []struct{ payload, want string }{
		{`{"media":{"id":"m"},"viewing_session":{"id":"s"}}`, "viewing_session:s"},
		{`{"live_event":{"id":"l"}}`, "live_event:l"},
		{`{"media":{"id":"m"}}`, "media:m"},
		{`{"media":{"id":5}}`, ""},
		{`{"media":{"id":""},"viewing_session":{"id":null}}`, ""},
		{`"nope"`, ""},
	}
	for _, tt := range tests {
		for _, typ := range []string{catalog.TypeMediaReady, "unknown.type"} {
			raw := `{"type":"` + typ + `","payload":` + tt.payload + `}`
			if got := catalog.DecodeEvent(json.RawMessage(raw)).Subject; got != tt.want {
				t.Errorf("%s: subject %q, want %q", raw, got, tt.want)
			}
		}
	}
}
