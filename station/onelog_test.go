package station_test

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
)

// TestTwoStationsOneStoreForwardOnce: two receivers on one store with the
// same route (the window and `listen`) forward each delivery once, in id
// order, whichever received it; when the one forwarding stops, the other
// takes the route over and sends what arrives next, skipping nothing.
// (Two processes forwarded half of the deliveries twice, unmarked, broke
// the route's order and never sent the first delivery.)
func TestTwoStationsOneStoreForwardOnce(t *testing.T) {
	app := newRawApp(t, "")
	db := filepath.Join(t.TempDir(), "shared.db")
	cfg := func() *forward.Config { return &forward.Config{Routes: routes(t, app.url("/hook"))} }
	a := open(t, db, cfg())
	b := open(t, db, cfg())
	g := simulate.New(31)
	var sent [][]byte
	postTo := func(st *station.Station, n int) {
		for range n {
			body := message(g, "media.ready")
			if code, _ := post(t, "http://"+st.Addr()+"/webhooks", body, nil); code != 200 {
				t.Fatalf("answered %d", code)
			}
			sent = append(sent, body)
		}
	}
	for range 20 {
		postTo(a, 3)
		postTo(b, 2)
	}
	app.waitFor(t, "got the 100 deliveries", 20*time.Second, func(r [][]byte) bool { return len(r) >= 100 })
	standby := 0
	for _, st := range []*station.Station{a, b} {
		if st.ForwardStatus()[0].State == forward.RouteStandby {
			standby++
		}
	}
	if standby != 1 {
		t.Errorf("%d of the two stations are on standby, want 1", standby)
	}
	// The one forwarding stops; the other takes over from the cursor.
	holder, other := a, b
	if a.ForwardStatus()[0].State == forward.RouteStandby {
		holder, other = b, a
	}
	// Stopped between sends (one under way would be sent again, marked as
	// a re-forward: the kill -9 tests cover that).
	waitAttempts(t, holder, 100, 1)
	if err := holder.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	postTo(other, 10)
	app.waitFor(t, "got the 110 deliveries", 20*time.Second, func(r [][]byte) bool { return len(r) >= 110 })
	time.Sleep(300 * time.Millisecond) // a send too many would arrive by now
	checkOnceInOrder(t, other, app.bodies(), sent)
}

// checkOnceInOrder checks that the app got each of sent once, in the
// order of the ids the store gave them.
func checkOnceInOrder(t *testing.T, st *station.Station, got []string, sent [][]byte) {
	t.Helper()
	idOf := map[string]int64{}
	if err := st.Store().Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		idOf[string(r.Delivery.Body)] = r.Delivery.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var last int64
	for i, b := range got {
		if seen[b] {
			t.Errorf("the app got delivery %d twice", idOf[b])
		}
		seen[b] = true
		if id := idOf[b]; id < last {
			t.Errorf("the app got delivery %d after %d (receipt %d)", id, last, i)
		} else {
			last = id
		}
	}
	for _, b := range sent {
		if !seen[string(b)] {
			t.Errorf("delivery %d never reached the app", idOf[string(b)])
		}
	}
}

// TestRouteBackToTheReceiverRefused: a route to the receiver's own
// address (by its address, localhost or 127.0.0.1 on its port) is
// refused with a reason; one forwarding loop through another hop is
// stopped by the X-Hookscope-Forwarded mark (the receiver refuses a
// request it forwarded itself: 508, not stored), in both modes.
func TestRouteBackToTheReceiverRefused(t *testing.T) {
	st := open(t, "", nil)
	_, port, _ := net.SplitHostPort(st.Addr())
	for _, target := range []string{"http://" + st.Addr() + "/webhooks", "localhost:" + port, "http://[::1]:" + port + "/x"} {
		err := st.SetForward(context.Background(), &forward.Config{Routes: routes(t, target)})
		if !errors.Is(err, station.ErrRouteToSelf) {
			t.Errorf("route %s: %v, want it refused", target, err)
		}
	}
	for _, mode := range []forward.Mode{forward.ModeAck, forward.ModePassThrough} {
		t.Run(string(mode), func(t *testing.T) {
			st := open(t, "", nil)
			self, _ := url.Parse("http://" + st.Addr())
			var hops sync.WaitGroup
			proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(self)) // the other hop
			defer proxy.Close()
			defer hops.Wait()
			if err := st.SetForward(context.Background(), &forward.Config{Routes: routes(t, proxy.URL+"/back"), Mode: mode,
				Policy: forward.Policy{Retries: forward.NoRetries}}); err != nil {
				t.Fatal(err)
			}
			code, _ := post(t, "http://"+st.Addr()+"/webhooks", message(simulate.New(5), "media.ready"), nil)
			waitAttempts(t, st, 1, 1)
			as, _ := st.ForwardAttempts(context.Background(), 1)
			if as[0].Status != http.StatusLoopDetected || !strings.Contains(as[0].Error, "508") {
				t.Errorf("the forward of delivery 1: %+v", as[0])
			}
			if mode == forward.ModePassThrough && code != http.StatusLoopDetected {
				t.Errorf("the service got %d, want the loop's 508", code)
			}
			time.Sleep(300 * time.Millisecond)
			if s, _ := st.Store().Stats(context.Background()); s.Deliveries != 1 {
				t.Errorf("%d deliveries stored from one, want 1", s.Deliveries)
			}
		})
	}
}

