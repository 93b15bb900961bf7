package networds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// get sends a GET through net/http as Hookscope's clients do (a context
// budget, Traced for the stage) and reads the body, returning the error
// wrapped as a caller would.
func get(t *testing.T, client *http.Client, url string, budget time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	ctx, stage := Traced(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return &Error{Stage: stage(), Budget: budget, Err: err}
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return &Error{Stage: Body, Budget: budget, Err: err}
	}
	return nil
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// rawServer accepts connections and hands each to serve.
func rawServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// readHead reads a request's head, so the client's write completes.
func readHead(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for !strings.Contains(string(got), "\r\n\r\n") {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return
		}
	}
}

func TestExplainRealErrors(t *testing.T) {
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	trusted := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig
	withTLS := func(c *tls.Config) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}
	}
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(plainSrv.Close)
	// hang holds each request unanswered until the test ends.
	stop := make(chan struct{})
	hang := rawServer(t, func(c net.Conn) { readHead(c); <-stop })
	t.Cleanup(func() { close(stop) })
	closeAfterHead := rawServer(t, func(c net.Conn) { readHead(c) })
	resetAfterHead := rawServer(t, func(c net.Conn) {
		readHead(c)
		c.(*net.TCPConn).SetLinger(0)
	})
	midBody := rawServer(t, func(c net.Conn) {
		readHead(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhello world")
	})
	slowBody := rawServer(t, func(c net.Conn) {
		readHead(c)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhello world")
		<-stop
	})
	refused := closedPort(t)
	future := trusted.Clone()
	future.Time = func() time.Time { return time.Now().AddDate(100, 0, 0) }
	otherName := trusted.Clone()
	otherName.ServerName = "other.test"

	for _, tc := range []struct {
		name string
		err  func(t *testing.T) error
		host string
		kind Kind
		what []string // each must be in What
		fix  string   // must be in Fix
	}{
		{"closed port", func(t *testing.T) error { return get(t, plain, "http://"+refused+"/hook", 5*time.Second) },
			refused, Refused, []string{"nothing is listening on " + refused, "(connection refused)"}, "start it"},
		{"closed port, raw dial", func(t *testing.T) error { _, err := net.Dial("tcp", refused); return err },
			refused, Refused, []string{"nothing is listening"}, "check the port"},
		{"a server that hangs", func(t *testing.T) error { return get(t, plain, "http://"+hang+"/", 300*time.Millisecond) },
			hang, Timeout, []string{hang + " accepted the connection but did not answer within 300ms"}, "answer first"},
		{"a connect timeout", func(t *testing.T) error {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			_, err := (&net.Dialer{}).DialContext(ctx, "tcp", plainSrv.Listener.Addr().String())
			return &Error{Budget: 2 * time.Second, Err: err}
		}, "app.test:3000", Unreachable, []string{"could not connect to app.test:3000 within 2s"}, "firewall"},
		{"a TLS server with an unknown CA", func(t *testing.T) error { return get(t, plain, tlsSrv.URL, 5*time.Second) },
			"127.0.0.1", Unreachable, []string{"not signed by an authority this machine trusts", "x509: certificate signed by unknown authority"}, "http://"},
		{"a certificate for another name", func(t *testing.T) error { return get(t, withTLS(otherName), tlsSrv.URL, 5*time.Second) },
			"127.0.0.1", Unreachable, []string{"for another name"}, "host name"},
		{"an expired certificate", func(t *testing.T) error { return get(t, withTLS(future), tlsSrv.URL, 5*time.Second) },
			"127.0.0.1", Unreachable, []string{"has expired"}, "clock"},
		{"https to a plain HTTP server", func(t *testing.T) error {
			return get(t, plain, "https://"+plainSrv.Listener.Addr().String(), 5*time.Second)
		}, "127.0.0.1", Unreachable, []string{"answered in plain HTTP, not TLS"}, "use http://"},
		{"closed without answering", func(t *testing.T) error { return get(t, plain, "http://"+closeAfterHead, 5*time.Second) },
			"app", Dropped, []string{"app closed the connection without answering (EOF)"}, "crashed on this request"},
		{"reset without answering", func(t *testing.T) error { return get(t, plain, "http://"+resetAfterHead, 5*time.Second) },
			"app", Dropped, []string{"app closed the connection without answering"}, "its log"},
		{"closed mid-body", func(t *testing.T) error { return get(t, plain, "http://"+midBody, 5*time.Second) },
			"app", Dropped, []string{"in the middle of its answer (unexpected EOF)"}, "while answering"},
		{"a body that stops arriving", func(t *testing.T) error { return get(t, plain, "http://"+slowBody, 300*time.Millisecond) },
			"app", Timeout, []string{"began but did not finish within 300ms"}, "slow"},
		{"cancelled", func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hang, nil)
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := plain.Do(req)
			return err
		}, "app", Cancelled, []string{"cancelled"}, ""},
		{"no such host", func(t *testing.T) error {
			return fmt.Errorf("dial: %w", &net.DNSError{Err: "no such host", Name: "nope.test", IsNotFound: true})
		}, "nope.test:80", Unreachable, []string{"the host name nope.test does not resolve (no such host)"}, "host name in the URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if err == nil {
				t.Fatal("no error")
			}
			w := Explain(err, tc.host)
			t.Logf("%s: %s", w.Kind, w)
			if w.Kind != tc.kind {
				t.Errorf("kind %s, want %s (%s; from %v)", w.Kind, tc.kind, w, err)
			}
			for _, s := range tc.what {
				if !strings.Contains(w.What, s) {
					t.Errorf("what %q lacks %q (from %v)", w.What, s, err)
				}
			}
			if !strings.Contains(w.Fix, tc.fix) || tc.fix == "" && w.Fix != "" {
				t.Errorf("fix %q, want it to say %q", w.Fix, tc.fix)
			}
		})
	}
}

func TestWordsString(t *testing.T) {
	if s := (Words{What: "a", Fix: "b"}).String(); s != "a; b" {
		t.Errorf("%q", s)
	}
	if s := (Words{What: "a"}).String(); s != "a" {
		t.Errorf("%q", s)
	}
	// The wrapper keeps the error's text and lets errors.Is through.
	e := &Error{Stage: Answer, Err: io.EOF}
	if e.Error() != "EOF" || !errors.Is(e, io.EOF) {
		t.Errorf("%v", e)
	}
}
