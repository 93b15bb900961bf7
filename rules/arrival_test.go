package rules

import (
	"reflect"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// arrivalSeeds are bodies at the edges of what DecodeMessage takes.
var arrivalSeeds = []string{
	`{"hook":{"uuid":"h"},"events":[]}`,
	`{"hook":{"uuid":"h"},"events":[{"uuid":"e","type":"media.ready","generated_at":"2026-03-01T09:00:00Z","metadata":{"account_id":"a"},"payload":{"media":{"id":"m"}}}]}`,
	` {"events":[{"type":1,"uuid":null,"payload":null,"metadata":null}],"hook":{"uuid":"h","uuid":"h2"},"events":[{"type":"x","type":"y","metadata":{"ACCOUNT_ID":"b","account_id":"c"}}]} `,
	`{"hook":{"uuid":"h\u00e9\n"},"events":[{"metadata":"a","payload":[1,2]},{"metadata":{"account_id":7}}]}`,
	`{"hook":{"uuid":"h"},"events":[{"payload":null,"uuid":null,"generated_at":"2026-03-01 09:00:00"}, {}]}`,
	`{"hook":{"uuid":""},"events":[]}`,
	`{"hook":{"uuid":"h"},"events":[1]}`,
	`{"hook":{"uuid":"h"},"events":null}`,
	`{"hook":null,"events":[]}`,
	`{"hook":{"uuid":"h"},"events":[]} x`,
	`{"hook":{"uuid":"h"},"events":[{"uuid":"\ud800"}]}`,
	`{"hook":{"uuid":"h"},"events":[{"metadata":{"accounT_iD":"k","aççount_id":"x"}}]}`,
	`[]`, `null`, ``, `{`,
}

// FuzzDecodeArrival: the arrival view's one-pass decoding takes a body
// only when it gives what DecodeMessage gives.
func FuzzDecodeArrival(f *testing.F) {
	for _, s := range arrivalSeeds {
		f.Add([]byte(s))
	}
	g := simulate.New(5)
	for _, ty := range catalog.Types() {
		f.Add(g.Message(g.Event(ty.Name), g.Event(ty.Name)).Body())
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := decodeArrival(&scanner{}, body)
		if !ok {
			return
		}
		slow, err := inspector.DecodeMessage(body)
		if err != nil {
			t.Fatalf("%q: taken, but DecodeMessage refuses it: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\n fast %+v\n slow %+v", body, fast, slow)
		}
	})
}

// TestDecodeArrivalTakes: the bodies the receiver gets are taken (not
// left to the slower path).
func TestDecodeArrivalTakes(t *testing.T) {
	g := simulate.New(6)
	for _, ty := range catalog.Types() {
		if _, ok := decodeArrival(&scanner{}, g.Message(g.Event(ty.Name), g.Event(ty.Name)).Body()); !ok {
			t.Errorf("a message of %s is left to DecodeMessage", ty.Name)
		}
	}
}
