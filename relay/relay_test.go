package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookscope/hookscope/inspector"
)

// memStore is a laptop's store in memory: deliveries in commit order,
// idempotent by (origin, sequence).
type memStore struct {
	mu     sync.Mutex
	ds     []*Relayed
	seen   map[string]bool
	dups   int
	before func(n int, batch []*Relayed) error // called before each commit (n: commits so far)
	after  func(n int, batch []*Relayed) error // called after each commit
	calls  int
}

func newMemStore() *memStore { return &memStore{seen: map[string]bool{}} }

func (m *memStore) InsertRelayed(ctx context.Context, batch []*Relayed) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.before != nil {
		if err := m.before(m.calls, batch); err != nil {
			return err
		}
	}
	for _, r := range batch {
		key := fmt.Sprintf("%s/%d", r.Origin, r.Seq)
		if m.seen[key] {
			r.Duplicate = true
			m.dups++
			continue
		}
		m.seen[key] = true
		cp := *r
		d := *r.Delivery
		d.Body = bytes.Clone(d.Body)
		d.ID = int64(len(m.ds) + 1)
		r.Delivery.ID = d.ID
		cp.Delivery = &d
		m.ds = append(m.ds, &cp)
	}
	if m.after != nil {
		return m.after(m.calls, batch)
	}
	return nil
}

func (m *memStore) snapshot() []*Relayed {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ds)
}

func (m *memStore) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ds)
}

// waitFor polls cond every 10 ms for at most limit (a bound, not a
// timing assertion: the test fails only if it never holds).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testRelay is a relay with its HTTP front (NATSHandler at /nats, served
// by the receiver's own server code) on loopback.
type testRelay struct {
	*Server
	dir   string
	front string // http://127.0.0.1:port
}

func startRelay(t testing.TB, o Options, so inspector.ServerOptions) *testRelay {
	t.Helper()
	if o.DataDir == "" && o.NATSURL == "" {
		o.DataDir = t.TempDir()
	}
	if _, bench := t.(*testing.B); !bench {
		o.Logf = t.Logf
	}
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mux := http.NewServeMux()
	mux.Handle(NATSPath, s.NATSHandler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "the receiver", http.StatusTeapot) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := inspector.ServeListener(ln, mux, so)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	front := "http://" + hs.Addr()
	if o.NATSURL == "" {
		if err := s.SetPublicURL(front); err != nil {
			t.Fatal(err)
		}
	}
	return &testRelay{Server: s, dir: o.DataDir, front: front}
}

