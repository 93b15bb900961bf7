package station_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
)

// testRelay is a relay station on loopback: the receiver with the
// relay's sink, its public URL its local one.
type testRelay struct {
	*station.Station
	dir string
}

func openRelay(t testing.TB, secrets ...[]byte) *testRelay {
	t.Helper()
	dir := t.TempDir()
	st, err := station.Open(context.Background(), station.Config{
		Addr: "127.0.0.1:0", Relay: &relay.Options{DataDir: dir, SyncInterval: relay.DefaultSyncInterval},
		Engine: inspector.Options{Secrets: secrets, Logf: t.Logf},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	if err := st.RelayServer().SetPublicURL(station.LocalURL(st.Addr())); err != nil {
		t.Fatal(err)
	}
	return &testRelay{Station: st, dir: dir}
}

// invite issues name's credential and tells the running relay.
func (r *testRelay) invite(t testing.TB, name string) *relay.ConnString {
	t.Helper()
	c, err := relay.Invite(r.dir, name, r.RelayServer().LaptopURL(), relay.DefaultStream, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RelayServer().Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &c
}

// laptop is a station without a receiver of its own, reading a relay,
// with the relay states it reported.
type laptop struct {
	*station.Station
	mu     sync.Mutex
	states []relay.State
}

func openLaptop(t testing.TB, fwd *forward.Config, secrets ...[]byte) *laptop {
	t.Helper()
	st, err := station.Open(context.Background(), station.Config{
		DBPath: filepath.Join(t.TempDir(), "laptop.db"), Forward: fwd,
		Engine: inspector.Options{Secrets: secrets, Logf: t.Logf},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	l := &laptop{Station: st}
	st.SubscribeRelay(func(s relay.State) {
		l.mu.Lock()
		l.states = append(l.states, s)
		l.mu.Unlock()
	})
	return l
}

func (l *laptop) phases() []relay.Phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []relay.Phase
	for _, s := range l.states {
		if len(out) == 0 || out[len(out)-1] != s.Phase {
			out = append(out, s.Phase)
		}
	}
	return out
}

// records returns the laptop's analysed deliveries in id order.
func (l *laptop) records(t *testing.T) []*inspector.Record {
	t.Helper()
	var out []*inspector.Record
	if err := l.Store().Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b *inspector.Record) int { return int(a.Delivery.ID - b.Delivery.ID) })
	return out
}

// waitRecords waits until the laptop has n deliveries, all analysed.
func (l *laptop) waitRecords(t *testing.T, who string, n int) []*inspector.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		recs := l.records(t)
		done := len(recs) == n
		for _, r := range recs {
			done = done && r.Analysis != nil
		}
		if done {
			return recs
		}
		if len(recs) > n || time.Now().After(deadline) {
			t.Fatalf("%s has %d deliveries (want %d, analysed) after 20 s; states %v", who, len(recs), n, l.phases())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *laptop) waitPhase(t *testing.T, who string, p relay.Phase) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, on := l.RelayState(); on && st.Phase == p {
			return
		}
		if time.Now().After(deadline) {
			st, _ := l.RelayState()
			t.Fatalf("%s is %q, not %q, after 20 s (%v)", who, st.Phase, p, st.Err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sentDelivery is what the service sent: the request's header lines in
// wire order and its body.
type sentDelivery struct {
	headers []inspector.Header
	body    []byte
}

// sendTo posts deliveries i..j-1 to the relay byte for byte: headers in
// an order net/http would not choose, one of them not UTF-8.
func sendTo(t *testing.T, addr string, g *simulate.Generator, secret []byte, from, to int) []sentDelivery {
	t.Helper()
	var out []sentDelivery
	for i := from; i < to; i++ {
		body := message(g, "media.ready")
		hs := []inspector.Header{
			{Name: "host", Value: addr},
			{Name: "X-Service-Signature", Value: inspector.Sign(secret, body)},
			{Name: "x-odd", Value: fmt.Sprintf("caf\xe9 %d", i)},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Content-Length", Value: fmt.Sprint(len(body))},
		}
		var wire strings.Builder
		wire.WriteString("POST /webhooks HTTP/1.1\r\n")
		for _, h := range hs {
			wire.WriteString(h.Name + ": " + h.Value + "\r\n")
		}
		wire.WriteString("\r\n")
		wire.Write(body)
		if line := rawPost(t, addr, wire.String()); line != "HTTP/1.1 200 OK" {
			t.Fatalf("the relay answered delivery %d %q", i, line)
		}
		out = append(out, sentDelivery{headers: hs, body: body})
	}
	return out
}

// checkLaptop asserts the laptop holds exactly sent, in order, each once,
// byte-exact, via the relay with sequences 1..n, analysed (signature
// valid).
func checkLaptop(t *testing.T, who string, recs []*inspector.Record, sent []sentDelivery) {
	t.Helper()
	if len(recs) != len(sent) {
		t.Fatalf("%s has %d deliveries, want %d", who, len(recs), len(sent))
	}
	for i, r := range recs {
		d := r.Delivery
		if d.Source != relay.DeliverySource || d.RelaySeq != uint64(i+1) {
			t.Errorf("%s's delivery %d: source %q sequence %d, want via relay, sequence %d", who, d.ID, d.Source, d.RelaySeq, i+1)
		}
		if !bytes.Equal(d.Body, sent[i].body) || !slices.Equal(d.Headers, sent[i].headers) {
			t.Errorf("%s's delivery %d is not what was sent %d-th, byte for byte:\n got %q\nwant %q", who, d.ID, i+1, d.Headers, sent[i].headers)
		}
		if r.Analysis.Signature.Status != inspector.SignatureValid {
			t.Errorf("%s's delivery %d: signature %s, want valid", who, d.ID, r.Analysis.Signature.Status)
		}
	}
}

// TestRelayTwoLaptopsOneSleeps: one relay station and two laptops (two
// stations on two stores). A gets every delivery live; B sleeps (its link
// off) while more arrive, wakes, catches up and has all of them in
// order, byte-exact, once, with the relay's receive times, analysed, and
// forwards them to its app in order, once.
func TestRelayTwoLaptopsOneSleeps(t *testing.T) {
	ctx := context.Background()
	secret := []byte("relay-secret")
	r := openRelay(t, secret)
	app := newRawApp(t, "")
	a := openLaptop(t, nil, secret)
	b := openLaptop(t, &forward.Config{Routes: routes(t, app.url("/hooks"))}, secret)
	alice, bob := r.invite(t, "alice"), r.invite(t, "bob")
	if err := a.SetRelay(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := b.SetRelay(ctx, bob); err != nil {
		t.Fatal(err)
	}
	a.waitPhase(t, "A", relay.Live)
	b.waitPhase(t, "B", relay.Live)

	g := simulate.New(7)
	sent := sendTo(t, r.Addr(), g, secret, 0, 10)
	a.waitRecords(t, "A", 10)
	b.waitRecords(t, "B", 10)

	if err := b.SetRelay(ctx, nil); err != nil { // B sleeps
		t.Fatal(err)
	}
	if st, on := b.RelayState(); on || st.Phase != "" {
		t.Fatalf("B's link is off, but its state is %+v (on %v)", st, on)
	}
	sent = append(sent, sendTo(t, r.Addr(), g, secret, 10, 35)...)
	checkLaptop(t, "A", a.waitRecords(t, "A", 35), sent)
	if n := len(b.records(t)); n != 10 {
		t.Fatalf("B got %d deliveries while asleep", n)
	}

	if err := b.SetRelay(ctx, bob); err != nil { // B wakes
		t.Fatal(err)
	}
	recsB := b.waitRecords(t, "B", 35)
	checkLaptop(t, "B", recsB, sent)
	for i, ra := range a.records(t) {
		if !ra.Delivery.ReceivedAt.Equal(recsB[i].Delivery.ReceivedAt) {
			t.Errorf("delivery %d received at %v on A and %v on B: both must keep the relay's time", i+1, ra.Delivery.ReceivedAt, recsB[i].Delivery.ReceivedAt)
		}
	}
	b.waitPhase(t, "B", relay.Live)
	if p := b.phases(); !slices.Contains(p, relay.CatchingUp) {
		t.Errorf("B's states after waking were %v: no catching up", p)
	}
	app.waitFor(t, "got all 35", 20*time.Second, func(reqs [][]byte) bool { return len(reqs) >= 35 })
	got := app.bodies()
	for i, s := range sent {
		if i >= len(got) || got[i] != string(s.body) {
			t.Fatalf("B's app got delivery %d out of order or altered (got %d requests)", i+1, len(got))
		}
	}
	if len(got) != len(sent) {
		t.Errorf("B's app got %d requests for %d deliveries", len(got), len(sent))
	}
}

// TestRelayRefusals: a relay forwards nothing and keeps nothing in a
// store; a laptop does not forward pass-through (the relay answered the
// service long before), whichever is set first.
func TestRelayRefusals(t *testing.T) {
	ctx := context.Background()
	_, err := station.New(station.Config{Relay: &relay.Options{DataDir: t.TempDir()}, Forward: &forward.Config{Routes: routes(t, "http://127.0.0.1:1/")}})
	if !errors.Is(err, station.ErrRelayStation) {
		t.Errorf("a relay with forwarding: %v, want ErrRelayStation", err)
	}
	r := openRelay(t)
	if err := r.SetRelay(ctx, &relay.ConnString{}); !errors.Is(err, station.ErrRelayStation) {
		t.Errorf("a relay reading a relay: %v", err)
	}
	if r.Store() != nil {
		t.Error("a relay has a store")
	}
	pass := &forward.Config{Mode: forward.ModePassThrough, Routes: routes(t, "http://127.0.0.1:1/")}
	l := openLaptop(t, pass)
	conn := r.invite(t, "carol")
	if err := l.SetRelay(ctx, conn); !errors.Is(err, station.ErrRelayPassThrough) {
		t.Errorf("a relay with pass-through forwarding: %v, want ErrRelayPassThrough", err)
	}
	if err := l.SetForward(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.SetRelay(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := l.SetForward(ctx, pass); !errors.Is(err, station.ErrRelayPassThrough) {
		t.Errorf("pass-through forwarding with a relay: %v, want ErrRelayPassThrough", err)
	}
	if err := l.SetForward(ctx, &forward.Config{Routes: pass.Routes}); err != nil {
		t.Errorf("ack forwarding with a relay: %v", err)
	}
}