// TestPassThroughAnswerCutOrLong: an app answer cut mid-body (Content-
// Length 1000, 11 bytes, then close) is a failed attempt and the service
// gets 502 (it got a complete 200 and the delivery was recorded as
// delivered); an answer over RelayMaxResponse reaches the service cut
// there, and the header and the attempt say so.
func TestPassThroughAnswerCutOrLong(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := readRaw(bufio.NewReader(c))
				if err != nil {
					return
				}
				if strings.Contains(string(req), "media.failed") {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhello world")
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(long), long)
			}()
		}
	}()
	st := open(t, "", &forward.Config{Routes: routes(t, "http://"+ln.Addr().String()+"/"), Mode: forward.ModePassThrough})
	g := simulate.New(8)
	resp, err := http.Post("http://"+st.Addr()+"/webhooks", "application/json", strings.NewReader(string(message(g, "media.failed"))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("an answer cut short reached the service as %d, want 502", resp.StatusCode)
	}
	waitAttempts(t, st, 1, 1)
	as, _ := st.ForwardAttempts(context.Background(), 1)
	if a := as[0]; a.OK() || a.Outcome != forward.Dropped || a.Relayed != 502 || !strings.Contains(a.Error, "cut short after 11 bytes of the 1000 it announced") {
		t.Errorf("the cut answer's attempt: %s relayed %d %q", a.Outcome, a.Relayed, a.Error)
	}
	resp, err = http.Post("http://"+st.Addr()+"/webhooks", "application/json", strings.NewReader(string(message(g, "media.ready"))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != forward.RelayMaxResponse || !strings.Contains(resp.Header.Get(forward.CutHeader), fmt.Sprintf("was %d bytes", len(long))) {
		t.Errorf("a long answer: %d, %d bytes, %s %q", resp.StatusCode, len(b), forward.CutHeader, resp.Header.Get(forward.CutHeader))
	}
	waitAttempts(t, st, 2, 1)
	as, _ = st.ForwardAttempts(context.Background(), 2)
	if a := as[0]; !a.OK() || !a.RelayCut || a.ResponseLength != int64(len(long)) {
		t.Errorf("the long answer's attempt: %s cut %v length %d", a.Outcome, a.RelayCut, a.ResponseLength)
	}
}

// TestForwardToHTTPSWithPrivateCA: an https app whose certificate a
// private CA signed: refused with a pointer to --forward-ca without it,
// delivered with Config.CAFile, and delivered with Insecure, each of
// those attempts marked.
func TestForwardToHTTPSWithPrivateCA(t *testing.T) {
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	app.Config.ErrorLog = log.New(io.Discard, "", 0)
	app.StartTLS()
	defer app.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: app.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	st := open(t, "", nil)
	g := simulate.New(6)
	for i, tc := range []struct {
		name    string
		cfg     forward.Config
		outcome forward.Outcome
		text    string
	}{
		{"system roots", forward.Config{}, forward.Unreachable, "--forward-ca FILE (the window: Trust CA file…), or --forward-insecure"},
		{"CA file", forward.Config{CAFile: ca}, forward.Delivered, ""},
		{"insecure", forward.Config{Insecure: true}, forward.Delivered, ""},
	} {
		cfg := tc.cfg
		cfg.Routes, cfg.Policy = routes(t, app.URL+"/"), forward.Policy{Retries: forward.NoRetries, Timeout: 2 * time.Second}
		if err := st.SetForward(context.Background(), &cfg); err != nil {
			t.Fatal(err)
		}
		post(t, "http://"+st.Addr()+"/webhooks", message(g, "media.ready"), nil)
		id := int64(i + 1)
		waitAttempts(t, st, id, 1)
		as, _ := st.ForwardAttempts(context.Background(), id)
		if a := as[0]; a.Outcome != tc.outcome || !strings.Contains(a.Error, tc.text) || a.Insecure != tc.cfg.Insecure {
			t.Errorf("%s: %s %q insecure %v", tc.name, a.Outcome, a.Error, a.Insecure)
		}
	}
}

// TestResignOnlyWhatVerified: with a re-sign secret, a delivery whose
// signature verified reaches the app re-signed; a forged one (no valid
// signature) goes unsigned, or with SkipUnverified not at all (recorded
// as skipped, the queue moving on); each attempt says what it did.
func TestResignOnlyWhatVerified(t *testing.T) {
	svc, appSecret := []byte("service-secret"), []byte("app-secret")
	app := newRawApp(t, "")
	g := simulate.New(12)
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip=%v", skip), func(t *testing.T) {
			before := len(app.requests())
			st := open(t, "", &forward.Config{Routes: routes(t, app.url("/")), ResignSecret: appSecret, SkipUnverified: skip}, svc)
			good, forged := message(g, "media.ready"), message(g, "media.ready")
			post(t, "http://"+st.Addr()+"/webhooks", good, svc)
			post(t, "http://"+st.Addr()+"/webhooks", forged, []byte("not the service's"))
			waitAttempts(t, st, 2, 1)
			reqs := app.requests()[before:]
			want := 2
			if skip {
				want = 1
			}
			if len(reqs) != want {
				t.Fatalf("the app got %d requests, want %d", len(reqs), want)
			}
			if !strings.Contains(string(reqs[0]), inspector.Sign(appSecret, good)) {
				t.Errorf("the verified delivery was not re-signed:\n%s", reqs[0])
			}
			if !skip && strings.Contains(strings.ToLower(string(reqs[1])), "x-service-signature") {
				t.Errorf("the forged delivery reached the app with a signature:\n%s", reqs[1])
			}
			as, _ := st.ForwardAttempts(context.Background(), 2)
			a := as[0]
			switch {
			case a.Resigned || !strings.Contains(a.NotResigned, "its own signature is invalid"):
				t.Errorf("forged delivery's attempt: resigned %v, %q", a.Resigned, a.NotResigned)
			case skip && (a.Outcome != forward.Skipped || !a.Final):
				t.Errorf("skipped attempt: %s final %v", a.Outcome, a.Final)
			case !skip && a.Outcome != forward.Delivered:
				t.Errorf("unsigned attempt: %s", a.Outcome)
			}
		})
	}
}

