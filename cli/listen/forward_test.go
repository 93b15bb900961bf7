package listen

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
)

// appServer is the developer's app: it keeps every body it gets and
// answers 500 to bodies holding "media.failed".
type appServer struct {
	mu     sync.Mutex
	bodies []string
	sigs   []string
	srv    *http.Server
	ln     net.Listener
}

func startApp(t *testing.T, addr string) *appServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a := &appServer{ln: ln}
	a.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.bodies = append(a.bodies, string(b))
		a.sigs = append(a.sigs, r.Header.Get(inspector.SignatureHeader))
		a.mu.Unlock()
		if strings.Contains(string(b), "media.failed") {
			http.Error(w, "boom: cannot handle media.failed", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	})}
	go a.srv.Serve(ln)
	t.Cleanup(a.stop)
	return a
}

func (a *appServer) stop() { a.srv.Close() }

func (a *appServer) got() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

// startListen runs listen in-process and returns its receiver URL.
func startListenCLI(t *testing.T, out, errOut *clitest.Buffer, args ...string) (url string, stop func() int) {
	t.Helper()
	env := &cmdutil.Env{Stdout: out, Stderr: errOut, Getenv: func(k string) string {
		switch k {
		case "HS_SECRET":
			return listenSecret
		case "APP_SECRET":
			return appSecret
		}
		if v, ok := strings.CutPrefix(k, "URL_"); ok {
			return v // a route given through --forward-to-env
		}
		return ""
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runCLI(ctx, env, append([]string{"listen", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "hooks.db")}, args...))
	}()
	first := out.WaitLines(t, 1)[0]
	if strings.HasPrefix(first, "{") {
		var v struct {
			Listening string `json:"listening"`
		}
		json.Unmarshal([]byte(first), &v)
		url = v.Listening
	} else {
		url = strings.Fields(strings.TrimPrefix(first, "Listening on "))[0]
	}
	var once sync.Once
	code := 0
	return url, func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("listen did not stop")
			}
		})
		return code
	}
}

