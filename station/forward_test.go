package station_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// TestForwardByteExact: the app gets every captured header's name and
// value as the service wrote them (net/http orders them; the signature
// intact; Host set for the app; hop-by-hop headers and the ones
// Connection names dropped; a chunked body framed with its real length)
// and the body byte for byte, with this receiver's loop mark.
func TestForwardByteExact(t *testing.T) {
	app := newRawApp(t, "")
	st := open(t, "", &forward.Config{Routes: routes(t, app.url("/app/hook?v=1"))})
	body := `{"hook":{"uuid":"h1"},"events":[]}`
	sig := inspector.Sign([]byte("s"), []byte(body))
	for _, tc := range []struct {
		name, wire string
		want       []string
	}{
		{
			name: "content-length",
			wire: "POST /webhooks?ignored=1 HTTP/1.1\r\nhost: " + st.Addr() + "\r\nX-Service-Signature: " + sig + "\r\ncontent-TYPE: application/json\r\nUser-Agent: Service-Webhooks/0.0.47\r\nConnection: keep-alive, X-Hop\r\nX-Hop: drop me\r\nX-Odd:   spaced\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body,
			want: []string{"Host: " + app.ln.Addr().String(), "X-Service-Signature: " + sig, "content-TYPE: application/json", "User-Agent: Service-Webhooks/0.0.47",
				"X-Odd: spaced", "Content-Length: " + fmt.Sprint(len(body))},
		},
		{
			name: "chunked",
			wire: "POST /webhooks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Service-Signature: " + sig + "\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body),
			want: []string{"Host: " + app.ln.Addr().String(), "X-Service-Signature: " + sig, "Content-Length: " + fmt.Sprint(len(body))},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(app.requests())
			if line := rawPost(t, st.Addr(), tc.wire); !strings.Contains(line, "200") {
				t.Fatalf("receiver answered %q", line)
			}
			app.waitFor(t, "received the delivery", 10*time.Second, func(r [][]byte) bool { return len(r) > before })
			head, got, _ := strings.Cut(string(app.requests()[before]), "\r\n\r\n")
			lines := strings.Split(head, "\r\n")
			want := append(slices.Clone(tc.want), inspector.ForwardedHeader+": "+st.Forwarder().Instance())
			slices.Sort(want)
			fields := slices.Sorted(slices.Values(lines[1:]))
			if lines[0] != "POST /app/hook?v=1 HTTP/1.1" || !slices.Equal(fields, want) || got != body {
				t.Errorf("the app got\n%q\nwant the request line, the headers\n%q\nand the body", app.requests()[before], want)
			}
		})
	}
}

// TestForwardRoutesByGlobAndKeepsBatchesWhole: a message goes whole to
// every route one of its events matches; a malformed delivery goes to the
// catch-all only (and nowhere with SkipMalformed).
func TestForwardRoutesByGlobAndKeepsBatchesWhole(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprint("skip malformed ", skip), func(t *testing.T) {
			media, viewing, all := newRawApp(t, ""), newRawApp(t, ""), newRawApp(t, "")
			st := open(t, "", &forward.Config{SkipMalformed: skip, Routes: routes(t,
				"media.*="+media.url("/media"), "viewing_session.*="+viewing.url("/v"), all.url("/all"))})
			url := "http://" + st.Addr() + "/webhooks"
			g := simulate.New(1)
			mediaOnly := message(g, "media.ready")
			batch := message(g, "media.created", "viewing_session.play", "live_event.registration")
			other := message(g, "live_event.registration")
			for _, b := range [][]byte{mediaOnly, batch, other, []byte("not json")} {
				if code, _ := post(t, url, b, nil); code != 200 {
					t.Fatalf("receiver answered %d", code)
				}
			}
			wantAll := []string{string(mediaOnly), string(batch), string(other)}
			if !skip {
				wantAll = append(wantAll, "not json")
			}
			all.waitFor(t, "got everything", 10*time.Second, func(r [][]byte) bool { return len(r) == len(wantAll) })
			media.waitFor(t, "got its two", 10*time.Second, func(r [][]byte) bool { return len(r) == 2 })
			viewing.waitFor(t, "got the batch", 10*time.Second, func(r [][]byte) bool { return len(r) == 1 })
			time.Sleep(100 * time.Millisecond)
			if got := all.bodies(); !slices.Equal(got, wantAll) {
				t.Errorf("catch-all got %d bodies, want %d in order", len(got), len(wantAll))
			}
			if got := media.bodies(); !slices.Equal(got, []string{string(mediaOnly), string(batch)}) {
				t.Errorf("media route got %q", got)
			}
			if got := viewing.bodies(); !slices.Equal(got, []string{string(batch)}) {
				t.Errorf("viewing route got %d bodies, want the whole batch once", len(got))
			}
		})
	}
}

