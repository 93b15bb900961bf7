package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// goodConsumer verifies signatures, answers 200 at once and processes each
// event uuid once.
func goodConsumer(t *testing.T, secret string) (*httptest.Server, func() map[string]int) {
	var mu sync.Mutex
	processed := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		if inspector.Verify(sig, sig != "", body, [][]byte{[]byte(secret)}).Status != inspector.SignatureValid {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		m, err := inspector.DecodeMessage(body)
		if err != nil {
			http.Error(w, "bad message", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, e := range m.Events {
			processed[e.UUID]++
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return processed
	}
}

func TestCheckGoodConsumer(t *testing.T) {
	srv, processed := goodConsumer(t, "shh")
	var cases []string
	rep, err := New(nil).CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 3, Limit: 5 * time.Second,
		OnCase: func(c CaseResult) { cases = append(cases, c.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != len(CheckCases()) || len(rep.Cases) != 22 {
		var b bytes.Buffer
		rep.WriteText(&b)
		t.Fatalf("good consumer did not pass every case:\n%s", b.String())
	}
	if strings.Join(cases, ",") != strings.Join(CheckCases(), ",") {
		t.Errorf("cases %v, want %v", cases, CheckCases())
	}
	// 17 types + duplicate + resend + 2 out of order; the forged ones are not processed.
	p := processed()
	dup := rep.Cases[17].Sends[0].Events[0]
	if p[dup] != 2 {
		t.Errorf("the duplicate event reached the consumer %d times, want 2", p[dup])
	}
	forged := rep.Cases[20].Sends[0].Events[0]
	if p[forged] != 0 {
		t.Error("the bad-signature event was processed")
	}
	types := map[string]bool{}
	for _, c := range rep.Cases[:17] {
		types[c.Sends[0].Types[0]] = true
	}
	for _, ti := range catalog.Types() {
		if !types[ti.Name] {
			t.Errorf("type %s not sent", ti.Name)
		}
	}
	oo := rep.Cases[19]
	if oo.Name != "out-of-order" || len(oo.Sends) != 2 || oo.Sends[0].Types[0] != catalog.TypeMediaReady || oo.Sends[1].Types[0] != catalog.TypeMediaProcessing {
		t.Errorf("out-of-order case: %+v", oo)
	}
	b, _ := json.Marshal(rep)
	if bytes.Contains(b, []byte("shh")) || !bytes.Contains(b, []byte(`"ok":true`)) {
		t.Errorf("JSON report: %s", b)
	}
}

func TestCheckBadConsumer(t *testing.T) {
	var mu sync.Mutex
	seenIDs := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, _ := inspector.DecodeMessage(body)
		if m == nil {
			return
		}
		mu.Lock()
		dup := seenIDs[m.Events[0].UUID]
		seenIDs[m.Events[0].UUID] = true
		mu.Unlock()
		switch {
		case m.Events[0].Type == catalog.TypeMediaFailed:
			// Slow: does the work before answering, longer than any limit
			// (it lets go when the checker gives up and hangs up).
			select {
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
		case m.Events[0].Type == catalog.TypeViewingPlay:
			w.WriteHeader(http.StatusAccepted)
		case dup:
			http.Error(w, "already have it", http.StatusConflict)
		}
		// Everything else, forged or not, gets a 200.
	}))
	defer srv.Close()
	rep, err := New(nil).CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 3, Limit: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Verdict{
		"type:" + catalog.TypeMediaFailed: Fail,
		"type:" + catalog.TypeViewingPlay: Warn,
		"type:" + catalog.TypeMediaReady:  Pass,
		"duplicate":                       Fail,
		"resend":                          Fail,
		"out-of-order":                    Pass,
		"bad-signature":                   Fail,
		"missing-signature":               Fail,
	}
	for _, c := range rep.Cases {
		if v, ok := want[c.Name]; ok && c.Verdict != v {
			t.Errorf("%s: verdict %s (%s), want %s", c.Name, c.Verdict, c.Explanation, v)
		}
	}
	if rep.OK() || rep.Failed != 5 || rep.Warned != 1 {
		t.Errorf("report: %d passed, %d warned, %d failed", rep.Passed, rep.Warned, rep.Failed)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"FAIL  bad-signature", "forged", "WARN  type:viewing_session.play", "409", "5 failed"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, b.String())
		}
	}
}

func TestCheckNeedsSecret(t *testing.T) {
	if _, err := New(nil).CheckConsumer(context.Background(), CheckOptions{Target: "http://127.0.0.1:1/"}); err == nil {
		t.Error("check without a secret ran")
	}
}

// TestCheckLeadsWithBehaviour: the report first says what the endpoint did
// across every case, judged by its answers, and no case blames the
// secret for an answer that is not about it.
func TestCheckLeadsWithBehaviour(t *testing.T) {
	verifying := func(secret string, ok int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			sig := r.Header.Get(inspector.SignatureHeader)
			if inspector.Verify(sig, sig != "", body, [][]byte{[]byte(secret)}).Status != inspector.SignatureValid {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(ok)
		}
	}
	for _, tc := range []struct {
		name      string
		h         http.HandlerFunc
		kinds     []string
		lead      []string
		notInCase string
	}{
		{"500 to everything", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "db down", 500) },
			[]string{"same-status"}, []string{"It answered 500 to all 23 requests, correctly signed or not", "Look at its log", `Its answer: "db down"`}, "secret"},
		{"404 to everything", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			[]string{"same-status"}, []string{"404 to all 23 requests", "check the path"}, "secret"},
		{"verifies with another secret", verifying("other", 200),
			[]string{"same-status"}, []string{"401 to all 23 requests", "same secret"}, ""},
		{"verifies nothing", func(w http.ResponseWriter, r *http.Request) {},
			[]string{"accepted-forged"}, []string{"accepted 2 deliveries with a wrong or missing signature (200)"}, ""},
		// net/http's client follows no redirect here: the answer is judged.
		{"a redirect to everything", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) },
			[]string{"same-status"}, []string{"It answered 302 to all 23 requests", "a redirect, which the service does not follow"}, ""},
		{"202 and verifies", verifying("shh", 202),
			[]string{"not-200"}, []string{"It answered 202 to 21 deliveries"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			rep, err := New(nil).CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 5, Limit: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, f := range rep.Findings {
				kinds = append(kinds, f.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("findings %q, want %q: %+v", kinds, tc.kinds, rep.Findings)
			}
			var b bytes.Buffer
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			lead, _, ok := strings.Cut(text, "Case by case:")
			if !ok {
				t.Fatalf("no lead before the cases:\n%s", text)
			}
			for _, w := range tc.lead {
				if !strings.Contains(lead, w) {
					t.Errorf("lead lacks %q:\n%s", w, lead)
				}
			}
			if tc.notInCase != "" {
				for _, c := range rep.Cases {
					if strings.Contains(c.Explanation, tc.notInCase) {
						t.Errorf("case %s blames the %s: %s", c.Name, tc.notInCase, c.Explanation)
					}
				}
			}
		})
	}
}