func postSigned(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(inspector.SignatureHeader, inspector.Sign([]byte(listenSecret), []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("listen answered %d", resp.StatusCode)
	}
}

// TestListenForwardJSON: with --json, every attempt is a {"forward": …}
// line with its delivery id, status, and the app's body as text; the app
// gets every body byte-exact with its signature; the start line says
// where deliveries go.
func TestListenForwardJSON(t *testing.T) {
	app := startApp(t, "127.0.0.1:0")
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	url, stop := startListenCLI(t, out, errOut, "--json", "--secret-env", "HS_SECRET",
		"--forward-to", "http://"+app.ln.Addr().String()+"/hook", "--forward-retries", "1")
	defer stop()
	ok := msg("h1", ev("0123456789abcdef", "media.created", "m1", "2026-01-01T00:00:01Z"))
	bad := msg("h2", ev("fedcba9876543210", "media.failed", "m1", "2026-01-01T00:00:02Z"))
	postSigned(t, url, ok)
	postSigned(t, url, bad)
	out.WaitFor(t, `"gave_up":true`)
	var start struct {
		Forward struct {
			Mode   string   `json:"mode"`
			Routes []string `json:"routes"`
		} `json:"forward"`
	}
	json.Unmarshal([]byte(out.Lines()[0]), &start)
	if start.Forward.Mode != "ack" || len(start.Forward.Routes) != 1 {
		t.Errorf("start line: %s", out.Lines()[0])
	}
	type fwd struct {
		Forward struct {
			DeliveryID   int64   `json:"delivery_id"`
			Attempt      int     `json:"attempt"`
			Status       int     `json:"status"`
			Outcome      string  `json:"outcome"`
			LatencyMS    float64 `json:"latency_ms"`
			ResponseBody string  `json:"response_body"`
			GaveUp       bool    `json:"gave_up"`
			Error        string  `json:"error"`
		} `json:"forward"`
	}
	var attempts []fwd
	for _, l := range out.Lines() {
		if strings.HasPrefix(l, `{"forward":`) {
			var f fwd
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
			attempts = append(attempts, f)
		}
	}
	if len(attempts) != 3 {
		t.Fatalf("%d forward lines, want 3 (1 + 2 for the failing one):\n%s", len(attempts), out.String())
	}
	a0, last := attempts[0].Forward, attempts[2].Forward
	if a0.DeliveryID != 1 || a0.Status != 200 || a0.Outcome != "delivered" || a0.ResponseBody != `{"ok":true}` || a0.LatencyMS <= 0 {
		t.Errorf("first attempt: %+v", a0)
	}
	if last.DeliveryID != 2 || last.Attempt != 2 || last.Status != 500 || !last.GaveUp || !strings.Contains(last.ResponseBody, "boom") {
		t.Errorf("last attempt: %+v", last)
	}
	if got := app.got(); len(got) != 3 || got[0] != ok || got[1] != bad {
		t.Errorf("the app got %q", got)
	}
	app.mu.Lock()
	if app.sigs[0] != inspector.Sign([]byte(listenSecret), []byte(ok)) {
		t.Errorf("signature not forwarded intact: %q", app.sigs[0])
	}
	app.mu.Unlock()
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

// TestListenForwardTextAppDownAndBack: the text lines of a user whose
// app is down, then back: the down line once with why and how many wait
// (no line per retry), the back line once with how many waited, then
// each attempt under its delivery id.
func TestListenForwardTextAppDownAndBack(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	url, stop := startListenCLI(t, out, errOut, "--forward-to", "http://"+addr+"/hook")
	defer stop()
	out.WaitFor(t, "Forwarding to http://"+addr+"/hook (ack:")
	for i := range 3 {
		postSigned(t, url, msg("h"+string(rune('a'+i)), ev("aaaaaaaaaaaaaaa"+string(rune('0'+i)), "media.updated", "m1", "2026-01-01T00:00:01Z")))
	}
	out.WaitFor(t, "forward: your app at "+addr+" is down;")
	// Retries meanwhile (every 0.25 s, then slower) print nothing.
	time.Sleep(1500 * time.Millisecond)
	app := startApp(t, addr)
	out.WaitFor(t, "forward: your app at "+addr+" is back after")
	out.WaitFor(t, "#3     → 200 in ")
	text := out.String()
	if strings.Count(text, "is down;") != 1 || strings.Count(text, "is back after") != 1 || strings.Count(text, "refused") != 1 {
		t.Errorf("the down and back lines are not said once each, or a retry has a line:\n%s", text)
	}
	if !strings.Contains(text, "the 3 deliveries that waited go now, in order.") {
		t.Errorf("the back line does not say how many waited:\n%s", text)
	}
	if !strings.Contains(text, "Nothing is listening on "+addr+" (connection refused); start it, or check the port in the URL. Hookscope keeps trying every few seconds and sends them in order.") {
		t.Errorf("the down line does not say why:\n%s", text)
	}
	if len(app.got()) != 3 {
		t.Errorf("the app got %d deliveries, want 3", len(app.got()))
	}
	stop()
}

// TestListenForwardWarnsOffMachine: a target that is not on this machine
// works, with one warning on stderr.
func TestListenForwardWarnsOffMachine(t *testing.T) {
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	_, stop := startListenCLI(t, out, errOut, "--forward-to", "http://192.0.2.1:9/hook", "--forward-timeout", "1s")
	errOut.WaitFor(t, "warning: forwarding to http://192.0.2.1:9/hook, which is not on this machine: every delivery's body leaves it")
	stop()
	if n := strings.Count(errOut.String(), "not on this machine"); n != 1 {
		t.Errorf("warned %d times", n)
	}
}

// TestForwardRouteLines: a route's state change is one entry, the same
// in text and JSON; a route that stays up says nothing.
func TestForwardRouteLines(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		out := &clitest.Buffer{}
		p := newForwardPrinter(newPrinter(out, jsonOut, false), 1)
		rs := forward.RouteStatus{Name: "http://localhost:3000/h", Target: "http://localhost:3000/h", State: forward.RouteUp}
		p.route(rs, 0)
		rs.State, rs.Waiting, rs.LastError, rs.Since = forward.RouteDown, 41, "nothing is listening on localhost:3000 (connection refused); start it, or check the port in the URL", time.Now()
		p.route(rs, 0)
		p.route(rs, 0)
		rs.State = forward.RouteUp
		p.route(rs, 0)
		lines := out.Lines()
		if len(lines) != 2 {
			t.Fatalf("json %v: %d lines: %q", jsonOut, len(lines), lines)
		}
		if !jsonOut && (!strings.HasPrefix(lines[0], "forward: your app at localhost:3000 is down; 41 deliveries wait.") ||
			!strings.HasPrefix(lines[1], "forward: your app at localhost:3000 is back after less than a second; the 41 deliveries that waited go now, in order.")) {
			t.Errorf("text: %q", lines)
		}
		if jsonOut && (!strings.Contains(lines[0], `"forward_route":{`) || !strings.Contains(lines[0], `"state":"down"`) || !strings.Contains(lines[0], `"waiting":41`)) {
			t.Errorf("json: %q", lines)
		}
	}
}

// TestAttemptPrintedUnderItsDelivery: forwarding can finish before
// analysis; an attempt's line (and the route change it showed) waits for
// its delivery's line, and is printed anyway after holdFor or at exit.
func TestAttemptPrintedUnderItsDelivery(t *testing.T) {
	out := &clitest.Buffer{}
	pr := newPrinter(out, false, false)
	p := newForwardPrinter(pr, 1)
	at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	attempt := func(id int64, outcome forward.Outcome, state forward.RouteStateName) {
		a := &forward.Attempt{DeliveryID: id, Route: "http://localhost:3000/h", Number: 1, Outcome: outcome, Status: 200, StartedAt: at, Latency: 2 * time.Millisecond}
		if outcome != forward.Delivered {
			a.Status = 0
		}
		p.attempt(a, forward.RouteStatus{Name: a.Route, Target: a.Route, State: state, Since: at})
	}
	rec := func(id int64) *inspector.Record {
		return &inspector.Record{Delivery: &inspector.Delivery{ID: id, Method: "POST", Path: "/webhooks", Status: 200, ReceivedAt: at}}
	}
	attempt(1, forward.Delivered, forward.RouteUp)
	attempt(2, forward.Unreachable, forward.RouteDown)
	if got := out.String(); got != "" {
		t.Fatalf("attempts printed before their deliveries: %q", got)
	}
	pr.delivery(rec(1), nil)
	pr.delivery(rec(2), nil)
	attempt(3, forward.Delivered, forward.RouteUp) // its delivery never printed
	lines := out.Lines()
	want := []string{"#1     POST", "#1     → 200", "#2     POST", "#2     → ", "forward: your app at localhost:3000 is down"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(lines), len(want), lines)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], w)
		}
	}
	pr.flush()
	if l := out.Lines(); len(l) < len(want)+2 || !strings.Contains(l[len(want)], "#3     → 200") {
		t.Errorf("flush at exit: %q", l)
	}
}

