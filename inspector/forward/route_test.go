package forward

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
)

func TestParseRoute(t *testing.T) {
	for _, tc := range []struct {
		spec, name, glob, err string
		catchAll, loopback    bool
	}{
		{spec: "http://localhost:3000/webhooks", name: "http://localhost:3000/webhooks", catchAll: true, loopback: true},
		{spec: "media.*=http://127.0.0.1:3000/media", name: "media.*=http://127.0.0.1:3000/media", glob: "media.*", loopback: true},
		{spec: "https://app.example.com/h?token=abc&x=1", name: "https://app.example.com/h?token=%5BREDACTED%5D&x=1", catchAll: true},
		{spec: "http://user:pw@[::1]:3000/h", name: "http://%5BREDACTED%5D@[::1]:3000/h", catchAll: true, loopback: true},
		{spec: "http://api.localhost/x?a=b=c", name: "http://api.localhost/x?a=b=c", catchAll: true, loopback: true},
		{spec: "", err: "empty forward route"},
		{spec: "localhost:3000", err: "expected a URL such as"},
		{spec: "=http://x/", err: "glob before '=' is empty"},
		{spec: "media.[=http://x/", err: "malformed"},
		{spec: "media/x=http://x/", err: "cannot contain spaces or '/'"},
		{spec: "media.*=ftp://x/", err: "scheme must be http or https"},
		{spec: "media.*=http:///nohost", err: "has no host"},
	} {
		r, err := ParseRoute(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if r.Name() != tc.name || r.Glob != tc.glob || r.CatchAll() != tc.catchAll || r.Loopback() != tc.loopback {
			t.Errorf("%q: name %q glob %q catch-all %v loopback %v", tc.spec, r.Name(), r.Glob, r.CatchAll(), r.Loopback())
		}
	}
}

func TestParseRoutesNamesDuplicatesAndHidesSecrets(t *testing.T) {
	rs, err := ParseRoutes([]string{"http://x/?token=a", "http://x/?token=b"})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Name() == rs[1].Name() || strings.Contains(rs[0].Name()+rs[1].Name(), "token=a") {
		t.Errorf("names %q %q", rs[0].Name(), rs[1].Name())
	}
	if _, err := ParseRoute("http://u:secretpw@x/"); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRoute("ftp://u:secretpw@x/"); err == nil || strings.Contains(err.Error(), "secretpw") {
		t.Errorf("a bad route's error shows its password: %v", err)
	}
}

func TestRouteMatches(t *testing.T) {
	r, _ := ParseRoute("viewing_session.*=http://x/")
	for types, want := range map[string]bool{
		"viewing_session.play":                  true,
		"media.ready,viewing_session.turnstile": true,
		"media.ready":                           false,
		"":                                      false,
	} {
		if got := r.Matches(strings.Split(types, ",")); got != want {
			t.Errorf("%q: %v", types, got)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for _, tc := range []struct{ in, name, value, err string }{
		{in: "X-Debug: 1", name: "X-Debug", value: "1"},
		{in: "Authorization:Bearer abc", name: "Authorization", value: "Bearer abc"},
		{in: "nocolon", err: "expected 'Name: value'"},
		{in: "Host: x", err: "cannot be added"},
		{in: "transfer-encoding: chunked", err: "cannot be added"},
		{in: "Bad Name: x", err: "does not allow"},
	} {
		h, err := ParseHeader(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		if err != nil || h.Name != tc.name || h.Value != tc.value {
			t.Errorf("%q: %+v %v", tc.in, h, err)
		}
	}
}

func TestParseMode(t *testing.T) {
	if m, err := ParseMode(""); m != ModeAck || err != nil {
		t.Error(m, err)
	}
	if _, err := ParseMode("sync"); err == nil || !strings.Contains(err.Error(), "expected ack or pass-through") {
		t.Error(err)
	}
}

func TestClassify(t *testing.T) {
	refused := &replay.ExchangeError{Stage: replay.StageConnect, Addr: "localhost:3000", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name    string
		resp    *replay.Response
		err     error
		outcome Outcome
		text    string
	}{
		{"2xx", &replay.Response{Status: 204}, nil, Delivered, ""},
		{"500", &replay.Response{Status: 500, StatusText: "Internal Server Error", Body: []byte("panic: boom\n\tat x")}, nil, Rejected, "the app answered 500 Internal Server Error: panic: boom …"},
		{"refused", nil, refused, Refused, "nothing is listening on localhost:3000: is your app running?"},
		{"dns", nil, &replay.ExchangeError{Stage: replay.StageConnect, Err: &net.DNSError{Err: "no such host", Name: "nope"}}, Unreachable, "does not resolve (no such host)"},
		{"timeout", nil, &replay.ExchangeError{Stage: replay.StageRead, TimedOut: true, Err: errors.New("no answer")}, Timeout, "no answer from localhost:3000 within 9s"},
		{"reset", nil, &replay.ExchangeError{Stage: replay.StageRead, Err: errors.New("EOF")}, Dropped, "closed the connection without answering (did it crash on this delivery?)"},
	} {
		o, text := classify(tc.resp, tc.err, "localhost:3000", 9*time.Second)
		if o != tc.outcome || !strings.Contains(text, tc.text) {
			t.Errorf("%s: %s %q", tc.name, o, text)
		}
	}
}

func TestAttemptShort(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		a    Attempt
		want string
	}{
		{Attempt{Outcome: Delivered, Status: 200, Latency: 12 * time.Millisecond, Number: 1}, "200 in 12 ms"},
		{Attempt{Outcome: Refused, Error: "nothing is listening on x", Number: 3, NextAt: now.Add(8 * time.Second)}, "refused (attempt 3, next in 8 s)"},
		{Attempt{Outcome: Dropped, Number: 2, NextAt: now.Add(2 * time.Second)}, "dropped (attempt 2, next in 2 s)"},
		{Attempt{Outcome: Rejected, Status: 500, Latency: 3 * time.Millisecond, Number: 6, GaveUp: true}, "500 in 3 ms (attempt 6, given up)"},
		{Attempt{Outcome: Delivered, Status: 200, Latency: 1500 * time.Millisecond, Number: 1, Reforward: true}, "200 in 1.5 s (re-forward)"},
		{Attempt{Outcome: Delivered, Status: 204, Latency: 490 * time.Microsecond, Number: 1}, "204 in 0.49 ms"},
	} {
		if got := tc.a.Short(now); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	var got []string
	for n := 1; n <= 6; n++ {
		got = append(got, backoff(n, RetryBackoffMin, RetryBackoffMax).String())
	}
	if s := fmt.Sprint(got); s != "[1s 2s 4s 8s 16s 30s]" {
		t.Errorf("retry backoff %s", s)
	}
	if d := backoff(40, DownBackoffMin, DownBackoffMax); d != DownBackoffMax {
		t.Errorf("down backoff after 40 tries %v", d)
	}
}

// TestRequestAddsHeadersInPlaceOfCaptured: an added header replaces the
// captured one of the same name; Host keeps its place.
func TestRequestAddsHeadersInPlaceOfCaptured(t *testing.T) {
	d := &inspector.Delivery{Method: "POST", Body: []byte("{}"), Headers: []inspector.Header{
		{Name: "User-Agent", Value: "a"}, {Name: "Host", Value: "h"}, {Name: "X-Debug", Value: "0"}, {Name: "Content-Length", Value: "2"},
	}}
	req := request(d, nil, []inspector.Header{{Name: "x-debug", Value: "1"}})
	var names []string
	for _, h := range req.Headers {
		names = append(names, h.Name+"="+h.Value)
	}
	if s := strings.Join(names, ","); s != "User-Agent=a,Content-Length=2,x-debug=1" || req.HostIndex != 1 {
		t.Errorf("headers %s, host at %d", s, req.HostIndex)
	}
}

// TestSpoken: durations as a person reads them, with no "1000 ms" at the
// edge between milliseconds and seconds.
func TestSpoken(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{490 * time.Microsecond, "0.49 ms"},
		{12 * time.Millisecond, "12 ms"},
		{999*time.Millisecond + 600*time.Microsecond, "1 s"},
		{999 * time.Millisecond, "999 ms"},
		{1500 * time.Millisecond, "1.5 s"},
		{130 * time.Second, "2 min 10 s"},
	} {
		if got := Spoken(tc.d); got != tc.want {
			t.Errorf("Spoken(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
