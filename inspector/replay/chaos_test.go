package replay

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// seen is one request a chaos test server received, decoded.
type seen struct {
	hook   string
	events []string
	sig    inspector.SignatureStatus
}

func chaosServer(t *testing.T, secret string) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		s := seen{sig: inspector.Verify(sig, sig != "", body, [][]byte{[]byte(secret)}).Status}
		if m, err := inspector.DecodeMessage(body); err == nil {
			s.hook = m.HookUUID
			for _, e := range m.Events {
				s.events = append(s.events, e.UUID)
			}
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

func chaosInput() ([]*inspector.Delivery, [][]string) {
	g := simulate.New(5)
	m1 := g.Message(g.Event(catalog.TypeMediaCreated), g.Event(catalog.TypeMediaProcessing), g.Event(catalog.TypeMediaReady))
	m2 := g.Message(g.Event(catalog.TypeViewingPlay))
	return []*inspector.Delivery{captured(1, "old", m1), captured(2, "old", m2)}, [][]string{
		{m1.Events[0].UUID, m1.Events[1].UUID, m1.Events[2].UUID}, {m2.Events[0].UUID}}
}

func TestChaosTimes(t *testing.T) {
	srv, got := chaosServer(t, "old")
	ds, _ := chaosInput()
	rec := &fakeRecorder{}
	rep, err := New(rec).Chaos(context.Background(), ds, ChaosOptions{Target: srv.URL, Times: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := got()
	if len(s) != 6 || rep.Answered2xx != 6 || len(rec.saved) != 6 {
		t.Fatalf("server saw %d, report %+v, recorded %d; want 6", len(s), rep, len(rec.saved))
	}
	// Unshuffled: each message three times in a row, same hook, original signature.
	for i, x := range s {
		if x.hook != s[i/3*3].hook || x.sig != inspector.SignatureValid {
			t.Errorf("send %d: %+v", i, x)
		}
	}
	if rep.Results[2].Copy != 3 || rep.Results[3].DeliveryID != 2 {
		t.Errorf("copies/deliveries not numbered: %+v %+v", rep.Results[2], rep.Results[3])
	}
}

func TestChaosSplit(t *testing.T) {
	srv, got := chaosServer(t, "new")
	ds, ids := chaosInput()
	rep, err := New(nil).Chaos(context.Background(), ds, ChaosOptions{Target: srv.URL, Split: true, Secret: []byte("new"), Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	s := got()
	if len(s) != 4 {
		t.Fatalf("server saw %d messages, want 4 (one per event)", len(s))
	}
	hooks := map[string]bool{}
	for i, x := range s {
		if len(x.events) != 1 || x.sig != inspector.SignatureValid || hooks[x.hook] {
			t.Errorf("message %d: %+v", i, x)
		}
		hooks[x.hook] = true
	}
	want := append(append([]string{}, ids[0]...), ids[1]...)
	for i, x := range s {
		if x.events[0] != want[i] {
			t.Errorf("message %d carries %s, want %s", i, x.events[0], want[i])
		}
	}
	if rep.Results[0].Mode != ModeSplit {
		t.Errorf("mode %s", rep.Results[0].Mode)
	}
	// Each part says which part of its delivery it is; no copy is named
	// when each message goes once.
	var labels []string
	for _, r := range rep.Results {
		labels = append(labels, r.Label())
	}
	parts := make([]string, 0, 4)
	for _, n := range []int{len(ids[0]), len(ids[1])} {
		for i := 1; i <= n; i++ {
			parts = append(parts, fmt.Sprintf("split part %d of %d", i, n))
		}
	}
	if strings.Join(labels, "; ") != strings.Join(parts, "; ") {
		t.Errorf("labels %q, want %q", labels, parts)
	}
	plan, err := PlanChaos(ds, ChaosOptions{Split: true, Secret: []byte("new"), Times: 2})
	if err != nil || plan[1].Label() != fmt.Sprintf("split part 1 of %d, copy 2 of 2", len(ids[0])) {
		t.Errorf("twice: %q, %v", plan[1].Label(), err)
	}
	if _, err := PlanChaos(ds, ChaosOptions{Split: true}); err == nil {
		t.Error("split without a secret was planned")
	}
	if _, err := PlanChaos(ds, ChaosOptions{Split: true, Merge: true, Secret: []byte("x")}); err != ErrSplitMerge {
		t.Errorf("split+merge: %v", err)
	}
	bad := captured(3, "x", simulate.New(1).Message())
	bad.Body = []byte("not json")
	if _, err := PlanChaos([]*inspector.Delivery{bad}, ChaosOptions{Split: true, Secret: []byte("x")}); err == nil {
		t.Error("a non-message was split")
	}
}

func TestChaosMerge(t *testing.T) {
	srv, got := chaosServer(t, "new")
	ds, ids := chaosInput()
	rep, err := New(nil).Chaos(context.Background(), ds, ChaosOptions{Target: srv.URL, Merge: true, Secret: []byte("new"), Times: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := got()
	if len(s) != 2 {
		t.Fatalf("server saw %d messages, want the merged one twice", len(s))
	}
	want := append(append([]string{}, ids[0]...), ids[1]...)
	orig := map[string]bool{}
	for _, d := range ds {
		m, _ := inspector.DecodeMessage(d.Body)
		orig[m.HookUUID] = true
	}
	for _, x := range s {
		if !slices.Equal(x.events, want) || x.sig != inspector.SignatureValid || orig[x.hook] || len(x.hook) != 32 {
			t.Errorf("merged message %+v, want events %v under a new hook uuid", x, want)
		}
	}
	if s[0].hook != s[1].hook {
		t.Error("the two copies of the merged message differ in hook uuid")
	}
	if line := rep.Results[1].Line(); !strings.HasPrefix(line, "deliveries 1,2 merged copy 2 of 2 (4 events) -> ") || !strings.Contains(line, ": 200 OK in ") {
		t.Errorf("line: %s", line)
	}
}

func TestChaosShuffleIsSeeded(t *testing.T) {
	ds, _ := chaosInput()
	order := func(seed int64) []int64 {
		plan, err := PlanChaos(ds, ChaosOptions{Times: 4, Shuffle: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, p := range plan {
			out = append(out, p.Sources[0]*10+int64(p.Copy))
		}
		return out
	}
	a, b := order(42), order(42)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different orders: %v %v", a, b)
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if slices.Equal(a, sorted) {
		t.Errorf("shuffle left the order as it was: %v", a)
	}
	differs := false
	for seed := int64(1); seed < 5 && !differs; seed++ {
		differs = !slices.Equal(order(seed), a)
	}
	if !differs {
		t.Error("different seeds all gave the same order")
	}
	// The server sees the planned order.
	srv, got := chaosServer(t, "old")
	rep, err := New(nil).Chaos(context.Background(), ds, ChaosOptions{Target: srv.URL, Times: 4, Shuffle: true, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	var sentOrder []int64
	for _, r := range rep.Results {
		sentOrder = append(sentOrder, r.DeliveryID*10+int64(r.Copy))
	}
	if !slices.Equal(sentOrder, a) || len(got()) != 8 {
		t.Errorf("sent %v, planned %v", sentOrder, a)
	}
}

func TestChaosDelayAndCancel(t *testing.T) {
	srv, got := chaosServer(t, "old")
	ds, _ := chaosInput()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := New(nil).Chaos(ctx, ds, ChaosOptions{Target: srv.URL, Times: 50, Delay: time.Hour,
		OnResult: func(done, total int, r *Result) {
			n++
			if total != 100 {
				t.Errorf("total %d", total)
			}
			cancel()
		}})
	if err == nil || n != 1 || len(got()) != 1 {
		t.Errorf("err %v after %d sends (server saw %d): want a stop after the first", err, n, len(got()))
	}
}

func TestChaosChosenEvents(t *testing.T) {
	ds, ids := chaosInput()
	plan, err := PlanChaos(ds, ChaosOptions{Merge: true, Secret: []byte("k"), EventUUIDs: []string{ids[0][2], ids[1][0]}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || !slices.Equal(plan[0].Events, []string{ids[0][2], ids[1][0]}) || !slices.Equal(plan[0].Sources, []int64{1, 2}) {
		t.Errorf("merge of chosen events: %+v", plan)
	}
	plan, err = PlanChaos(ds, ChaosOptions{Split: true, Secret: []byte("k"), EventUUIDs: []string{ids[0][1]}})
	if err != nil || len(plan) != 1 || plan[0].Events[0] != ids[0][1] {
		t.Errorf("split of a chosen event: %v %+v", err, plan)
	}
	if _, err := PlanChaos(ds, ChaosOptions{Split: true, Secret: []byte("k"), EventUUIDs: []string{"nope"}}); err == nil {
		t.Error("no matching event, yet a plan")
	}
	if _, err := PlanChaos(ds, ChaosOptions{EventUUIDs: []string{ids[0][1]}}); err == nil {
		t.Error("chosen events without split or merge")
	}
}

// TestChaosFailuresInPlainWords: a send that gets no answer is counted as
// failed and says why in plain words, and the run goes on.
func TestChaosFailuresInPlainWords(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	defer srv.Close()
	defer close(hold)
	ds, _ := chaosInput()
	r := New(nil)
	r.Timeout = 200 * time.Millisecond
	rep, err := r.Chaos(context.Background(), ds, ChaosOptions{Target: srv.URL})
	if err != nil || rep.Failed != 2 || len(rep.Results) != 2 {
		t.Fatalf("%v %+v", err, rep)
	}
	want := srv.Listener.Addr().String() + " accepted the connection but did not answer within 200ms"
	if res := rep.Results[1]; res.Status != 0 || !strings.HasPrefix(res.Error, want) || !strings.Contains(res.Line(), "no answer: "+want) {
		t.Errorf("result %+v\nline %s", res, res.Line())
	}
}