// TestAttemptForAnEarlierRunPrintedAtOnce: after a restart, an attempt
// for a delivery stored before this run (owed since then; its line was
// printed by the run that received it) is printed at once, not held.
func TestAttemptForAnEarlierRunPrintedAtOnce(t *testing.T) {
	out := &clitest.Buffer{}
	pr := newPrinter(out, true, false)
	pr.before = 31
	p := newForwardPrinter(pr, 1)
	at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	a := &forward.Attempt{DeliveryID: 1, Route: "http://localhost:3000/h", Number: 1, Outcome: forward.Delivered, Status: 200, StartedAt: at, Reforward: true}
	p.attempt(a, forward.RouteStatus{Name: a.Route, Target: a.Route, State: forward.RouteUp, Since: at})
	if got := out.String(); !strings.Contains(got, `"reforward":true`) {
		t.Fatalf("the attempt for delivery 1 was held: %q", got)
	}
}

// TestListenStopSaysWhatWaits: Ctrl+C says how many deliveries wait for
// the app, to be sent on the next run.
func TestListenStopSaysWhatWaits(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	url, stop := startListenCLI(t, out, errOut, "--forward-to", "http://"+addr+"/hook")
	for i := range 3 {
		postSigned(t, url, msg("h"+string(rune('a'+i)), ev("aaaaaaaaaaaaaaa"+string(rune('0'+i)), "media.updated", "m1", "2026-01-01T00:00:01Z")))
	}
	out.WaitFor(t, "is down;")
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "3 deliveries wait to be forwarded to http://"+addr+"/hook on the next run") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
}

// TestListenPassThroughLines: in pass-through a delivery's line shows the
// status the service got (it showed 0), and the down line does not say
// deliveries wait: the service got 502 and sends them again itself. A
// route given through --forward-to-env shows no credential.
func TestListenPassThroughLines(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	url, stop := startListenCLI(t, out, errOut, "--secret-env", "HS_SECRET", "--forward-mode", "pass-through",
		"--forward-to-env", "URL_http://dev:s3cretpw@"+addr+"/hook")
	defer stop()
	if code, _ := postStatus(t, url, msg("h1", ev("aaaaaaaaaaaaaaa1", "media.ready", "m1", "2026-01-01T00:00:01Z"))); code != 502 {
		t.Fatalf("the service got %d, want 502", code)
	}
	out.WaitFor(t, "#1     POST /webhooks  502")
	out.WaitFor(t, "forward: your app at "+addr+" is down.")
	text := out.String()
	if strings.Contains(text, "wait") || !strings.Contains(text, "The service gets 502 for each delivery meanwhile") {
		t.Errorf("the pass-through down line:\n%s", text)
	}
	stop()
	if strings.Contains(out.String()+errOut.String(), "s3cretpw") {
		t.Errorf("the route's password was printed:\n%s\n%s", out.String(), errOut.String())
	}
}