// TestForwardAppDownThenUp: while the app is down the receiver acks at
// once and the queue waits; when the app comes back on the same port
// every delivery arrives, in order, once.
func TestForwardAppDownThenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	st := open(t, "", &forward.Config{Routes: routes(t, "http://"+addr+"/hook")})
	var events []forward.Event
	var mu sync.Mutex
	st.Forwarder().Subscribe(func(e forward.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	url := "http://" + st.Addr() + "/webhooks"
	g := simulate.New(2)
	var want []string
	for range 30 {
		b := message(g, "media.updated")
		if code, _ := post(t, url, b, nil); code != 200 {
			t.Fatalf("receiver answered %d while the app is down", code)
		}
		want = append(want, string(b))
	}
	time.Sleep(600 * time.Millisecond)
	rs := st.Forwarder().Status()
	if rs[0].State != forward.RouteDown || rs[0].Waiting != 30 {
		t.Errorf("route status while down: %+v (want down, 30 waiting)", rs[0])
	}
	if !strings.Contains(rs[0].LastError, "nothing is listening on "+addr+" (connection refused); start it") {
		t.Errorf("last error %q does not say the app is not running", rs[0].LastError)
	}
	app := newRawApp(t, addr)
	app.waitFor(t, "got all 30", 15*time.Second, func(r [][]byte) bool { return len(r) >= 30 })
	time.Sleep(200 * time.Millisecond)
	if got := app.bodies(); !slices.Equal(got, want) {
		t.Fatalf("the app got %d bodies; want the 30 in order, once each", len(got))
	}
	mu.Lock()
	defer mu.Unlock()
	refused := 0
	for _, e := range events {
		if e.Kind == forward.AttemptDone && e.Attempt.Outcome == forward.Refused {
			refused++
			if e.Attempt.NextAt.IsZero() {
				t.Errorf("a refused attempt without a next retry time: %+v", e.Attempt)
			}
		}
	}
	if refused == 0 {
		t.Error("no refused attempt was reported while the app was down")
	}
	if !slices.ContainsFunc(events, func(e forward.Event) bool {
		return e.Kind == forward.RouteChanged && e.Route.State == forward.RouteDown && e.Route.Waiting == 30
	}) {
		t.Error("no route report said the app is down with 30 deliveries waiting")
	}
}

// TestForwardRetriesThenGivesUp: an app answering 500 gets the delivery
// 1 + Retries times, then the queue moves on; the next rejected delivery
// gets one try (the streak), and a delivered one ends the streak.
func TestForwardRetriesThenGivesUp(t *testing.T) {
	app := newRawApp(t, "")
	app.setAnswer(func(req []byte) (int, string, time.Duration) {
		if strings.Contains(string(req), "media.ready") {
			return 200, "fine", 0
		}
		return 500, "boom: nil pointer\nstack...", 0
	})
	st := open(t, "", &forward.Config{Routes: routes(t, app.url("/")), Policy: forward.Policy{Retries: 2}})
	url := "http://" + st.Addr() + "/webhooks"
	g := simulate.New(3)
	first, second, good := message(g, "media.failed"), message(g, "media.failed"), message(g, "media.ready")
	var ids []int64
	for _, b := range [][]byte{first, second, good} {
		code, _ := post(t, url, b, nil)
		if code != 200 {
			t.Fatal(code)
		}
	}
	app.waitFor(t, "got 3 + 1 + 1 requests", 20*time.Second, func(r [][]byte) bool { return len(r) >= 5 })
	got := app.bodies()
	want := []string{string(first), string(first), string(first), string(second), string(good)}
	if !slices.Equal(got, want) {
		t.Fatalf("the app got %d requests in another order than 3x first, 1x second, 1x good", len(got))
	}
	recs, err := st.Store().List(context.Background(), storage.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	waitAttempts(t, st, ids[0], 3)
	as, _ := st.Forwarder().Attempts(context.Background(), ids[0])
	last := as[len(as)-1]
	if !last.GaveUp || !last.Final || last.Status != 500 || !strings.Contains(last.Error, "the app answered 500 Internal Server Error: boom: nil pointer …") {
		t.Errorf("last attempt of the first delivery: %+v", last)
	}
	if as[0].NextAt.IsZero() || !strings.Contains(as[0].Error, "tries again in 1 s (retry 1 of 2)") {
		t.Errorf("first attempt does not say when it is retried: %q", as[0].Error)
	}
	waitAttempts(t, st, ids[2], 1)
	badges, err := st.Forwarder().Badges(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if badges[ids[0]].Text != "→ 500" || badges[ids[0]].State != "failed" || badges[ids[2]].Text != "→ 200" || badges[ids[2]].State != "delivered" {
		t.Errorf("badges: %+v", badges)
	}
}

// waitAttempts waits until a delivery has n recorded attempts.
func waitAttempts(t *testing.T, st interface {
	Forwarder() *forward.Forwarder
}, id int64, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		as, err := st.Forwarder().Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %d has %d recorded attempts, want %d", id, len(as), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPassThrough: the service gets the app's answer (status, headers,
// body), 502 when nothing listens, 504 when the app is too slow; every
// attempt is recorded with the status the service got.
func TestPassThrough(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name    string
		status  int
		delay   time.Duration
		target  string
		want    int
		wantErr string
		outcome forward.Outcome
	}{
		{name: "200", status: 200, want: 200, outcome: forward.Delivered},
		{name: "500", status: 500, want: 500, wantErr: "the app answered 500", outcome: forward.Rejected},
		{name: "timeout", status: 200, delay: 4 * time.Second, want: 504, wantErr: "accepted the connection but did not answer within", outcome: forward.Timeout},
		{name: "refused", target: "http://" + deadAddr + "/", want: 502, wantErr: "nothing is listening on " + deadAddr, outcome: forward.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := newRawApp(t, "")
			app.setAnswer(func([]byte) (int, string, time.Duration) { return tc.status, "app says " + tc.name, tc.delay })
			target := tc.target
			if target == "" {
				target = app.url("/hook")
			}
			st := open(t, "", &forward.Config{Mode: forward.ModePassThrough, Routes: routes(t, target), Policy: forward.Policy{Timeout: 1500 * time.Millisecond}})
			body := message(simulate.New(4), "media.ready")
			req, _ := simulate.NewRequest(context.Background(), "http://"+st.Addr()+"/webhooks", body, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("the service got %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want < 502 && resp.Header.Get("X-App") != "yes" {
				t.Errorf("the app's headers were not relayed: %v", resp.Header)
			}
			id := resp.Header.Get("X-Hookscope-Delivery")
			var did int64
			fmt.Sscan(id, &did)
			waitAttempts(t, st, did, 1)
			as, _ := st.Forwarder().Attempts(context.Background(), did)
			a := as[0]
			if a.Kind != forward.KindPassThrough || a.Relayed != tc.want || a.Outcome != tc.outcome || !strings.Contains(a.Error, tc.wantErr) {
				t.Errorf("attempt: kind %s relayed %d outcome %s error %q", a.Kind, a.Relayed, a.Outcome, a.Error)
			}
			rec, err := st.Store().Get(context.Background(), did)
			if err != nil {
				t.Fatal(err)
			}
			// The status stored is the one the service got.
			if rec.Delivery.Status != tc.want || rec.Delivery.Answer != inspector.AnswerPassThrough {
				t.Errorf("stored status %d (%s), want %d: what the service got", rec.Delivery.Status, rec.Delivery.Answer, tc.want)
			}
		})
	}
}

// TestForwardResignVerifiedBySecondReceiver: re-signed with the app's
// development secret, the forwarded request verifies at a receiver that
// knows only that secret; the original signature would not.
func TestForwardResignVerifiedBySecondReceiver(t *testing.T) {
	appSecret := []byte("app-dev-secret")
	second := open(t, "", nil, appSecret)
	st := open(t, "", &forward.Config{Routes: routes(t, "http://"+second.Addr()+"/webhooks"), ResignSecret: appSecret,
		Headers: []inspector.Header{{Name: "X-Forwarded-By", Value: "hookscope"}}}, []byte("service-secret"))
	var mu sync.Mutex
	var got []*inspector.Record
	second.Engine().Subscribe(func(r *inspector.Record) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	})
	body := message(simulate.New(5), "media.ready")
	if code, _ := post(t, "http://"+st.Addr()+"/webhooks", body, []byte("service-secret")); code != 200 {
		t.Fatal(code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second receiver got nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := got[0]
	if r.Analysis.Signature.Status != inspector.SignatureValid || string(r.Delivery.Body) != string(body) {
		t.Errorf("second receiver: signature %s, body equal %v", r.Analysis.Signature.Status, string(r.Delivery.Body) == string(body))
	}
	if v, _ := r.Delivery.Header("X-Forwarded-By"); v != "hookscope" {
		t.Errorf("added header missing: %v", r.Delivery.Headers)
	}
	waitAttempts(t, st, 1, 1)
	as, _ := st.Forwarder().Attempts(context.Background(), 1)
	if !as[0].Resigned {
		t.Error("attempt not marked re-signed")
	}
	for _, h := range as[0].ResponseHeaders {
		if strings.Contains(h.Value, string(appSecret)) {
			t.Errorf("the secret is in a stored header: %v", h)
		}
	}
}

// TestForwardAgain sends a stored delivery once more, recorded as such.
func TestForwardAgain(t *testing.T) {
	var hits sync.Map
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore("n", new(int))
		*(n.(*int))++
	}))
	defer app.Close()
	st := open(t, filepath.Join(t.TempDir(), "h.db"), &forward.Config{Routes: routes(t, app.URL+"/x")})
	if code, _ := post(t, "http://"+st.Addr()+"/", message(simulate.New(6), "media.ready"), nil); code != 200 {
		t.Fatal(code)
	}
	waitAttempts(t, st, 1, 1)
	as, err := st.Forwarder().ForwardAgain(context.Background(), 1, "")
	if err != nil || len(as) != 1 || as[0].Kind != forward.KindAgain || as[0].Status != 200 {
		t.Fatalf("forward again: %v %+v", err, as)
	}
	waitAttempts(t, st, 1, 2)
	all, _ := st.Forwarder().Attempts(context.Background(), 1)
	if all[1].Number != 2 {
		t.Errorf("second attempt numbered %d", all[1].Number)
	}
	if _, err := st.Forwarder().ForwardAgain(context.Background(), 99, ""); err == nil || !strings.Contains(err.Error(), "no such delivery") {
		t.Errorf("forward again of a missing delivery: %v", err)
	}
	if _, err := st.Forwarder().ForwardAgain(context.Background(), 1, "nope"); err == nil || !strings.Contains(err.Error(), `no route "nope"`) {
		t.Errorf("forward again to a missing route: %v", err)
	}
}