// invite issues a credential and tells the running relay.
func (r *testRelay) invite(t *testing.T, name string) ConnString {
	t.Helper()
	c, err := Invite(r.dir, name, r.LaptopURL(), r.opts.Stream, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r.reload(t)
	return c
}

func (r *testRelay) reload(t testing.TB) {
	t.Helper()
	a, err := DialAdmin(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// delivery i is a distinct receipt; every third one repeats the hook
// uuid of the one before (a duplicate the service sent: two messages).
func delivery(i int) *inspector.Delivery {
	hook := i
	if i%3 == 2 {
		hook = i - 1
	}
	body := fmt.Appendf(nil, `{"hook":{"uuid":"h%d"},"events":[{"uuid":"e%d","type":"media.ready"}],"n":%d,"bin":"\u00e9`, hook, hook, i)
	body = append(body, 0xff, '"', '}') // not UTF-8: must come back byte-exact
	return &inspector.Delivery{
		ReceivedAt: time.Date(2026, 5, 1, 0, 0, 0, i, time.UTC), Method: "POST", Path: "/webhooks",
		RemoteAddr: "203.0.113.7:4000", Status: 200, BodyLength: int64(len(body)), Body: body,
		Headers: []inspector.Header{{Name: "content-type", Value: "application/json"}, {Name: "X-Hook", Value: fmt.Sprintf("h%d \xe9", hook)}},
	}
}

func publish(t *testing.T, s *Sink, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := s.Record(context.Background(), delivery(i)); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

// checkAll asserts the store holds deliveries from..to-1, in order, each
// once and byte-exact.
func checkAll(t *testing.T, who string, got []*Relayed, from, to int) {
	t.Helper()
	if len(got) != to-from {
		t.Fatalf("%s has %d deliveries, want %d", who, len(got), to-from)
	}
	for k, r := range got {
		want := delivery(from + k)
		want.Source = DeliverySource
		d := *r.Delivery
		d.ID = 0
		if !bytes.Equal(d.Body, want.Body) || !slices.Equal(d.Headers, want.Headers) || !d.ReceivedAt.Equal(want.ReceivedAt) ||
			d.Method != want.Method || d.Path != want.Path || d.RemoteAddr != want.RemoteAddr || d.Status != 200 || d.Source != DeliverySource {
			t.Fatalf("%s's delivery %d is not delivery %d byte for byte:\n got %+v\nwant %+v", who, k, from+k, d, want)
		}
		if k > 0 && r.Seq <= got[k-1].Seq {
			t.Fatalf("%s: sequence %d after %d", who, r.Seq, got[k-1].Seq)
		}
	}
}

// runSource runs a source until the returned stop is called.
func runSource(t *testing.T, c ConnString, st Store) (stop func() error, src *Source) {
	t.Helper()
	src, err := NewSource(SourceOptions{Conn: c, Store: st, Logf: t.Logf, MaxBatch: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { stop() })
	return stop, src
}

func TestTwoLaptopsOneSleeps(t *testing.T) {
	r := startRelay(t, Options{}, inspector.ServerOptions{})
	alice, bob := r.invite(t, "alice"), r.invite(t, "bob")
	if !strings.HasPrefix(alice.URL, "ws://127.0.0.1:") || !strings.HasSuffix(alice.URL, "/nats") {
		t.Fatalf("laptop URL %q is not the front's /nats", alice.URL)
	}
	a, b := newMemStore(), newMemStore()
	_, srcA := runSource(t, alice, a)
	stopB, _ := runSource(t, bob, b)

	const first, n = 20, 300
	publish(t, r.Sink(), 0, first)
	waitFor(t, 20*time.Second, "both laptops get the first deliveries", func() bool { return a.len() == first && b.len() == first })
	if err := stopB(); err != nil {
		t.Fatal(err)
	}

	// Bob sleeps (his connection closed) while n more arrive; Alice has
	// them live.
	publish(t, r.Sink(), first, first+n)
	waitFor(t, 20*time.Second, "alice gets every delivery live", func() bool { return a.len() == first+n })
	if st := srcA.State(); st.Phase != Live || st.String() != "relay: live" {
		t.Fatalf("alice's state: %+v (%s)", st, st)
	}

	adm, err := DialAdmin(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	status, err := adm.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]LaptopStatus{}
	for _, l := range status.Laptops {
		pos[l.Name] = l
	}
	if status.Deliveries != first+n || pos["alice"].Behind != 0 || !pos["alice"].Connected || pos["bob"].Behind != n || pos["bob"].Connected {
		t.Fatalf("status while bob sleeps: %+v", status)
	}

	// Bob wakes: all n arrive, in order, byte-exact, once.
	var states []State
	var mu sync.Mutex
	src, err := NewSource(SourceOptions{Conn: bob, Store: b, MaxBatch: 50, OnState: func(s State) {
		mu.Lock()
		states = append(states, s)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	waitFor(t, 20*time.Second, "bob catches up", func() bool { return b.len() == first+n })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkAll(t, "alice", a.snapshot(), 0, first+n)
	checkAll(t, "bob", b.snapshot(), 0, first+n)
	if b.dups != 0 {
		t.Fatalf("bob was sent %d deliveries twice", b.dups)
	}
	mu.Lock()
	defer mu.Unlock()
	var sawProgress bool
	for _, s := range states {
		if s.Phase == CatchingUp && s.Total == n && strings.HasPrefix(s.String(), "relay: catching up ") && strings.HasSuffix(s.String(), " of 300") {
			sawProgress = true
		}
	}
	if !sawProgress || states[len(states)-1].Phase != Live {
		t.Fatalf("bob's states did not show the catch-up then live: %+v", states)
	}
}

func TestLaptopKilledMidCatchUpResumesExactlyOnce(t *testing.T) {
	r := startRelay(t, Options{}, inspector.ServerOptions{})
	carol := r.invite(t, "carol")
	st := newMemStore()
	stop, _ := runSource(t, carol, st)
	publish(t, r.Sink(), 0, 1)
	waitFor(t, 20*time.Second, "carol's consumer exists", func() bool { return st.len() == 1 })
	stop()

	const n = 600
	publish(t, r.Sink(), 1, n)
	// First restart: killed (context cancelled) in the middle of its third
	// batch, before that batch is committed.
	ctx, cancel := context.WithCancel(context.Background())
	st.before = func(calls int, _ []*Relayed) error {
		if calls == 3 {
			cancel()
			return context.Canceled
		}
		return nil
	}
	src, _ := NewSource(SourceOptions{Conn: carol, Store: st, MaxBatch: 50})
	if err := src.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := st.len(); got <= 1 || got >= n {
		t.Fatalf("the kill came after %d deliveries; want it mid-catch-up", got)
	}
	// The store fails (a full disk): the state says so, the Source retries.
	st.before, st.calls = nil, 0
	full := true
	var sawFailing bool
	ctx, cancel = context.WithCancel(context.Background())
	st.before = func(int, []*Relayed) error {
		if full {
			return errors.New("disk full")
		}
		return nil
	}
	src, _ = NewSource(SourceOptions{Conn: carol, Store: st, MaxBatch: 50, OnState: func(s State) {
		if s.Phase == StoreFailing && strings.Contains(s.String(), "cannot store deliveries here") && strings.Contains(s.String(), "disk full") {
			sawFailing = true
			cancel()
		}
	}})
	if err := src.Run(ctx); err != nil || !sawFailing {
		t.Fatalf("a failing store: %v, state seen: %v", err, sawFailing)
	}
	full = false
	// Second restart: dies after committing its second batch, before the
	// acknowledgement (the batch comes again and is skipped as stored).
	st.before, st.calls = nil, 0
	ctx, cancel = context.WithCancel(context.Background())
	st.after = func(calls int, _ []*Relayed) error {
		if calls == 2 {
			cancel()
			return errors.New("killed between commit and ack")
		}
		return nil
	}
	src, _ = NewSource(SourceOptions{Conn: carol, Store: st, MaxBatch: 50})
	if err := src.Run(ctx); err != nil {
		t.Fatal(err)
	}
	st.after = nil
	stop, _ = runSource(t, carol, st)
	waitFor(t, 20*time.Second, "carol resumes to the end", func() bool { return st.len() == n })
	stop()
	checkAll(t, "carol", st.snapshot(), 0, n)
	if st.dups == 0 {
		t.Fatal("the batch committed but not acknowledged did not come again (the test did not test the kill)")
	}
}

func TestRefusals(t *testing.T) {
	r := startRelay(t, Options{}, inspector.ServerOptions{})
	alice := r.invite(t, "alice")
	r.invite(t, "bob")
	run := func(c ConnString) error {
		src, err := NewSource(SourceOptions{Conn: c, Store: newMemStore()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return src.Run(ctx)
	}
	t.Run("no credential", func(t *testing.T) {
		// Over WebSocket the refusal may reach the client as the
		// connection closing under its CONNECT: either way, no connection.
		if nc, err := nats.Connect(alice.URL, nats.NoReconnect()); err == nil {
			nc.Close()
			t.Fatal("connected without a credential")
		}
		unknown := alice
		unknown.Seed = testSeed(t)
		err := run(unknown)
		var ref *RefusedError
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), "not (or no longer) valid") {
			t.Fatalf("unknown credential: %v", err)
		}
	})
	t.Run("alice's credential on bob's consumer", func(t *testing.T) {
		spoof := alice
		spoof.Name = "bob"
		err := run(spoof)
		var ref *RefusedError
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), "may not") || !strings.Contains(err.Error(), "bob") {
			t.Fatalf("alice on bob's consumer: %v", err)
		}
	})
	t.Run("revoked while connected, then refused", func(t *testing.T) {
		st := newMemStore()
		src, _ := NewSource(SourceOptions{Conn: alice, Store: st})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx) }()
		publish(t, r.Sink(), 0, 1)
		waitFor(t, 20*time.Second, "alice connected", func() bool { return st.len() == 1 })
		if err := Revoke(r.dir, "alice", time.Now()); err != nil {
			t.Fatal(err)
		}
		r.reload(t)
		err := <-done
		var ref *RefusedError
		if !errors.As(err, &ref) || src.State().Phase != Stopped {
			t.Fatalf("after revoke: %v (state %+v)", err, src.State())
		}
		if err := run(alice); !errors.As(err, &ref) {
			t.Fatalf("a new connection after revoke: %v", err)
		}
		adm, err := DialAdmin(context.Background(), r.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer adm.Close()
		status, err := adm.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range status.Laptops {
			if l.Name == "alice" && (l.RevokedAt.IsZero() || l.Started) {
				t.Fatalf("alice after revoke (consumer should be gone): %+v", l)
			}
		}
	})
}

func TestWebSocketOutlivesReceiverTimeouts(t *testing.T) {
	// The receiver's server cuts a request at ReadTimeout; a laptop's
	// WebSocket through /nats must outlive it.
	r := startRelay(t, Options{}, inspector.ServerOptions{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond})
	dave := r.invite(t, "dave")
	st := newMemStore()
	runSource(t, dave, st)
	publish(t, r.Sink(), 0, 1)
	waitFor(t, 20*time.Second, "dave connected", func() bool { return st.len() == 1 })
	time.Sleep(time.Second) // past both timeouts
	publish(t, r.Sink(), 1, 2)
	waitFor(t, 20*time.Second, "dave still receives after the receiver's timeouts", func() bool { return st.len() == 2 })
	checkAll(t, "dave", st.snapshot(), 0, 2)
}

func TestRelayedKeepsReceiptsAndDropsRepublish(t *testing.T) {
	r := startRelay(t, Options{}, inspector.ServerOptions{})
	d := delivery(1)
	if err := r.Sink().Record(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	// The same hook received again is a new receipt: a new message.
	d2 := delivery(1)
	if err := r.Sink().Record(context.Background(), d2); err != nil {
		t.Fatal(err)
	}
	if d.ID != 1 || d2.ID != 2 {
		t.Fatalf("two receipts of one hook got sequences %d and %d", d.ID, d2.ID)
	}
	// A re-publish of one receipt (a retry whose ack was lost) is dropped.
	env := encodeEnvelope(d, "receipt-1")
	for range 2 {
		if _, err := r.js.Publish(context.Background(), r.subject, env, jetstream.WithMsgID("receipt-1")); err != nil {
			t.Fatal(err)
		}
	}
	info, err := r.js.Stream(context.Background(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().State.Msgs; got != 3 {
		t.Fatalf("the stream holds %d messages, want 3", got)
	}
}

func TestPull(t *testing.T) {
	r := startRelay(t, Options{}, inspector.ServerOptions{})
	ci := r.invite(t, "ci")
	publish(t, r.Sink(), 0, 1200)
	collect := func(o PullOptions) ([]*Relayed, PullSummary) {
		t.Helper()
		var got []*Relayed
		o.Conn = ci
		o.Each = func(rl *Relayed) error {
			d := *rl.Delivery
			d.Body = bytes.Clone(d.Body)
			cp := *rl
			cp.Delivery = &d
			got = append(got, &cp)
			return nil
		}
		sum, err := Pull(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return got, sum
	}
	all, sum := collect(PullOptions{})
	checkAll(t, "pull", all, 0, 1200)
	if sum.Deliveries != 1200 || sum.FirstSeq != 1 || sum.LastSeq != 1200 {
		t.Fatalf("summary %+v", sum)
	}
	tail, _ := collect(PullOptions{FromSeq: 1101})
	checkAll(t, "pull --from-seq", tail, 1100, 1200)
	// An ephemeral pull leaves no consumer behind and moves no position.
	adm, err := DialAdmin(context.Background(), r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	st, err := adm.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Laptops) != 1 || st.Laptops[0].Started {
		t.Fatalf("after ephemeral pulls: %+v", st.Laptops)
	}
	// A durable pull moves the credential's position.
	durable, _ := collect(PullOptions{Durable: true})
	checkAll(t, "durable pull", durable, 0, 1200)
	again, _ := collect(PullOptions{Durable: true})
	if len(again) != 0 {
		t.Fatalf("a second durable pull read %d again", len(again))
	}
	// Unreachable.
	gone := ci
	gone.URL = "ws://127.0.0.1:1/nats"
	_, err = Pull(context.Background(), PullOptions{Conn: gone, Each: func(*Relayed) error { return nil }})
	var un *UnreachableError
	if !errors.As(err, &un) {
		t.Fatalf("pull from nowhere: %v", err)
	}
}

func TestNotRunning(t *testing.T) {
	dir := t.TempDir()
	if _, err := DialAdmin(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no relay: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("DialAdmin created files: %v", entries)
	}
}

func TestTooLargeForTheServerIsKeptCutAndAnswered413(t *testing.T) {
	_, relayPub, relaySeed := newKey(t)
	_, ciPub, ciSeed := newKey(t)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), MaxPayload: 1 << 20, NoSigs: true,
		Nkeys: []*server.NkeyUser{{Nkey: relayPub}, {Nkey: ciPub, Permissions: Permissions(DefaultStream, "ci")}}})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	credsFile := filepath.Join(t.TempDir(), "relay.nk")
	if err := os.WriteFile(credsFile, []byte(relaySeed), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, Options{NATSURL: ns.ClientURL(), NATSCreds: credsFile}, inspector.ServerOptions{})
	if got := r.MaxBody(); got >= 1<<20 || got < 900<<10 {
		t.Fatalf("MaxBody() = %d with a 1 MiB server limit", got)
	}
	d := delivery(7)
	d.Body = bytes.Repeat([]byte("a"), 2<<20)
	d.BodyLength = int64(len(d.Body))
	err = r.Sink().Record(context.Background(), d)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1<<20 {
		t.Fatalf("Record of 2 MiB: %v", err)
	}
	if !d.Truncated || d.Status != http.StatusRequestEntityTooLarge || d.BodyLength != 2<<20 || d.ID != 1 {
		t.Fatalf("the delivery after Record: truncated %v status %d length %d id %d", d.Truncated, d.Status, d.BodyLength, d.ID)
	}
	var got *inspector.Delivery
	_, err = Pull(context.Background(), PullOptions{
		Conn: ConnString{URL: ns.ClientURL(), Name: "ci", Seed: ciSeed, Stream: DefaultStream},
		Each: func(rl *Relayed) error { got = rl.Delivery; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.Truncated || got.Status != 413 || int64(len(got.Body)) > r.nc.MaxPayload() || !bytes.Equal(got.Body, d.Body) {
		t.Fatalf("the stored copy: %+v", got)
	}
}

func TestUnreadableDeliveryStopsTheSource(t *testing.T) {
	r := startRelay(t, Options{}, inspector.ServerOptions{})
	c := r.invite(t, "frank")
	publish(t, r.Sink(), 0, 2)
	if _, err := r.js.Publish(context.Background(), r.subject, []byte("HSR9 from a newer relay")); err != nil {
		t.Fatal(err)
	}
	publish(t, r.Sink(), 2, 3)
	st := newMemStore()
	src, _ := NewSource(SourceOptions{Conn: c, Store: st, MaxBatch: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := src.Run(ctx)
	var un *UnreadableError
	if !errors.As(err, &un) || un.Seq != 3 || src.State().Phase != Stopped || !strings.Contains(src.State().String(), "update Hookscope") {
		t.Fatalf("Run: %v; state %s", err, src.State())
	}
	checkAll(t, "frank", st.snapshot(), 0, 2)
}
