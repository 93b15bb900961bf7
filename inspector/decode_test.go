package inspector

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector/catalog"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		events  int
		errHas  string
		wantOff int64
	}{
		{"one event", `{"hook":{"uuid":"h1"},"events":[{"uuid":"e1","type":"media.ready","payload":{},"metadata":{"account_id":"a"},"generated_at":"2026-01-01T00:00:00Z"}]}`, 1, "", 0},
		{"batched", `{"hook":{"uuid":"h1"},"events":[{"uuid":"e1"},{"uuid":"e2"},{"uuid":"e3"}]}`, 3, "", 0},
		{"empty events array", `{"hook":{"uuid":"h1"},"events":[]}`, 0, "", 0},
		{"16-hex uuid is fine", `{"hook":{"uuid":"0123456789abcdef"},"events":[{"uuid":"0123456789abcdef"}]}`, 1, "", 0},
		{"empty body", ``, 0, "empty", -1},
		{"syntax error with offset", `{"hook":{"uuid":"h1"},"events":[}`, 0, "byte offset 32", 32},
		{"truncated", `{"hook":{"uuid":"h1"},"ev`, 0, "ends early", 0},
		{"array top level", `[1,2]`, 0, "JSON array", 0},
		{"null", `null`, 0, "null", 0},
		{"no hook", `{"events":[]}`, 0, `no "hook"`, -1},
		{"hook not object", `{"hook":"x","events":[]}`, 0, `"hook" is a string`, -1},
		{"hook uuid number", `{"hook":{"uuid":5},"events":[]}`, 0, `"hook.uuid" is a number`, -1},
		{"no events", `{"hook":{"uuid":"h"}}`, 0, `no "events"`, -1},
		{"events object", `{"hook":{"uuid":"h"},"events":{"uuid":"e"}}`, 0, `"events" is an object`, -1},
		{"event not object", `{"hook":{"uuid":"h"},"events":["x"]}`, 0, `events[0] is a string`, -1},
		{"trailing garbage", `{"hook":{"uuid":"h"},"events":[]} xyz`, 0, "after the JSON", 0},
		{"invalid utf-8", "{\"hook\":{\"uuid\":\"h\xff\"},\"events\":[]}", 0, "UTF-8", 18},
		{"too deep", `{"hook":{"uuid":"h"},"events":[` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `]}`, 0, "nesting deeper", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tt.body))
			if tt.errHas == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(m.Events) != tt.events {
					t.Fatalf("events = %d, want %d", len(m.Events), tt.events)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tt.errHas)
			}
			de := err.(*DecodeError)
			if !strings.Contains(de.Reason, tt.errHas) {
				t.Fatalf("reason %q does not mention %q", de.Reason, tt.errHas)
			}
			if tt.wantOff != 0 && de.Offset != tt.wantOff {
				t.Fatalf("offset = %d, want %d", de.Offset, tt.wantOff)
			}
		})
	}
}

func TestDecodeEnvelopeFields(t *testing.T) {
	m, err := DecodeMessage([]byte(`{"hook":{"uuid":"h1"},"events":[{"uuid":"e1","type":"media.ready","payload":{"media":{"id":"m1"}},"metadata":{"account_id":"acc"},"generated_at":"2026-01-02T03:04:05.5Z"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := m.Events[0]
	if m.HookUUID != "h1" || e.UUID != "e1" || e.Type != "media.ready" || e.AccountID != "acc" || e.GeneratedAt.Nanosecond() != 5e8 {
		t.Fatalf("fields: %+v", e)
	}
	if s := catalog.DecodeEvent(e.Raw).Subject; s != "media:m1" {
		t.Fatalf("subject = %q", s)
	}
}

func TestCanonicalHash(t *testing.T) {
	a := CanonicalHash(json.RawMessage(`{"b":1,"a":{"y":[1,2],"x":"é"}}`))
	b := CanonicalHash(json.RawMessage("{ \"a\" : {\"x\":\"\\u00e9\", \"y\":[1, 2]},\n \"b\":1 }"))
	c := CanonicalHash(json.RawMessage(`{"b":2,"a":{"y":[1,2],"x":"é"}}`))
	if a != b {
		t.Fatal("formatting changed the canonical hash")
	}
	if a == c {
		t.Fatal("different content has the same hash")
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"hook":{"uuid":"h1"},"events":[{"uuid":"e1","type":"media.ready","payload":{"media":{"id":"m"}},"metadata":{"account_id":"a"},"generated_at":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"hook":{"uuid":"h1"},"events":[}`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := DecodeMessage(body)
		if err == nil && (m == nil || m.HookUUID == "") {
			t.Fatal("success without a hook uuid")
		}
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		for _, e := range m.Events {
			_ = CanonicalHash(e.Raw)
		}
	})
}
