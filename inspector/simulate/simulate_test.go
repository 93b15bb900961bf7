package simulate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

func decodeAll(t *testing.T, body []byte) []catalog.Event {
	t.Helper()
	m, err := inspector.DecodeMessage(body)
	if err != nil {
		t.Fatalf("split: %v\n%s", err, body)
	}
	out := make([]catalog.Event, len(m.Events))
	for i, r := range m.Events {
		out[i] = catalog.DecodeEvent(r.Raw)
	}
	return out
}

func TestEveryTypeHasZeroProblems(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 0} {
		g := simulate.New(seed)
		for _, typ := range catalog.TypeNames() {
			ev := g.Event(typ)
			body := g.Message(ev).Body()
			got := decodeAll(t, body)
			if len(got) != 1 {
				t.Fatalf("%s: %d events", typ, len(got))
			}
			e := got[0]
			if !e.Known || e.Type != typ || e.Payload == nil {
				t.Errorf("%s: decoded as %+v", typ, e)
			}
			if len(e.Problems) != 0 {
				t.Errorf("seed %d %s: problems %+v\n%s", seed, typ, e.Problems, catalog.Pretty(body))
			}
		}
	}
}

var (
	mediaID   = regexp.MustCompile(`^[a-z0-9]{10}$`)
	eventID   = regexp.MustCompile(`^[0-9a-f]{16}$`)
	visitorID = regexp.MustCompile(`^v20\d{6}_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$`)
)

