package prove

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
)

// The team relay against the real binary: `hookscope relay` killed with
// SIGKILL under load, and a laptop (`hookscope listen --relay-env`)
// killed in the middle of a catch-up (docs/relay.md).

// freeAddr is a loopback address nothing listens on now: the relay is
// restarted on the same one, which its laptops' connection strings hold.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// inviteLaptop runs `hookscope relay invite name` against the running
// relay on data and returns the connection string it printed.
func inviteLaptop(t *testing.T, bin, home, data, name string) string {
	t.Helper()
	cmd := exec.Command(bin, "relay", "invite", name, "--data", data)
	cmd.Env = ChildEnv(home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("relay invite %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// missingAcked counts the acknowledged deliveries the store at path
// lacks (it may be open in a running laptop), the deliveries it holds
// and how many of them are not analysed yet.
func missingAcked(t *testing.T, path string, s *sent) (missing, rows, unanalyzed int) {
	t.Helper()
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[[32]byte]bool{}
	if err := db.Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		got[sha256.Sum256(r.Delivery.Body)] = true
		rows++
		if r.Analysis == nil {
			unanalyzed++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.acked {
		if !got[k] {
			missing++
		}
	}
	return missing, rows, unanalyzed
}

// waitStoredAbove polls the store at path until it holds more than n
// deliveries.
func waitStoredAbove(t *testing.T, path string, n int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			db, err := storage.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.Count(context.Background(), storage.Filter{})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got > n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store held no more than %d deliveries after %v", n, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitAcked waits until the laptop's store holds every acknowledged
// delivery, analysed.
func waitAcked(t *testing.T, who, path string, s *sent, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		missing, rows, unanalyzed := missingAcked(t, path, s)
		if missing == 0 && unanalyzed == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v laptop %s still lacks %d acknowledged deliveries (it holds %d, %d not analysed)", within, who, missing, rows, unanalyzed)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkRelayed checks a laptop's store after a clean stop: every
// acknowledged delivery once, byte-exact, nothing that was never sent,
// each analysed and marked as coming via the relay, in the relay's order.
func checkRelayed(t *testing.T, who, path string, secret []byte, s *sent) int {
	t.Helper()
	rows, unanalyzed := storeState(t, path, secret, s)
	if len(unanalyzed) > 0 {
		t.Errorf("laptop %s: %d deliveries unanalyzed after a clean stop", who, len(unanalyzed))
	}
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var last uint64
	if err := db.Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		d := r.Delivery
		if d.Source != relay.DeliverySource || d.RelaySeq <= last {
			t.Errorf("laptop %s: delivery %d (source %q, sequence %d) after sequence %d", who, d.ID, d.Source, d.RelaySeq, last)
		}
		last = d.RelaySeq
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRelayKill9UnderLoad kills `hookscope relay` with SIGKILL under
// concurrent load, restarts it on the same data folder and port, and
// checks that both laptops get every delivery it answered 200 to, once,
// byte-exact, in the relay's order (and nothing that was never sent).
func TestRelayKill9UnderLoad(t *testing.T) {
	bin := hookscopeBin(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 25))
	home, data := t.TempDir(), t.TempDir()
	secret := []byte("relay-crash-secret")
	env := []string{"HS_SECRET=" + string(secret)}
	relayArgs := []string{"relay", "--json", "--addr", freeAddr(t), "--data", data, "--secret-env", "HS_SECRET"}
	r := startProc(t, bin, home, env, relayArgs...)
	paths := map[string]string{"lap-a": filepath.Join(t.TempDir(), "a.db"), "lap-b": filepath.Join(t.TempDir(), "b.db")}
	var laptops []*listenProc
	for _, name := range []string{"lap-a", "lap-b"} {
		conn := inviteLaptop(t, bin, home, data, name)
		laptops = append(laptops, startListen(t, bin, home, append(env, "HS_RELAY="+conn), "--db", paths[name], "--secret-env", "HS_SECRET", "--relay-env", "HS_RELAY"))
	}
	s := &sent{body: map[[32]byte][]byte{}, acked: map[[32]byte]bool{}}
	const rounds = 2
	for round := range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			load(ctx, r.url, secret, 16, seed+int64(round), s)
		}()
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		r.kill(t)
		cancel()
		<-done
		s.mu.Lock()
		t.Logf("round %d: %d sent, %d answered 200 before the relay was killed", round+1, len(s.body), len(s.acked))
		s.mu.Unlock()
		r = startProc(t, bin, home, env, relayArgs...)
	}
	s.mu.Lock()
	acked := len(s.acked)
	s.mu.Unlock()
	if acked == 0 {
		t.Fatal("no delivery was acknowledged: the load never reached the relay")
	}
	for name, path := range paths {
		waitAcked(t, name, path, s, 60*time.Second)
	}
	for _, l := range laptops {
		l.stop(t)
	}
	r.stop(t)
	for name, path := range paths {
		rows := checkRelayed(t, name, path, secret, s)
		t.Logf("laptop %s: %d stored, every one of the %d acknowledged among them", name, rows, acked)
	}
}

// TestLaptopKill9MidCatchUp fills a relay while a laptop is away, then
// kills the laptop's `hookscope listen --relay-env` with SIGKILL while it
// catches up (twice, further along each time) and checks that after a
// restart its store has every delivery exactly once, in order, nothing
// missing.
func TestLaptopKill9MidCatchUp(t *testing.T) {
	bin := hookscopeBin(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	home, data := t.TempDir(), t.TempDir()
	secret := []byte("laptop-crash-secret")
	env := []string{"HS_SECRET=" + string(secret)}
	r := startProc(t, bin, home, env, "relay", "--json", "--addr", freeAddr(t), "--data", data, "--secret-env", "HS_SECRET")
	conn := inviteLaptop(t, bin, home, data, "lap")
	s := &sent{body: map[[32]byte][]byte{}, acked: map[[32]byte]bool{}}
	// Enough that a catch-up is many commits (the laptop commits up to 500
	// at a time): at least 6,000 acknowledged, or what 20 s of load gave.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	go func() {
		for ctx.Err() == nil {
			s.mu.Lock()
			n := len(s.acked)
			s.mu.Unlock()
			if n >= 6000 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	load(ctx, r.url, secret, 16, seed, s)
	cancel()
	s.mu.Lock()
	total := len(s.acked)
	s.mu.Unlock()
	t.Logf("the relay holds %d deliveries while the laptop is away", total)

	path := filepath.Join(t.TempDir(), "lap.db")
	args := []string{"--db", path, "--secret-env", "HS_SECRET", "--relay-env", "HS_RELAY"}
	lenv := append(env, "HS_RELAY="+conn)
	stored := 0
	for kill := range 2 {
		// Killed as soon as its store holds a batch committed in this run
		// (read from the store, not from its output: analysis and printing
		// lag the commits, and on a fast machine the whole catch-up was
		// committed before the first line of this run was printed).
		l := startListen(t, bin, home, lenv, args...)
		waitStoredAbove(t, path, int64(stored), 30*time.Second)
		l.kill(t)
		missing, rows, _ := missingAcked(t, path, s)
		stored = rows
		t.Logf("kill %d: %d stored, %d still at the relay", kill+1, rows, missing)
		if missing == 0 {
			t.Fatalf("the catch-up had finished before kill %d: nothing was cut short", kill+1)
		}
		if strings.Contains(l.output(), `"relay":"live"`) {
			t.Fatalf("the laptop was live before kill %d", kill+1)
		}
	}
	l := startListen(t, bin, home, lenv, args...)
	waitAcked(t, "lap", path, s, 60*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(l.output(), `"relay":"live"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the laptop never said it was live:\n%s", l.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.stop(t)
	r.stop(t)
	// The relay may also hold a few whose answer the load stopped waiting
	// for: stored once like the others (checkRelayed).
	rows := checkRelayed(t, "lap", path, secret, s)
	t.Logf("after two kills the laptop holds %d deliveries once each, the %d answered 200 among them", rows, total)
}
