package prove

import (
	"context"
	"encoding/json"
	"io"
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

// holdingApp is the developer's app: it keeps every body in the order it
// got them, and holds its answers while hold is set.
type holdingApp struct {
	mu     sync.Mutex
	bodies []string
	cond   *sync.Cond
	hold   bool
}

func (a *holdingApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.bodies = append(a.bodies, string(b))
	a.cond.Broadcast()
	for a.hold {
		a.cond.Wait()
	}
	a.mu.Unlock()
	io.WriteString(w, `{"ok":true}`)
}

func (a *holdingApp) release() {
	a.mu.Lock()
	a.hold = false
	a.cond.Broadcast()
	a.mu.Unlock()
}

// waitBodies waits until the app got at least n bodies.
func (a *holdingApp) waitBodies(t *testing.T, n int, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		a.mu.Lock()
		got := slices.Clone(a.bodies)
		a.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app got %d of %d deliveries within %v", len(got), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListenForwardKill9: the real `hookscope listen --forward-to`, with
// forwards pending (the app holds its first answer, 30 more wait), is
// killed with SIGKILL; restarted on the same store, it sends every
// acknowledged delivery to the app, in order, the one under way at the
// kill (and only it) marked as a re-forward (in its --json line and in the
// store).
func TestListenForwardKill9(t *testing.T) {
	bin := hookscopeBin(t)
	home := t.TempDir()
	db := filepath.Join(home, "fwd.db")
	app := &holdingApp{hold: true}
	app.cond = sync.NewCond(&app.mu)
	srv := httptest.NewServer(app)
	defer srv.Close()
	defer app.release()
	target := srv.URL + "/webhooks"

	p := startListen(t, bin, home, nil, "--db", db, "--forward-to", target)
	g := simulate.New(11)
	client := &http.Client{Timeout: 10 * time.Second}
	var acked []string
	for range 31 {
		body := Body(g, 1024)
		req, err := simulate.NewRequest(context.Background(), p.url, body, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("listen answered %d", resp.StatusCode)
		}
		acked = append(acked, string(body))
	}
	app.waitBodies(t, 1, 10*time.Second)
	p.kill(t)
	app.release()

	p = startListen(t, bin, home, nil, "--db", db, "--forward-to", target)
	app.waitBodies(t, len(acked)+1, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // a send too many would arrive by now
	got := app.waitBodies(t, len(acked)+1, time.Second)
	// The first went out before the kill and once more after it; then
	// every acknowledged delivery, in order, once.
	if got[0] != acked[0] || !slices.Equal(got[1:], acked) {
		t.Fatalf("the app got %d bodies; want the first, then all %d acknowledged in order", len(got), len(acked))
	}
	// The restarted listener says which send is a re-forward.
	p.mu.Lock()
	out := p.out.String()
	p.mu.Unlock()
	reforwards := map[int64]bool{}
	for _, line := range strings.Split(out, "\n") {
		var v struct {
			Forward *struct {
				DeliveryID int64 `json:"delivery_id"`
				Reforward  bool  `json:"reforward"`
			} `json:"forward"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Forward != nil && v.Forward.Reforward {
			reforwards[v.Forward.DeliveryID] = true
		}
	}
	if !reforwards[1] {
		t.Errorf("the restarted listener did not print delivery 1's send as a re-forward:\n%s", out)
	}
	p.stop(t)

	s, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id := int64(1); id <= int64(len(acked)); id++ {
		as, err := s.ForwardAttempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 1 || !as[0].OK() {
			t.Fatalf("delivery %d: %d attempts recorded, want 1 delivered (%+v)", id, len(as), as)
		}
		// Only the one under way at the kill is marked.
		if (id == 1) != as[0].Reforward {
			t.Errorf("delivery %d: re-forward %v; only delivery 1 was under way at the kill", id, as[0].Reforward)
		}
	}
}

// TestTwoListenersOneStore: two `hookscope listen` on one store with the
// same route (two fault-run rounds forwarded 1,000 of 2,000 deliveries
// twice, unmarked, broke the route's order and never sent the first one):
// deliveries posted to both reach the app once each in id order, forwarded
// by one of them; when that one is killed with SIGKILL the other takes
// the route over, the run under way at the kill (at most forward.MaxRun
// deliveries) at most sent again and marked as re-forwards; after both stop nothing acked is left unsent.
func TestTwoListenersOneStore(t *testing.T) {
	bin := hookscopeBin(t)
	home := t.TempDir()
	db := filepath.Join(home, "shared.db")
	app := &holdingApp{}
	app.cond = sync.NewCond(&app.mu)
	srv := httptest.NewServer(app)
	defer srv.Close()
	args := []string{"--db", db, "--forward-to", srv.URL + "/hook"}
	a := startListen(t, bin, home, nil, args...)
	b := startListen(t, bin, home, nil, args...)
	g := simulate.New(19)
	client := &http.Client{Timeout: 10 * time.Second}
	var acked []string
	post := func(p *listenProc) {
		body := Body(g, 512)
		req, _ := simulate.NewRequest(context.Background(), p.url, body, nil)
		resp, err := client.Do(req)
		if err != nil {
			return // killed meanwhile: not acknowledged
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			acked = append(acked, string(body))
		}
	}
	for i := range 200 {
		post([]*listenProc{a, b}[i%2])
	}
	app.waitBodies(t, len(acked), 30*time.Second)
	// Kill the one forwarding (the other said it stands by) while
	// deliveries keep coming to the survivor.
	holder, other := a, b
	if strings.Contains(a.output(), `"state":"standby"`) {
		holder, other = b, a
	}
	holder.kill(t)
	for range 100 {
		post(other)
	}
	app.waitBodies(t, len(acked), 30*time.Second)
	// The killed one comes back; both stop; nothing acked is left.
	again := startListen(t, bin, home, nil, args...)
	for range 20 {
		post(again)
	}
	app.waitBodies(t, len(acked), 30*time.Second)
	time.Sleep(500 * time.Millisecond) // a send too many would arrive by now
	other.stop(t)
	again.stop(t)
	got := app.waitBodies(t, len(acked), time.Second)

	s, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idOf := map[string]int64{}
	if err := s.Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		idOf[string(r.Delivery.Body)] = r.Delivery.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var last int64
	inversions := 0
	for _, body := range got {
		seen[body]++
		id := idOf[body]
		if seen[body] > 1 {
			as, _ := s.ForwardAttempts(context.Background(), id)
			if !slices.ContainsFunc(as, func(a *forward.Attempt) bool { return a.Reforward }) {
				t.Errorf("delivery %d reached the app %d times, and no attempt is marked as a re-forward", id, seen[body])
			}
			continue
		}
		if id < last {
			inversions++
		}
		last = max(last, id)
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	if dups > forward.MaxRun || inversions > 0 {
		t.Errorf("%d deliveries sent twice (at most the run under way at the kill, %d), %d out of id order", dups, forward.MaxRun, inversions)
	}
	for _, body := range acked {
		if seen[body] == 0 {
			t.Errorf("acked delivery %d never reached the app", idOf[body])
		}
	}
	if w, _ := s.ForwardWaiting(context.Background()); w[srv.URL+"/hook"] != 0 {
		t.Errorf("%d deliveries left unforwarded after both stopped", w[srv.URL+"/hook"])
	}
	t.Logf("%d acked, %d received by the app, %d sent twice", len(acked), len(got), dups)
}
