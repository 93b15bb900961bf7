package rules

import (
	"testing"

	"github.com/hookscope/hookscope/inspector"
)

// TestLazyJSON: payloads read lazily answer as decoded ones would: nested
// presence, equality with literals, size, in, iteration, lists, numbers,
// escapes and repeated names.
func TestLazyJSON(t *testing.T) {
	body := []byte(`{"hook":{"uuid":"h"},"events":[
		{"uuid":"a","type":"media.updated","payload":{"media":{"id":"m1","name":"say \"hi\"","duration":12.5,"tags":["x","y"]},
		 "previous_attributes":{"thumbnail":{"url":"u"}},"n":null,"dup":1,"dup":2,"k\u00e9y":true},"metadata":{"account_id":"acc"}},
		{"uuid":"b","type":"media.ready","payload":{"media":{"id":"m2"}}}]}`)
	r := &inspector.Record{Delivery: &inspector.Delivery{ID: 1, Body: body, BodyLength: int64(len(body))}}
	for expr, want := range map[string]bool{
		`has(events[0].payload.previous_attributes.thumbnail.url)`:                          true,
		`has(events[1].payload.previous_attributes.thumbnail)`:                              false,
		`events[0].payload.media.name == "say \"hi\""`:                                      true,
		`events[0].payload.media.duration > 12 && events[0].payload.media.duration < 13`:    true,
		`events[0].payload.media.tags == ["x", "y"] && "y" in events[0].payload.media.tags`: true,
		`events[0].payload.previous_attributes == {"thumbnail": {"url": "u"}}`:              true,
		`events[0].payload.previous_attributes.thumbnail.size() == 1`:                       true,
		`"media" in events[0].payload && !("nope" in events[0].payload)`:                    true,
		`events[0].payload.exists(k, k == "previous_attributes")`:                           true,
		`events[0].payload.n == null && has(events[0].payload.n)`:                           true,
		`events[0].payload.dup == 2`:                                                        true,
		`events[0].payload["kéy"]`:                                                          true,
		`events[0].metadata.account_id == "acc" && events[1].payload.media.id == "m2"`:      true,
		`events.exists(e, e.payload.media.id == "m2")`:                                      true,
	} {
		got, err := mustCompile(t, expr, Stored).Eval(Input{Record: r})
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
}
