package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/rules"
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
		{spec: "localhost:3000/webhooks", name: "http://localhost:3000/webhooks", catchAll: true, loopback: true},
		{spec: "media.*=127.0.0.1:3000/m?a=b", name: "media.*=http://127.0.0.1:3000/m?a=b", glob: "media.*", loopback: true},
		{spec: "localhost:3000/h?a=b", name: "http://localhost:3000/h?a=b", catchAll: true, loopback: true},
		{spec: "media.*", err: "expected a URL such as"},
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

// TestClassify: what each way an app can fail looks like, produced
// against loopback servers, in the words a person acts on.
func TestClassify(t *testing.T) {
	closed := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	// raw serves each connection with fn (it reads the request first).
	raw := func(fn func(c net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					buf := make([]byte, 4096)
					c.Read(buf)
					fn(c)
				}()
			}
		}()
		return ln.Addr().String()
	}
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	hang := make(chan struct{})
	defer close(hang)
	for _, tc := range []struct {
		name, url string
		outcome   Outcome
		text      string
	}{
		{"2xx", "http://" + raw(func(c net.Conn) { io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n") }) + "/", Delivered, ""},
		{"500", "http://" + raw(func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 17\r\n\r\npanic: boom\n\tat x")
		}) + "/", Rejected, "the app answered 500 Internal Server Error: panic: boom …"},
		{"refused", "http://" + closed() + "/", Refused, "nothing is listening on 127.0.0.1:"},
		{"timeout", "http://" + raw(func(net.Conn) { <-hang }) + "/", Timeout, "within 300ms"},
		{"dropped", "http://" + raw(func(net.Conn) {}) + "/", Dropped, "closed the connection without answering (EOF); look at its log: it may have crashed on this request"},
		{"cut", "http://" + raw(func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhello world") }) + "/",
			Dropped, "answered 200, then its answer was cut short after 11 bytes of the 1000 it announced"},
		{"tls", tlsSrv.URL + "/", Unreachable, "is not signed by an authority this machine trusts (x509: certificate signed by unknown authority); an app with a private or self-signed certificate: --forward-ca FILE"},
	} {
		route, err := ParseRoute(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		f, err := New(Config{Routes: []Route{route}, Policy: Policy{Timeout: 300 * time.Millisecond}}, Options{Store: nopStore{}})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := f.attempt(context.Background(), f.workers[0], &inspector.Delivery{ID: 1, Method: "POST", Body: []byte("{}")}, KindAck, 1, DefaultMaxResponse)
		if a.Outcome != tc.outcome || !strings.Contains(a.Error, tc.text) {
			t.Errorf("%s: %s %q", tc.name, a.Outcome, a.Error)
		}
	}
	if o, text := classify(nil, exchange{}, &net.DNSError{Err: "no such host", Name: "nope", IsNotFound: true}, "nope:80", time.Second); o != Unreachable || !strings.Contains(text, "the host name nope does not resolve (no such host); check the host name in the URL") {
		t.Errorf("dns: %s %q", o, text)
	}
}

// nopStore is a Store that keeps nothing (tests of one attempt).
type nopStore struct{ Store }

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

// TestRequest: what goes to the app is the delivery's header values and
// name spelling, without the headers net/http writes itself (Host,
// Content-Length, hop-by-hop ones); an added header replaces a captured
// one of the same name; the signature is re-signed, or dropped when it
// did not verify; this process's mark goes after the marks of the hops
// before.
func TestRequest(t *testing.T) {
	d := &inspector.Delivery{Method: "POST", Body: []byte("{}"), Headers: []inspector.Header{
		{Name: "user-agent", Value: "a"}, {Name: "Host", Value: "h"}, {Name: "X-Debug", Value: "0"}, {Name: "Content-Length", Value: "2"},
		{Name: "x-service-signature", Value: "old"}, {Name: "Connection", Value: "keep-alive, X-Hop"}, {Name: "X-Hop", Value: "1"},
		{Name: "x-hookscope-forwarded", Value: "other"}, {Name: "content-type", Value: "application/json"},
	}}
	route, _ := ParseRoute("http://localhost:3000/h")
	f, err := New(Config{Routes: []Route{route}, Headers: []inspector.Header{{Name: "x-debug", Value: "1"}}}, Options{Store: nopStore{}, Instance: "me"})
	if err != nil {
		t.Fatal(err)
	}
	wire := func(s signing) string {
		req, err := f.request(context.Background(), route, d, s)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		req.Write(&b)
		return b.String()
	}
	got := wire(signing{})
	for _, want := range []string{"POST /h HTTP/1.1\r\nHost: localhost:3000\r\n", "User-Agent: a\r\n", "x-debug: 1\r\n", "Content-Length: 2\r\n",
		"x-service-signature: old\r\n", "X-Hookscope-Forwarded: other, me\r\n", "content-type: application/json\r\n", "\r\n\r\n{}"} {
		if !strings.Contains(got, want) {
			t.Errorf("request lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"X-Debug: 0", "X-Hop", "Connection", "Go-http-client", "Accept-Encoding", "Host: h"} {
		if strings.Contains(got, not) {
			t.Errorf("request has %q:\n%s", not, got)
		}
	}
	if got := wire(signing{secret: []byte("s")}); !strings.Contains(got, "X-Service-Signature: "+inspector.Sign([]byte("s"), d.Body)) || strings.Contains(got, "old") {
		t.Errorf("re-signed:\n%s", got)
	}
	if got := wire(signing{strip: true}); strings.Contains(strings.ToLower(got), "x-service-signature") {
		t.Errorf("unverified, sent with a signature:\n%s", got)
	}
}

// TestWhereRoutes: a route chosen by a condition, its name, and errors
// that point at the column of the whole route.
func TestWhereRoutes(t *testing.T) {
	for _, tc := range []struct {
		spec, name, err string
		column          int
	}{
		{spec: `where delivery.path == "/media" => localhost:3000/media`, name: `where delivery.path == "/media" => http://localhost:3000/media`},
		{spec: `WHERE media.* => http://u:p@localhost:3000/m`, name: `where media.* => http://%5BREDACTED%5D@localhost:3000/m`},
		{spec: `where delivery.body.contains("=>") => http://h/x`, name: `where delivery.body.contains("=>") => http://h/x`},
		{spec: `where events.exists(e, e.tpye == "media.ready") => http://h/x`, err: "undefined field 'tpye'", column: 25},
		{spec: `where events.exists(e, e.dedupe == "first") => http://h/x`, err: "not known on arrival", column: 25},
		{spec: `where delivery.path == "/a"`, err: "needs '=> URL'"},
		{spec: `where  => http://h/x`, err: "the expression is empty"},
		{spec: `where media.* => ftp://h/x`, err: "scheme must be http or https"},
	} {
		r, err := ParseRoute(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.err)
				continue
			}
			var ce rules.CompileErrors
			if tc.column > 0 && (!errors.As(err, &ce) || ce[0].Column != tc.column || ce[0].Expr != tc.spec) {
				t.Errorf("%q: %v, want column %d of the whole route", tc.spec, err, tc.column)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if r.Name() != tc.name || r.Where == nil || r.CatchAll() || r.Glob != "" {
			t.Errorf("%q: name %q where %v catch-all %v", tc.spec, r.Name(), r.Where != nil, r.CatchAll())
		}
	}
}

// TestSplitRoutes: the window's Forward to field, where routes with
// their spaces among one-word routes.
func TestSplitRoutes(t *testing.T) {
	for field, want := range map[string][]string{
		"":                             nil,
		"  localhost:3000/h  ":         {"localhost:3000/h"},
		"media.*=http://a/m http://b/": {"media.*=http://a/m", "http://b/"},
		`where delivery.path == "/a b" => http://a/ http://b/ where media.* =>   http://c/ media.*=http://d/`: {
			`where delivery.path == "/a b" => http://a/`, "http://b/", "where media.* =>   http://c/", "media.*=http://d/"},
		`http://a/ where delivery.size > 10`: {"http://a/", "where delivery.size > 10"},
	} {
		if got := SplitRoutes(field); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("SplitRoutes(%q) = %q, want %q", field, got, want)
		}
	}
}

// TestRoutesFor: which routes a delivery goes to, where routes asking
// their condition on what the receiver knows (the signature as the
// engine judges it), malformed deliveries included unless skipped.
func TestRoutesFor(t *testing.T) {
	routes, err := ParseRoutes([]string{
		"http://localhost:1/all",
		"media.*=http://localhost:1/media",
		`where delivery.signature == "valid" && events.exists(e, e.type == "media.ready") => http://localhost:1/ready`,
		`where delivery.truncated => http://localhost:1/cut`,
		`where viewing_session.* => http://localhost:1/views`,
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(typ string) *inspector.Delivery {
		b := []byte(fmt.Sprintf(`{"hook":{"uuid":"h"},"events":[{"uuid":"e","type":%q,"generated_at":"2026-03-01T09:00:00Z","metadata":{"account_id":"a"},"payload":{}}]}`, typ))
		return &inspector.Delivery{Method: "POST", Path: "/webhooks", Body: b, BodyLength: int64(len(b))}
	}
	// The engine's judgement, faked: the signed delivery comes on its
	// own path.
	verify := func(d *inspector.Delivery) inspector.SignatureResult {
		if d.Path == "/signed" {
			return inspector.SignatureResult{Status: inspector.SignatureValid}
		}
		return inspector.SignatureResult{Status: inspector.SignatureInvalid}
	}
	cut := msg("media.ready")
	cut.Truncated = true
	signed := msg("media.ready")
	signed.Path = "/signed"
	for _, skip := range []bool{false, true} {
		f, err := New(Config{Routes: routes, SkipMalformed: skip}, Options{Store: nopStore{}, Verify: verify})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			d    *inspector.Delivery
			want string
		}{
			{msg("media.ready"), "all media"},
			{signed, "all media ready"},
			{msg("viewing_session.play"), "all views"},
			{msg("playlist.created"), "all"},
			{cut, "all cut"},
		} {
			var got []string
			for _, w := range f.routesFor(c.d) {
				got = append(got, path.Base(w.route.Target.Path))
			}
			want := c.want
			if skip && c.d.Truncated {
				want = ""
			}
			if strings.Join(got, " ") != want {
				t.Errorf("skip malformed %v: %s: routes %q, want %q", skip, c.d.Body, got, want)
			}
		}
	}
}