// TestCheckOverTLS: the check reaches an https consumer with the CA it is
// given, and without it says why nothing was answered, in plain words.
func TestCheckOverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		if inspector.Verify(sig, sig != "", body, [][]byte{[]byte("shh")}).Status != inspector.SignatureValid {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshakes below
	srv.StartTLS()
	defer srv.Close()
	r := New(nil)
	r.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	rep, err := r.CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 2})
	if err != nil || !rep.OK() || rep.Passed != 22 {
		t.Fatalf("%v: %d passed, %d failed", err, rep.Passed, rep.Failed)
	}
	rep, err = New(nil).CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 2})
	if err != nil || len(rep.Findings) != 1 || rep.Findings[0].Kind != "no-answer" ||
		!strings.Contains(rep.Findings[0].Text, "is not signed by an authority this machine trusts") {
		t.Fatalf("%v: %+v", err, rep.Findings)
	}
}

// TestCheckFailFast: with FailFast the check stops after the first failed
// case and counts the rest as not run; OnStart names each case as it
// begins.
func TestCheckFailFast(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m, _ := inspector.DecodeMessage(body); m != nil && m.Events[0].Type == catalog.TypeMediaReady {
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	var started []string
	rep, err := New(nil).CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 4, FailFast: true,
		OnStart: func(name string) { started = append(started, name) }})
	if err != nil {
		t.Fatal(err)
	}
	want := CheckCases()[:3] // created, processing, ready
	if strings.Join(started, ",") != strings.Join(want, ",") || len(rep.Cases) != 3 || rep.Failed != 1 || rep.Skipped != 19 || rep.OK() {
		t.Fatalf("started %v; %d cases, %d failed, %d skipped", started, len(rep.Cases), rep.Failed, rep.Skipped)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	if !strings.Contains(b.String(), "Stopped at the first failed case: 19 cases not run.") || !strings.Contains(b.String(), "FAIL  type:media.ready") {
		t.Errorf("text:\n%s", b.String())
	}
	if j, _ := json.Marshal(rep); !bytes.Contains(j, []byte(`"skipped":19`)) {
		t.Errorf("JSON lacks the skipped count: %s", j)
	}
	// Without it, every case runs.
	rep, _ = New(nil).CheckConsumer(context.Background(), CheckOptions{Target: srv.URL, Secret: []byte("shh"), Seed: 4})
	if len(rep.Cases) != 22 || rep.Skipped != 0 {
		t.Errorf("%d cases, %d skipped", len(rep.Cases), rep.Skipped)
	}
}
