package station_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// TestSetForwardLosesNothing: deliveries keep arriving while forwarding
// is reconfigured again and again (the window's Forward field and mode);
// every one the receiver acked reaches the app. (Pass-through relays in
// the requests' own order, so order is checked by the ack-only tests.)
func TestSetForwardLosesNothing(t *testing.T) {
	app := newRawApp(t, "")
	cfg := func(timeout time.Duration) *forward.Config {
		return &forward.Config{Routes: routes(t, app.url("/hook")), Policy: forward.Policy{Timeout: timeout}}
	}
	st := open(t, "", cfg(5*time.Second))
	url := "http://" + st.Addr() + "/webhooks"
	g := simulate.New(21)
	bodies := make([][]byte, 400)
	for i := range bodies {
		bodies[i] = message(g, "media.updated")
	}
	var (
		mu    sync.Mutex
		acked []int64
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(bodies)) {
					return
				}
				req, _ := simulate.NewRequest(context.Background(), url, bodies[i], nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				id, _ := strconv.ParseInt(resp.Header.Get("X-Hookscope-Delivery"), 10, 64)
				if resp.StatusCode == 200 && id > 0 {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	// Reconfigure while they arrive: another policy, pass-through and back.
	switches := 0
	for i := 0; next.Load() < int64(len(bodies)); i++ {
		c := cfg(time.Duration(4+i%3) * time.Second)
		if i%4 == 3 {
			c.Mode = forward.ModePassThrough
		}
		if err := st.SetForward(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		switches++
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if err := st.SetForward(context.Background(), cfg(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	mu.Lock()
	for _, id := range acked {
		r, err := st.Store().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		want[string(r.Delivery.Body)] = true
	}
	mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]bool{}
		for _, b := range app.bodies() {
			got[b] = true
		}
		missing := 0
		for b := range want {
			if !got[b] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acked deliveries never reached the app (%d switches)", missing, len(want), switches)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPoisonDeliveryIsGivenUp: an app that crashes on one payload
// (accepts the connection, then closes it unanswered) gets it a bounded
// number of times; the queue then moves on to the next delivery. An app
// that refuses connections is still waited for.
func TestPoisonDeliveryIsGivenUp(t *testing.T) {
	app := newRawApp(t, "")
	app.setAnswer(func(req []byte) (int, string, time.Duration) {
		if strings.Contains(string(req), "media.failed") {
			return 0, "", 0 // the crash: no answer, connection closed
		}
		return 200, "ok", 0
	})
	st := open(t, "", &forward.Config{Routes: routes(t, app.url("/")), Policy: forward.Policy{Retries: 1}})
	url := "http://" + st.Addr() + "/webhooks"
	g := simulate.New(23)
	poison, after := message(g, "media.failed"), message(g, "media.ready")
	for _, b := range [][]byte{poison, after} {
		if code, _ := post(t, url, b, nil); code != 200 {
			t.Fatal(code)
		}
	}
	app.waitFor(t, "got the delivery after the poison one", 15*time.Second, func(r [][]byte) bool {
		return slices.Contains(app.bodies(), string(after))
	})
	waitAttempts(t, st, 1, 2)
	as, err := st.ForwardAttempts(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	last := as[len(as)-1]
	if len(as) != 2 || last.Outcome != forward.Dropped || !last.GaveUp || !strings.Contains(last.Error, "closed the connection without answering (EOF); look at its log") {
		t.Errorf("poison attempts: %d, last %s gave up %v %q", len(as), last.Outcome, last.GaveUp, last.Error)
	}
	if rs := st.ForwardStatus(); rs[0].State != forward.RouteUp {
		t.Errorf("a crash on one payload marked the route %s", rs[0].State)
	}
	if b, _ := st.Badges(context.Background(), []int64{1}); b[1].Text != "→ dropped" || b[1].State != forward.BadgeFailed {
		t.Errorf("poison badge %+v", b[1])
	}
}

// TestNotQueuedWhileOff: a delivery received while forwarding was off is
// not owed, and its badge never says "queued" once forwarding is on
// again (even before the route has read its backlog), in either mode.
func TestNotQueuedWhileOff(t *testing.T) {
	for _, mode := range []forward.Mode{forward.ModeAck, forward.ModePassThrough} {
		t.Run(string(mode), func(t *testing.T) {
			app := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer app.Close()
			cfg := &forward.Config{Routes: routes(t, app.URL+"/x"), Mode: forward.ModeAck}
			st := open(t, "", cfg)
			ctx := context.Background()
			if err := st.SetForward(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if code, _ := post(t, "http://"+st.Addr()+"/", message(simulate.New(3), "media.ready"), nil); code != 200 {
				t.Fatal(code)
			}
			// Stored, not only acked (the inbox's rows reach SQLite a
			// moment later: one acked while off but stored after the
			// switch is owed, by design).
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if id, _ := st.Store().NewestDeliveryID(ctx); id == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the delivery never reached the store")
				}
			}
			cfg.Mode = mode
			if err := st.SetForward(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			b, err := st.Badges(ctx, []int64{1})
			if err != nil || len(b) != 0 {
				t.Fatalf("badges of a delivery received while off: %+v, %v", b, err)
			}
		})
	}
}
