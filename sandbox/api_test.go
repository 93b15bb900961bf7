package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// tokenFor runs the flow for app as the manager and returns an access token.
func tokenFor(t *testing.T, base string, app App) string {
	t.Helper()
	code := login(t, base, "manager@example.com", "manager", app, nil).Query().Get("code")
	status, tok, _ := tokenCall(t, base, exchangeParams(app, code))
	if status != 200 {
		t.Fatalf("exchange: %d %v", status, tok)
	}
	return tok["access_token"].(string)
}

// call makes an API request and decodes a JSON object or array.
func call(t *testing.T, method, u string, header http.Header, body io.Reader) (int, http.Header, any) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, u, err)
	}
	return resp.StatusCode, resp.Header, v
}

func TestMediaTokenMethods(t *testing.T) {
	clk := newClock()
	_, base := newTest(t, Config{Now: clk.Now})
	tok := tokenFor(t, base, DefaultApp())
	bearer := http.Header{"Authorization": {"Bearer " + tok}}
	tests := []struct {
		name   string
		path   string
		header http.Header
		status int
		errSub string
	}{
		{"access_token query", "/v1/medias/k3j9x2m7pq?access_token=" + tok, nil, 200, ""},
		{"bearer_token query", "/v1/medias/k3j9x2m7pq?bearer_token=" + tok, nil, 200, ""},
		{"authorization header", "/v1/medias/k3j9x2m7pq", bearer, 200, ""},
		{".json suffix", "/v1/medias/k3j9x2m7pq.json", bearer, 200, ""},
		{"no token", "/v1/medias/k3j9x2m7pq", nil, 401, "no access token"},
		{"unknown token", "/v1/medias/k3j9x2m7pq?access_token=nope", nil, 401, "unknown"},
		{"basic scheme", "/v1/medias/k3j9x2m7pq", http.Header{"Authorization": {"Basic abc"}}, 401, "Bearer"},
		{"conflicting tokens", "/v1/medias/k3j9x2m7pq?access_token=other", bearer, 400, "different tokens"},
		{"unknown media", "/v1/medias/zzzzzzzzzz", bearer, 404, "no media"},
		{"other account's media", "/v1/medias/r2e5w8q1ma", bearer, 404, "no media"},
		{"list", "/v1/medias", bearer, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, v := call(t, "GET", base+tc.path, tc.header, nil)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, v)
			}
			if tc.errSub != "" {
				m := v.(map[string]any)
				if !strings.Contains(m["error_description"].(string), tc.errSub) {
					t.Fatalf("error %v lacks %q", m, tc.errSub)
				}
				if status == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 without WWW-Authenticate: Bearer")
				}
				if strings.Contains(m["error_description"].(string), tok) {
					t.Errorf("error echoes the token")
				}
				return
			}
			if tc.name == "list" {
				if l, ok := v.([]any); !ok || len(l) != 3 {
					t.Fatalf("list = %v, want Acme's 3 medias", v)
				}
				return
			}
			m := v.(map[string]any)
			if m["id"] != "k3j9x2m7pq" || m["hashed_id"] != "k3j9x2m7pq" || m["name"] != "Product tour" || m["duration"] != 187.32 ||
				m["url"] != "https://acme-studio.video.example/medias/k3j9x2m7pq" {
				t.Fatalf("media %v", m)
			}
			if th, _ := m["thumbnail"].(map[string]any); th == nil || !strings.HasPrefix(th["url"].(string), "https://") {
				t.Fatalf("thumbnail %v", m["thumbnail"])
			}
			if p, _ := m["project"].(map[string]any); p == nil || p["name"] != "Marketing" {
				t.Fatalf("project %v", m["project"])
			}
		})
	}
	clk.Advance(DefaultTokenTTL + time.Minute)
	status, _, v := call(t, "GET", base+"/v1/medias/k3j9x2m7pq", bearer, nil)
	if status != 401 || !strings.Contains(v.(map[string]any)["error_description"].(string), "expired") {
		t.Fatalf("expired token: %d %v", status, v)
	}
}

func TestScopeEnforcement(t *testing.T) {
	mk := func(id string, scopes ...string) App {
		a := DefaultApp()
		a.ClientID, a.Name, a.Scopes = id, id, scopes
		return a
	}
	apps := []App{mk("stats", "stats:read"), mk("upload", "media:upload"), mk("read", "all:read"), mk("all", "all:all")}
	_, base := newTest(t, Config{Apps: apps})
	toks := map[string]string{}
	for _, a := range apps {
		toks[a.ClientID] = tokenFor(t, base, a)
	}
	tests := []struct {
		app, method, path string
		status            int
	}{
		{"stats", "GET", "/v1/medias/k3j9x2m7pq", 403},
		{"upload", "GET", "/v1/medias/k3j9x2m7pq", 200}, // medias#show is in media:upload
		{"upload", "GET", "/v1/medias", 403},
		{"read", "GET", "/v1/medias/k3j9x2m7pq", 200},
		{"read", "PUT", "/v1/medias/k3j9x2m7pq", 403},
		{"all", "PUT", "/v1/medias/k3j9x2m7pq", 200},
	}
	for _, tc := range tests {
		t.Run(tc.app+" "+tc.method+" "+tc.path, func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + toks[tc.app]}, "Content-Type": {"application/json"}}
			status, _, v := call(t, tc.method, base+tc.path, h, strings.NewReader(`{"name":"Renamed"}`))
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, v)
			}
			if status == 403 && v.(map[string]any)["error"] != "insufficient_scope" {
				t.Fatalf("403 body %v", v)
			}
		})
	}
}

