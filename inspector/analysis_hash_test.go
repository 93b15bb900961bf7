package inspector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// TestAnalysisHashesMatchOracle checks that the hashes the engine stores
// equal those earlier versions stored (the oracle) for every event type,
// small messages and a big one, plus events the earlier writer had to
// defer or be careful with (repeated keys, escapes, non-ASCII).
func TestAnalysisHashesMatchOracle(t *testing.T) {
	eng := inspector.NewEngine(nil, inspector.Options{})
	check := func(name string, body []byte, wantEvents int) {
		t.Helper()
		d := &inspector.Delivery{ID: 1, Method: http.MethodPost, Path: "/", Headers: simulate.HeadersFor(body, nil), Body: body, BodyLength: int64(len(body))}
		a := eng.Analyze(context.Background(), d)
		if a.Error != nil || len(a.Events) != wantEvents {
			t.Fatalf("%s: error %v, %d events, want %d", name, a.Error, len(a.Events), wantEvents)
		}
		for i, e := range a.Events {
			want := inspector.OracleCanonicalHash(e.Raw)
			if e.Hash != want {
				t.Errorf("%s: event %d (%s): stored hash %s, oracle %s", name, i, e.Type, e.Hash, want)
			}
		}
	}
	for seed := int64(1); seed <= 5; seed++ {
		g := simulate.New(seed)
		var evs []simulate.Event
		for _, typ := range catalog.TypeNames() {
			evs = append(evs, g.Event(typ))
			check(fmt.Sprintf("seed %d %s", seed, typ), g.Message(g.Event(typ)).Body(), 1)
		}
		check(fmt.Sprintf("seed %d all types", seed), g.Message(evs...).Body(), len(evs))
	}
	g := simulate.New(6)
	var big []simulate.Event
	for len(big) < 400 {
		for _, typ := range catalog.TypeNames() {
			big = append(big, g.Event(typ))
		}
	}
	check("400+ events", g.Message(big...).Body(), len(big))

	odd := []string{
		`{"uuid":"a","a":1,"a":2}`,
		`{"\u0075uid":"a","uuid":"b"}`,
		`{"uuid":"é – \u00e9 \ud83d\ude00 \u2028 \u0007 \"q\" \\ \/","type":"media.ready"}`,
		`{"z":[{"b":[1,2.50,-0e+1],"a":true}],"y":null,"x":{}}`,
	}
	var raws []json.RawMessage
	for _, o := range odd {
		raws = append(raws, json.RawMessage(o))
	}
	msg, _ := json.Marshal(map[string]any{"hook": map[string]string{"uuid": "h"}, "events": raws})
	check("odd events", msg, len(odd))
	check("odd events, indented", bytes.ReplaceAll(msg, []byte(`,"`), []byte(",\n   \"")), len(odd))
}
