package station_test

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/station"
)

// TestRetentionKeepsWhatForwardingOwes: the store is cut back to Keep
// deliveries, except those a route still owes (its app is down).
func TestRetentionKeepsWhatForwardingOwes(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		fwd  *forward.Config
		want int64
	}{
		{"no forwarding", nil, 3},
		{"app down", &forward.Config{Routes: routes(t, "http://"+dead+"/")}, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := station.Open(context.Background(), station.Config{DBPath: filepath.Join(t.TempDir(), "h.db"), Addr: "127.0.0.1:0", Keep: 3, Forward: tc.fwd})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close(context.Background())
			g := simulate.New(9)
			for range 12 {
				post(t, "http://"+st.Addr()+"/", message(g, "media.ready"), nil)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				s, err := st.Store().Stats(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if s.Deliveries == tc.want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d deliveries kept, want %d", s.Deliveries, tc.want)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(1200 * time.Millisecond) // another prune round
			if s, _ := st.Store().Stats(context.Background()); s.Deliveries != tc.want {
				t.Errorf("%d deliveries kept, want %d", s.Deliveries, tc.want)
			}
		})
	}
}

// TestPassThroughSeveralRoutes: the first matching route answers the
// service; the others get the delivery too and are recorded.
func TestPassThroughSeveralRoutes(t *testing.T) {
	first, second := newRawApp(t, ""), newRawApp(t, "")
	first.setAnswer(func([]byte) (int, string, time.Duration) { return 201, "first", 0 })
	second.setAnswer(func([]byte) (int, string, time.Duration) { return 500, "second", 0 })
	st := open(t, "", &forward.Config{Mode: forward.ModePassThrough, Routes: routes(t, "live_event.*="+second.url("/"), first.url("/a"), second.url("/b"))})
	code, body := post(t, "http://"+st.Addr()+"/", message(simulate.New(10), "media.ready"), nil)
	if code != 201 || body != "first" {
		t.Fatalf("the service got %d %q, want the first matching route's 201", code, body)
	}
	second.waitFor(t, "got the side copy", 5*time.Second, func(r [][]byte) bool { return len(r) == 1 })
	waitAttempts(t, st, 1, 2)
	as, _ := st.Forwarder().Attempts(context.Background(), 1)
	got := map[string]int{}
	for _, a := range as {
		got[a.Target] = a.Relayed*1000 + a.Status
	}
	if got[first.url("/a")] != 201201 || got[second.url("/b")] != 500 {
		t.Errorf("attempts by target (relayed*1000+status): %v", got)
	}
}

// TestForwardWarnsOnceAndStoresNoSecrets: a target off this machine is
// warned about once; the token in its URL and the re-sign secret appear in
// nothing stored or reported.
func TestForwardWarnsOnceAndStoresNoSecrets(t *testing.T) {
	app := newRawApp(t, "")
	u := strings.Replace(app.url("/h?token=tok-SECRET-1"), "127.0.0.1", "user:pw-SECRET-2@127.0.0.1", 1)
	var logs []string
	var mu sync.Mutex
	logf := func(f string, a ...any) {
		mu.Lock()
		logs = append(logs, f)
		mu.Unlock()
	}
	rs := routes(t, u, "http://192.0.2.1:9/never")
	fwd := &forward.Config{Routes: rs[:1], ResignSecret: []byte("resign-SECRET-3")}
	f, err := forward.New(forward.Config{Routes: rs}, forward.Options{Store: nil, Logf: logf})
	if err == nil || f != nil {
		t.Fatal("a forwarder without a store was accepted")
	}
	db := filepath.Join(t.TempDir(), "h.db")
	st, err := station.Open(context.Background(), station.Config{DBPath: db, Addr: "127.0.0.1:0", Forward: fwd, Engine: inspector.Options{Logf: logf}})
	if err != nil {
		t.Fatal(err)
	}
	var events []forward.Event
	st.Forwarder().Subscribe(func(e forward.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	post(t, "http://"+st.Addr()+"/", message(simulate.New(11), "media.ready"), []byte("svc"))
	app.waitFor(t, "got it", 5*time.Second, func(r [][]byte) bool { return len(r) == 1 })
	if !strings.Contains(string(app.requests()[0]), "?token=tok-SECRET-1") {
		t.Error("the app did not get the target's real query")
	}
	waitAttempts(t, st, 1, 1)
	as, _ := st.Forwarder().Attempts(context.Background(), 1)
	st.Close(context.Background())
	var seen []string
	for _, a := range as {
		seen = append(seen, a.Route, a.Target, a.Error, a.Detail)
	}
	for _, e := range events {
		if e.Attempt != nil {
			seen = append(seen, e.Attempt.Route, e.Attempt.Target, e.Attempt.Error)
		}
		seen = append(seen, e.Route.Name, e.Route.Target, e.Message)
	}
	seen = append(seen, logs...)
	for _, s := range seen {
		if strings.Contains(s, "SECRET") {
			t.Errorf("a secret in %q", s)
		}
	}
	if !slices.ContainsFunc(as, func(a *forward.Attempt) bool { return strings.Contains(a.Target, "REDACTED") }) {
		t.Errorf("targets not redacted: %+v", as)
	}

	// A target off this machine: one warning at start.
	far := &forward.Config{Routes: routes(t, "http://192.0.2.1:9/never", app.url("/"))}
	logs = nil
	st2, err := station.Open(context.Background(), station.Config{DBPath: filepath.Join(t.TempDir(), "w.db"), Forward: far, Engine: inspector.Options{Logf: logf}})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(context.Background())
	w := st2.Forwarder().Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "192.0.2.1:9") || !strings.Contains(w[0], "not on this machine") {
		t.Errorf("warnings %q", w)
	}
}
