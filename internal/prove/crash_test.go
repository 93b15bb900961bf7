package prove

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// sent is what the load client knows: every body it sent, and whether the
// receiver answered 200 for it.
type sent struct {
	mu    sync.Mutex
	body  map[[32]byte][]byte
	acked map[[32]byte]bool
}

func (s *sent) add(b []byte) [32]byte {
	k := sha256.Sum256(b)
	s.mu.Lock()
	s.body[k] = b
	s.mu.Unlock()
	return k
}

func (s *sent) ack(k [32]byte) {
	s.mu.Lock()
	s.acked[k] = true
	s.mu.Unlock()
}

// load posts signed unique deliveries from workers goroutines until ctx
// ends or the receiver goes away.
func load(ctx context.Context, url string, secret []byte, workers int, seed int64, s *sent) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := simulate.New(seed*1000 + int64(w) + 1)
			for ctx.Err() == nil {
				body := Body(g, 2048)
				k := s.add(body)
				req, err := simulate.NewRequest(ctx, url, body, secret)
				if err != nil {
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					// The listener was killed: this body may or may not be
					// stored; it was not acknowledged.
					time.Sleep(5 * time.Millisecond)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					s.ack(k)
				}
			}
		}()
	}
	wg.Wait()
}

// storeState opens the store and checks it against what was sent: every
// acked body present once and byte-exact, no body stored twice, nothing
// stored that was never sent. It returns the ids not analyzed yet.
func storeState(t *testing.T, path string, secret []byte, s *sent) (rows int, unanalyzed []int64) {
	t.Helper()
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := map[[32]byte]int{}
	err = db.Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		rows++
		d := r.Delivery
		k := sha256.Sum256(d.Body)
		count[k]++
		s.mu.Lock()
		want, ok := s.body[k]
		s.mu.Unlock()
		if !ok {
			t.Errorf("delivery %d: stored body (%d bytes) was never sent, or was altered", d.ID, len(d.Body))
		} else if !bytes.Equal(want, d.Body) {
			t.Errorf("delivery %d: body differs from what was sent", d.ID)
		}
		if sig, _ := d.Header(inspector.SignatureHeader); sig != inspector.Sign(secret, d.Body) {
			t.Errorf("delivery %d: stored signature header %q does not match its body", d.ID, sig)
		}
		if r.Analysis == nil {
			unanalyzed = append(unanalyzed, d.ID)
		} else if r.Analysis.Signature.Status != inspector.SignatureValid {
			t.Errorf("delivery %d: analyzed signature %s, want valid", d.ID, r.Analysis.Signature.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := 0
	for k := range s.acked {
		if count[k] == 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d deliveries answered 200 are missing from the store", lost)
	}
	for k, n := range count {
		if n > 1 {
			t.Errorf("a body is stored %d times (%d bytes)", n, len(s.body[k]))
		}
	}
	return rows, unanalyzed
}

// TestCrashKill9 runs the real `hookscope listen --forward-to` under
// concurrent load, kills it with SIGKILL at a random moment, restarts it
// on the same store, and checks that nothing acknowledged is lost,
// altered or duplicated, that the restarted listener analyzes what the
// killed one stored but had not analyzed, and that the app gets every
// acknowledged delivery in id order, at most the one under way at each
// kill twice (marked as a re-forward). HOOKSCOPE_CRASH_ROUNDS=N runs N
// kill/restart rounds (make bench runs 20); the default is 2.
func TestCrashKill9(t *testing.T) {
	bin := hookscopeBin(t)
	rounds := 2
	if v := os.Getenv("HOOKSCOPE_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOOKSCOPE_CRASH_ROUNDS=%q: want a positive integer", v)
		}
		rounds = n
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "crash.db")
	secret := []byte("crash-test-secret")
	env := []string{"HS_SECRET=" + string(secret)}
	app := &holdingApp{}
	app.cond = sync.NewCond(&app.mu)
	srv := httptest.NewServer(app)
	defer srv.Close()
	args := []string{"--db", db, "--secret-env", "HS_SECRET", "--forward-to", srv.URL + "/hook"}
	s := &sent{body: map[[32]byte][]byte{}, acked: map[[32]byte]bool{}}

	var pending []int64 // stored by the killed listener, not analyzed
	totalPending := 0
	for round := range rounds {
		p := startListen(t, bin, home, env, args...)
		// The restarted listener must analyze what the killed one left.
		p.waitIDs(t, pending, 20*time.Second)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			load(ctx, p.url, secret, 16, seed+int64(round), s)
		}()
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		p.kill(t)
		cancel()
		<-done

		var rows int
		rows, pending = storeState(t, db, secret, s)
		totalPending += len(pending)
		s.mu.Lock()
		t.Logf("round %d: %d sent, %d acked, %d stored, %d stored but not analyzed at the kill", round+1, len(s.body), len(s.acked), rows, len(pending))
		s.mu.Unlock()
		if t.Failed() {
			return
		}
	}
	// A last clean run: recovery, forwarding what waits, then a clean stop.
	p := startListen(t, bin, home, env, args...)
	p.waitIDs(t, pending, 20*time.Second)
	waitForwarded(t, app, s, 60*time.Second)
	p.stop(t)
	rows, unanalyzed := storeState(t, db, secret, s)
	if len(unanalyzed) > 0 {
		t.Errorf("%d deliveries still unanalyzed after a restart and a clean stop", len(unanalyzed))
	}
	s.mu.Lock()
	acked := len(s.acked)
	s.mu.Unlock()
	if acked == 0 {
		t.Fatal("no delivery was acknowledged: the load never reached the listener")
	}
	t.Logf("total: %d acked, %d stored, %d recovered by restarts", acked, rows, totalPending)
	checkForwarded(t, db, app, s, rounds)
}

