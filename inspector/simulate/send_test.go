package simulate

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// TestSend: each message is posted signed with its own secret, in order;
// each answer is reported; non-2xx answers count as not delivered; a
// redirect is an answer, not followed.
func TestSend(t *testing.T) {
	statuses := []int{200, 204, 500, 302}
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(got)
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		if statuses[n] == 302 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(statuses[n])
	}))
	defer srv.Close()
	g := New(9)
	out := SignedWith([]byte("key-one"), g.Message(g.Event(catalog.TypeMediaReady)), g.Message(g.Event(catalog.TypeMediaCreated)), g.Message(g.Event(catalog.TypeMediaFailed)))
	out = append(out, Outgoing{Message: g.Message(g.Event(catalog.TypeMediaDeleted)), Secret: []byte("key-two")})
	var seen []int
	rep := Send(context.Background(), srv.URL+"/hooks", out, SendOptions{OnAnswer: func(a Answer) { seen = append(seen, a.N) }})
	if len(got) != 4 || len(rep.Answers) != 4 || len(seen) != 4 || seen[3] != 4 {
		t.Fatalf("server saw %d, report %d answers, callback %v", len(got), len(rep.Answers), seen)
	}
	for i, a := range rep.Answers {
		if a.Status != statuses[i] || a.Err != nil || a.N != i+1 || a.Of != 4 || a.Bytes != len(bodies[i]) || a.Message.Hook.UUID != out[i].Message.Hook.UUID {
			t.Errorf("answer %d: %+v", i, a)
		}
		sig := got[i].Header.Get(inspector.SignatureHeader)
		if v := inspector.Verify(sig, true, bodies[i], [][]byte{out[i].Secret}); v.Status != inspector.SignatureValid {
			t.Errorf("message %d: signature %s", i, v.Reason)
		}
	}
	if ok, notOK, failed := rep.Counts(); ok != 2 || notOK != 2 || failed != 0 {
		t.Errorf("counts %d %d %d", ok, notOK, failed)
	}
	if err := rep.Err(); err == nil || err.Error() != "2 of 4 answers were not 2xx" {
		t.Errorf("Err: %v", err)
	}
}

// TestSendNothingListening: a refused connection stops the run at once
// and is said once, in plain words (internal/networds), without the URL's credentials.
func TestSendNothingListening(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	host := strings.TrimPrefix(dead.URL, "http://")
	g := New(3)
	var calls int
	rep := Send(context.Background(), "http://user:hush-hush@"+host+"/h?token=tok-tok", SignedWith(nil, g.Message(g.Event(catalog.TypeMediaReady)), g.Message(g.Event(catalog.TypeMediaReady)), g.Message(g.Event(catalog.TypeMediaReady))),
		SendOptions{OnAnswer: func(Answer) { calls++ }})
	err := rep.Err()
	if calls != 0 || len(rep.Answers) != 1 || rep.Unsent != 2 || err == nil || err.Error() != "nothing is listening on "+host+" (connection refused); no message was sent" {
		t.Fatalf("calls %d, answers %d, unsent %d, err %v", calls, len(rep.Answers), rep.Unsent, err)
	}
	if all := rep.URL + rep.Answers[0].Err.Error(); strings.Contains(all, "hush-hush") || strings.Contains(all, "tok-tok") {
		t.Errorf("credentials shown: %s", all)
	}
}

// TestSendReportErr: the summary line's plurals.
func TestSendReportErr(t *testing.T) {
	bad := Answer{Status: 500}
	for _, tc := range []struct {
		rep  Report
		want string
	}{
		{Report{Answers: []Answer{bad}}, "1 of 1 answer was not 2xx"},
		{Report{Answers: []Answer{bad, {Status: 200}}}, "1 of 2 answers were not 2xx"},
		{Report{Answers: []Answer{{Status: 200}}, Unsent: 2}, "stopped after 1 of 3 messages"},
		{Report{Answers: []Answer{{Status: 200}}}, ""},
	} {
		got := ""
		if err := tc.rep.Err(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Err() = %q, want %q", got, tc.want)
		}
	}
}

// TestSendStopsWhenCancelled: nothing is posted after the context ends.
func TestSendStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { cancel() }))
	defer srv.Close()
	g := New(4)
	rep := Send(ctx, srv.URL, SignedWith(nil, g.Message(g.Event(catalog.TypeMediaReady)), g.Message(g.Event(catalog.TypeMediaReady))), SendOptions{})
	if len(rep.Answers) != 1 || rep.Unsent != 1 || rep.Unreachable != nil {
		t.Fatalf("%+v", rep)
	}
}