func TestUploadRefusesAuthorizationHeader(t *testing.T) {
	_, base := newTest(t, Config{ProcessingDelay: time.Millisecond})
	tok := tokenFor(t, base, DefaultApp())
	status, _, v := call(t, "POST", base+"/upload", http.Header{"Authorization": {"Bearer " + tok}}, strings.NewReader("video bytes"))
	if status != 401 || !strings.Contains(v.(map[string]any)["error_description"].(string), "only the access_token and bearer_token query") {
		t.Fatalf("header upload: %d %v", status, v)
	}
	for _, p := range []string{"access_token", "bearer_token"} {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "launch.mp4")
		_, _ = fw.Write([]byte("not really a video"))
		_ = mw.Close()
		status, _, v := call(t, "POST", base+"/upload?"+p+"="+tok, http.Header{"Content-Type": {mw.FormDataContentType()}}, &buf)
		if status != 200 || v.(map[string]any)["name"] != "launch" {
			t.Fatalf("%s upload: %d %v", p, status, v)
		}
	}
}

// receiver is a webhook consumer for tests: it verifies and records.
type receiver struct {
	got chan delivered
}

type delivered struct {
	header http.Header
	body   []byte
	length int64
	msg    struct {
		Hook   struct{ UUID string } `json:"hook"`
		Events []struct {
			UUID     string          `json:"uuid"`
			Type     string          `json:"type"`
			Payload  json.RawMessage `json:"payload"`
			Metadata struct {
				AccountID string `json:"account_id"`
			} `json:"metadata"`
			GeneratedAt string `json:"generated_at"`
		} `json:"events"`
	}
}

func newReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{got: make(chan delivered, 64)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d := delivered{header: r.Header.Clone(), body: b, length: r.ContentLength}
		if err := json.Unmarshal(b, &d.msg); err != nil {
			t.Errorf("delivery is not a webhook message: %v", err)
		}
		rc.got <- d
	}))
	t.Cleanup(ts.Close)
	return rc, ts.URL + "/hooks?k=v"
}

func (rc *receiver) next(t *testing.T) delivered {
	t.Helper()
	select {
	case d := <-rc.got:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery arrived")
	}
	return delivered{}
}

var testSecret = []byte("whsec-test")

