package sandbox

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// checkContract decodes a delivery with the inspector's catalogue and fails
// on any error or warning: what the sandbox sends must be spec-exact.
func checkContract(t *testing.T, d delivered) []catalog.Event {
	t.Helper()
	for _, p := range catalog.CheckDelivery(d.header, d.length) {
		if p.Severity != catalog.SeverityNotice {
			t.Errorf("delivery: %s %s: %s", p.Severity, p.Path, p.Message)
		}
	}
	m, err := inspector.DecodeMessage(d.body)
	if err != nil {
		t.Fatalf("split %s: %v", d.body, err)
	}
	var out []catalog.Event
	for _, me := range m.Events {
		raw := me.Raw
		ev := catalog.DecodeEvent(raw)
		for _, p := range ev.Problems {
			if p.Severity != catalog.SeverityNotice {
				t.Errorf("%s: %s %s: %s\n%s", ev.Type, p.Severity, p.Path, p.Message, raw)
			}
		}
		out = append(out, ev)
	}
	return out
}

func TestEveryEventPassesTheCatalogue(t *testing.T) {
	rc, hookURL := newReceiver(t)
	_, base := newTest(t, Config{WebhookURL: hookURL, WebhookSecret: testSecret, ProcessingDelay: time.Millisecond})
	for _, typ := range catalog.TypeNames() {
		resp, err := http.Post(base+"/sandbox/events?"+url.Values{"type": {typ}, "media_id": {"h8d2f5w1zc"}}.Encode(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: status %d", typ, resp.StatusCode)
		}
		evs := checkContract(t, rc.next(t))
		if len(evs) != 1 || evs[0].Type != typ || evs[0].AccountID != "741302" {
			t.Fatalf("%s: got %+v", typ, evs)
		}
		// The sandbox's media replaced the simulator's.
		var p struct {
			Media struct {
				ID string `json:"id"`
			} `json:"media"`
		}
		d, _ := json.Marshal(evs[0].Payload)
		_ = json.Unmarshal(d, &p)
		if strings.HasPrefix(typ, "media.") || strings.HasPrefix(typ, "viewing_session.") {
			if p.Media.ID != "h8d2f5w1zc" {
				t.Errorf("%s: media id %q, want the sandbox's h8d2f5w1zc", typ, p.Media.ID)
			}
		}
	}
	// The events the sandbox makes itself: life cycle, update, delete.
	resp, err := http.Post(base+"/sandbox/lifecycle?name=Contract", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for range 3 {
		checkContract(t, rc.next(t))
	}
	tok := tokenFor(t, base, DefaultApp())
	call(t, "PUT", base+"/v1/medias/h8d2f5w1zc?access_token="+tok, http.Header{"Content-Type": {"application/json"}}, strings.NewReader(`{"name":"New <name> & more"}`))
	checkContract(t, rc.next(t))
	call(t, "DELETE", base+"/v1/medias/h8d2f5w1zc?access_token="+tok, nil, nil)
	checkContract(t, rc.next(t))

	resp, err = http.Post(base+"/sandbox/events?type=media.nope", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("unknown type: %d", resp.StatusCode)
	}
}