func TestIDShapes(t *testing.T) {
	g := simulate.New(7)
	ev := g.Event(catalog.TypeViewingPlay)
	p := ev.Payload.(*catalog.ViewingPlay)
	if !mediaID.MatchString(p.Media.ID) || !eventID.MatchString(ev.UUID) || !visitorID.MatchString(p.Visitor.ID) {
		t.Errorf("ids: media %q event %q visitor %q", p.Media.ID, ev.UUID, p.Visitor.ID)
	}
	if !strings.HasSuffix(ev.GeneratedAt, "Z") {
		t.Errorf("generated_at %q is not UTC", ev.GeneratedAt)
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := simulate.New(42).Scenario(simulate.ScenarioAtLeastOnce, simulate.ScenarioOptions{})
	b, _ := simulate.New(42).Scenario(simulate.ScenarioAtLeastOnce, simulate.ScenarioOptions{})
	if len(a) != len(b) {
		t.Fatalf("lengths differ")
	}
	for i := range a {
		if !bytes.Equal(a[i].Body(), b[i].Body()) {
			t.Fatalf("message %d differs:\n%s\n%s", i, a[i].Body(), b[i].Body())
		}
	}
	c, _ := simulate.New(43).Scenario(simulate.ScenarioAtLeastOnce, simulate.ScenarioOptions{})
	if bytes.Equal(a[0].Body(), c[0].Body()) {
		t.Errorf("different seeds gave the same message")
	}
}

func TestHeaders(t *testing.T) {
	g := simulate.New(5)
	m := g.Message(g.Event(catalog.TypeMediaReady), g.Event(catalog.TypeMediaDeleted))
	body := m.Body()
	h := m.Headers([]byte("s3cret"))
	want := []string{"User-Agent", "X-Service-Signature", "Content-Type", "Content-Length"}
	if len(h) != len(want) {
		t.Fatalf("headers %+v", h)
	}
	for i, w := range want {
		if h[i].Name != w {
			t.Errorf("header %d = %s, want %s", i, h[i].Name, w)
		}
	}
	if h[0].Value != "Service-Webhooks/0.0.47" || h[2].Value != "application/json" || h[3].Value != strconv.Itoa(len(body)) {
		t.Errorf("header values %+v", h)
	}
	if h[1].Value != inspector.Sign([]byte("s3cret"), body) {
		t.Errorf("signature %s", h[1].Value)
	}
	for _, x := range m.Headers(nil) {
		if x.Name == inspector.SignatureHeader {
			t.Errorf("unsigned message has a signature header")
		}
	}
	if bytes.Contains(body, []byte(`\u0026`)) {
		t.Errorf("body escapes & as the service does not: %s", body)
	}
}

// TestSendToServer posts every type and every scenario to an httptest
// server and checks each request as a receiver would.
func TestSendToServer(t *testing.T) {
	secret := []byte("whsec-test")
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer srv.Close()
	g := simulate.New(9)
	var msgs []simulate.Message
	for _, typ := range catalog.TypeNames() {
		msgs = append(msgs, g.Message(g.Event(typ)))
	}
	for _, s := range simulate.Scenarios() {
		ms, err := g.Scenario(s, simulate.ScenarioOptions{Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, ms...)
	}
	sendAll(t, srv.URL+"/hook", secret, msgs)
	if len(got) != len(msgs) {
		t.Fatalf("server saw %d requests, sent %d", len(got), len(msgs))
	}
	for i, r := range got {
		sig := r.Header.Get(inspector.SignatureHeader)
		if v := inspector.Verify(sig, sig != "", bodies[i], [][]byte{secret}); v.Status != inspector.SignatureValid {
			t.Errorf("request %d: signature %s: %s", i, v.Status, v.Reason)
		}
		if r.Method != http.MethodPost || r.URL.Path != "/hook" {
			t.Errorf("request %d: %s %s", i, r.Method, r.URL.Path)
		}
		if p := catalog.CheckDelivery(r.Header, int64(len(bodies[i]))); len(p) != 0 {
			t.Errorf("request %d: delivery problems %+v", i, p)
		}
		for _, e := range decodeAll(t, bodies[i]) {
			if len(e.Problems) != 0 {
				t.Errorf("request %d %s: %+v", i, e.Type, e.Problems)
			}
		}
	}
}

func TestScenarios(t *testing.T) {
	g := simulate.New(11)
	types := func(ms []simulate.Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Types()...)
		}
		return strings.Join(s, " ")
	}
	ms, _ := g.Scenario(simulate.ScenarioMediaLifecycle, simulate.ScenarioOptions{})
	if got := types(ms); got != "media.created media.processing media.ready" || len(ms) != 3 {
		t.Errorf("media-lifecycle: %d messages, %s", len(ms), got)
	}
	ms, _ = g.Scenario(simulate.ScenarioMediaFailed, simulate.ScenarioOptions{Batch: 10})
	if got := types(ms); got != "media.created media.processing media.failed" || len(ms) != 1 {
		t.Errorf("media-failed: %d messages, %s", len(ms), got)
	}
	ms, _ = g.Scenario(simulate.ScenarioViewingSession, simulate.ScenarioOptions{})
	want := "viewing_session.play viewing_session.percent_watched viewing_session.turnstile.converted viewing_session.percent_watched viewing_session.percent_watched viewing_session.percent_watched"
	if got := types(ms); got != want {
		t.Errorf("viewing-session: %s", got)
	}
	ms, _ = g.Scenario(simulate.ScenarioAtLeastOnce, simulate.ScenarioOptions{})
	seen := map[string]int{}
	hooks := map[string]int{}
	n := 0
	for _, m := range ms {
		hooks[m.Hook.UUID]++
		for _, e := range m.Events {
			seen[e.UUID]++
			n++
		}
	}
	if len(seen) != 9 || n < 18 {
		t.Errorf("at-least-once: %d distinct events, %d sent", len(seen), n)
	}
	for u, c := range seen {
		if c < 2 {
			t.Errorf("event %s sent %d times", u, c)
		}
	}
	if len(hooks) != len(ms)-1 {
		t.Errorf("at-least-once should re-send exactly one message whole: %d hooks for %d messages", len(hooks), len(ms))
	}
	if _, err := g.Scenario("nope", simulate.ScenarioOptions{}); err == nil || !strings.Contains(err.Error(), "media-lifecycle") {
		t.Errorf("unknown scenario error %v", err)
	}
}

func TestBodyIsTheMessageShape(t *testing.T) {
	g := simulate.New(3)
	var m struct {
		Hook   struct{ UUID string }
		Events []map[string]json.RawMessage
	}
	if err := json.Unmarshal(g.Message(g.Event(catalog.TypeMediaCreated)).Body(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Hook.UUID) != 32 || len(m.Events) != 1 {
		t.Fatalf("%+v", m)
	}
	for _, k := range []string{"uuid", "type", "payload", "metadata", "generated_at"} {
		if _, ok := m.Events[0][k]; !ok {
			t.Errorf("event lacks %s", k)
		}
	}
}