func TestPutEmitsSignedMediaUpdated(t *testing.T) {
	rc, hookURL := newReceiver(t)
	_, base := newTest(t, Config{WebhookURL: hookURL, WebhookSecret: testSecret})
	tok := tokenFor(t, base, DefaultApp())
	form := url.Values{"name": {"Product tour (2026)"}, "description": {"A three-minute walk through the product."}}
	status, _, v := call(t, "PUT", base+"/v1/medias/k3j9x2m7pq?access_token="+tok,
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, strings.NewReader(form.Encode()))
	if status != 200 || v.(map[string]any)["name"] != "Product tour (2026)" {
		t.Fatalf("PUT: %d %v", status, v)
	}
	d := rc.next(t)
	res := inspector.Verify(d.header.Get(inspector.SignatureHeader), true, d.body, [][]byte{testSecret})
	if res.Status != inspector.SignatureValid {
		t.Fatalf("signature %s: %s", res.Status, res.Reason)
	}
	if d.header.Get("User-Agent") != "Service-Webhooks/0.0.47" || d.header.Get("Content-Type") != "application/json" ||
		d.length != int64(len(d.body)) {
		t.Fatalf("headers %v", d.header)
	}
	if len(d.msg.Events) != 1 || d.msg.Hook.UUID == "" {
		t.Fatalf("message %s", d.body)
	}
	ev := d.msg.Events[0]
	if ev.Type != "media.updated" || ev.Metadata.AccountID != "741302" || !strings.HasSuffix(ev.GeneratedAt, "Z") || len(ev.UUID) != 32 {
		t.Fatalf("event %+v", ev)
	}
	var p struct {
		Media              map[string]any    `json:"media"`
		Project            map[string]any    `json:"project"`
		PreviousAttributes map[string]string `json:"previous_attributes"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatal(err)
	}
	// Only the name changed: the description was sent unchanged.
	if p.Media["name"] != "Product tour (2026)" || p.Project["name"] != "Marketing" ||
		len(p.PreviousAttributes) != 1 || p.PreviousAttributes["name"] != "Product tour" {
		t.Fatalf("payload %s", ev.Payload)
	}
	// A PUT that changes nothing emits nothing; the next delivery is the
	// DELETE's.
	call(t, "PUT", base+"/v1/medias/k3j9x2m7pq?access_token="+tok, http.Header{"Content-Type": {"application/json"}}, strings.NewReader(`{"name":"Product tour (2026)"}`))
	call(t, "DELETE", base+"/v1/medias/k3j9x2m7pq?access_token="+tok, nil, nil)
	if d := rc.next(t); len(d.msg.Events) != 1 || d.msg.Events[0].Type != "media.deleted" || string(d.msg.Events[0].Payload) != `{"media":{"id":"k3j9x2m7pq"},"project":{"id":"mkt4a1b2c3","name":"Marketing"}}` {
		t.Fatalf("after no-op PUT and DELETE got %s", d.body)
	}
}

func TestLifecycleInOrder(t *testing.T) {
	rc, hookURL := newReceiver(t)
	s, base := newTest(t, Config{WebhookURL: hookURL, WebhookSecret: testSecret, ProcessingDelay: time.Millisecond})
	resp, err := http.Post(base+"/sandbox/lifecycle?account_id=741388&name=Demo", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("lifecycle: %d", resp.StatusCode)
	}
	var types []string
	for range 3 {
		d := rc.next(t)
		for _, e := range d.msg.Events {
			types = append(types, e.Type)
			if e.Metadata.AccountID != "741388" {
				t.Errorf("account %s", e.Metadata.AccountID)
			}
		}
	}
	if strings.Join(types, " ") != "media.created media.processing media.ready" {
		t.Fatalf("types %v", types)
	}
	if _, err := s.Lifecycle("nope", "x", false); err == nil {
		t.Fatal("Lifecycle accepted an unknown account")
	}
}

func TestAtLeastOnce(t *testing.T) {
	rc, hookURL := newReceiver(t)
	s, err := New(Config{WebhookURL: hookURL, WebhookSecret: testSecret, AtLeastOnce: true, Seed: 7, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Force every behaviour so the test does not depend on luck. The
	// worker reads these only after receiving an event, and the channel
	// send orders these writes before that.
	s.hooks.dupRate, s.hooks.shuffleRate, s.hooks.lateRate, s.hooks.maxBatch = 1, 1, 0, 2
	s.hooks.batchWindow = 500 * time.Millisecond
	for i := range 3 {
		s.emit("media.updated", "741302", map[string]int{"n": i})
	}
	seen := map[int]int{} // payload n -> copies received
	var first []int
	hooks := map[string]int{}
	for i := 0; ; i++ {
		d := rc.next(t)
		if res := inspector.Verify(d.header.Get(inspector.SignatureHeader), true, d.body, [][]byte{testSecret}); res.Status != inspector.SignatureValid {
			t.Fatalf("delivery %d: signature %s", i, res.Status)
		}
		hooks[d.msg.Hook.UUID]++
		for _, e := range d.msg.Events {
			var p struct{ N int }
			_ = json.Unmarshal(e.Payload, &p)
			seen[p.N]++
			if i == 0 {
				first = append(first, p.N)
			}
		}
		if len(seen) == 3 && seen[0] >= 2 && seen[1] >= 2 && seen[2] >= 2 {
			break
		}
	}
	// Batching: 3 events in at most 2 per message means 2 or 3 messages,
	// each sent twice with the same hook uuid.
	for h, n := range hooks {
		if n != 2 {
			t.Errorf("message %s delivered %d times, want 2 (duplicate)", h, n)
		}
	}
	// Out of order: the messages left in reverse, so the first delivery
	// does not hold the first event.
	for _, n := range first {
		if n == 0 {
			t.Errorf("first delivery holds the first event %v: not reordered", first)
		}
	}
}

func TestArrangeLate(t *testing.T) {
	s, err := New(Config{WebhookURL: "http://127.0.0.1:1/", AtLeastOnce: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s.Close() // only arrange is exercised; no worker may read the knobs
	h := s.hooks
	h.dupRate, h.shuffleRate, h.lateRate, h.maxBatch = 0, 0, 1, 1
	evs := []simulate.Event{s.newEvent("media.created", "741302", map[string]any{}), s.newEvent("media.processing", "741302", map[string]any{})}
	now, late := h.arrange(evs)
	if len(now) != 0 || len(late) != 2 {
		t.Fatalf("lateRate 1: now %d, late %d", len(now), len(late))
	}
	h.lateRate, h.dupRate = 0, 1
	now, late = h.arrange(evs)
	if len(now) != 4 || len(late) != 0 || now[0].Hook.UUID != now[2].Hook.UUID {
		t.Fatalf("dupRate 1: now %d, late %d", len(now), len(late))
	}
	s.cfg.AtLeastOnce = false
	now, late = h.arrange(evs)
	if len(now) != 2 || len(late) != 0 || now[0].Events[0].Type != "media.created" {
		t.Fatalf("in order: now %d, late %d", len(now), len(late))
	}
}