// waitForwarded waits until the app got every acknowledged delivery (it
// gets the stored but unacknowledged ones too, and the re-forwards, so a
// count would not do).
func waitForwarded(t *testing.T, app *holdingApp, s *sent, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		app.mu.Lock()
		got := make(map[string]bool, len(app.bodies))
		for _, b := range app.bodies {
			got[b] = true
		}
		app.mu.Unlock()
		missing := 0
		s.mu.Lock()
		for k := range s.acked {
			if !got[string(s.body[k])] {
				missing++
			}
		}
		s.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the app still lacks %d acknowledged deliveries", within, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkForwarded checks that the app got every acknowledged delivery in
// id order, a delivery twice only when an attempt of it is marked as a
// re-forward, and at most forward.MaxRun of those per kill (the run under
// way at each).
func checkForwarded(t *testing.T, path string, app *holdingApp, s *sent, kills int) {
	t.Helper()
	s.mu.Lock()
	var ackedBodies [][]byte
	for k := range s.acked {
		ackedBodies = append(ackedBodies, s.body[k])
	}
	s.mu.Unlock()
	got := app.waitBodies(t, len(ackedBodies), time.Second)
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	idOf := map[string]int64{}
	if err := db.Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		idOf[string(r.Delivery.Body)] = r.Delivery.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var last int64
	dups := 0
	for _, b := range got {
		id := idOf[b]
		if seen[b] {
			dups++
			as, _ := db.ForwardAttempts(context.Background(), id)
			if !slices.ContainsFunc(as, func(a *forward.Attempt) bool { return a.Reforward }) {
				t.Errorf("delivery %d reached the app twice, no attempt marked as a re-forward", id)
			}
			continue
		}
		seen[b] = true
		if id < last {
			t.Errorf("the app got delivery %d after %d", id, last)
		}
		last = max(last, id)
	}
	for _, b := range ackedBodies {
		if !seen[string(b)] {
			t.Errorf("acked delivery %d never reached the app", idOf[string(b)])
		}
	}
	if dups > kills*forward.MaxRun {
		t.Errorf("%d deliveries sent twice over %d kills: more than the run under way at each (at most %d)", dups, kills, forward.MaxRun)
	}
	t.Logf("forwarded: %d received by the app, %d of them again after a kill (marked)", len(got), dups)
}