// TestUnrecordedForwardIsNotSent: while the store cannot record a
// route's attempts (a full disk), nothing is sent to the app (it was:
// after a restart 86-98 % of deliveries reached it a second time); the
// fault is said once, and once the store works the deliveries go, once
// each, in order.
func TestUnrecordedForwardIsNotSent(t *testing.T) {
	app := newRawApp(t, "")
	var mu sync.Mutex
	var said []string
	st, err := station.Open(context.Background(), station.Config{
		DBPath: filepath.Join(t.TempDir(), "h.db"), Addr: "127.0.0.1:0", Forward: &forward.Config{Routes: routes(t, app.url("/"))},
		Engine: inspector.Options{Logf: func(f string, a ...any) {
			mu.Lock()
			said = append(said, fmt.Sprintf(f, a...))
			mu.Unlock()
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	ctx := context.Background()
	if _, err := st.Store().SQL().ExecContext(ctx, `CREATE TRIGGER full_disk BEFORE UPDATE ON forward_routes
		BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	g := simulate.New(14)
	var sent [][]byte
	for range 5 {
		b := message(g, "media.ready")
		if code, _ := post(t, "http://"+st.Addr()+"/webhooks", b, nil); code != 200 {
			t.Fatalf("answered %d", code)
		}
		sent = append(sent, b)
	}
	time.Sleep(1500 * time.Millisecond) // several tries to record
	if n := len(app.requests()); n != 0 {
		t.Fatalf("the app got %d deliveries whose attempts could not be recorded", n)
	}
	if _, err := st.Store().SQL().ExecContext(ctx, `DROP TRIGGER full_disk`); err != nil {
		t.Fatal(err)
	}
	app.waitFor(t, "got the 5 deliveries", 15*time.Second, func(r [][]byte) bool { return len(r) >= 5 })
	time.Sleep(300 * time.Millisecond)
	checkOnceInOrder(t, st, app.bodies(), sent)
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(said, "\n")
	if strings.Count(all, "cannot record attempts in the store since") != 1 || strings.Count(all, "recording attempts again") != 1 {
		t.Errorf("the fault was not said once each way:\n%s", all)
	}
}
