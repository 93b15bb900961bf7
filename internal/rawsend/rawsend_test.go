package rawsend

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/internal/networds"
)

// listen serves each connection with serve on loopback and returns the
// target URL.
func listen(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *url.URL {
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
				c.SetDeadline(time.Now().Add(10 * time.Second))
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	u, _ := url.Parse("http://" + ln.Addr().String() + "/hook")
	return u
}

// readRequest reads one request's bytes: its head, then Content-Length
// bytes of body.
func readRequest(br *bufio.Reader) (string, error) {
	var b strings.Builder
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return b.String(), err
		}
		b.WriteString(line)
		if line == "\r\n" {
			break
		}
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "content-length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, n)
	_, err := io.ReadFull(br, body)
	b.Write(body)
	return b.String(), err
}

// TestHeadersGoOnTheWireInTheirOrder reads the raw bytes a send puts on a
// loopback socket: exactly the wire given, header order and case kept.
func TestHeadersGoOnTheWireInTheirOrder(t *testing.T) {
	got := make(chan string, 1)
	target := listen(t, func(c net.Conn, br *bufio.Reader) {
		raw, _ := readRequest(br)
		got <- raw
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Taken Gladly\r\nX-Reply: yes\r\nContent-Length: 5\r\n\r\nhello")
	})
	wire := "POST /hook HTTP/1.1\r\nuser-agent: Service-Webhooks/0.0.47\r\nhost: " + target.Host + "\r\nZ-Last: z\r\ncontent-type: application/json\r\nA-First: a\r\nx-service-signature: abc\r\nContent-Length: 2\r\n\r\n{}"
	a, err := Send(context.Background(), target, []byte(wire), Options{MaxBody: 64, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if raw := <-got; raw != wire {
		t.Errorf("on the wire:\n%q\nwant\n%q", raw, wire)
	}
	if a.Status != 202 || a.StatusText != "Taken Gladly" || a.Header.Get("X-Reply") != "yes" || string(a.Body) != "hello" || a.Truncated || a.Latency <= 0 {
		t.Errorf("answer %+v", a)
	}
}

func TestAnswerBodyCap(t *testing.T) {
	target := listen(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")
	})
	a, err := Send(context.Background(), target, []byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), Options{MaxBody: 4})
	if err != nil || string(a.Body) != "0123" || !a.Truncated {
		t.Fatalf("%v %+v", err, a)
	}
}

func TestTLS(t *testing.T) {
	var got string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = r.Header.Get("X-Order") + string(b)
	}))
	defer srv.Close()
	target, _ := url.Parse(srv.URL + "/x")
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	wire := "POST /x HTTP/1.1\r\nHost: " + target.Host + "\r\nx-order: 1\r\nContent-Length: 2\r\n\r\n{}"
	a, err := Send(context.Background(), target, []byte(wire), Options{TLSConfig: cfg, MaxBody: 64})
	if err != nil || a.Status != 200 || got != "1{}" {
		t.Fatalf("%v %+v %q", err, a, got)
	}
}

// TestFailuresSayHowFarTheyGot: each failure is a *networds.Error whose
// stage the plain words depend on.
func TestFailuresSayHowFarTheyGot(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed, _ := url.Parse("http://" + ln.Addr().String())
	ln.Close()
	hold := make(chan struct{})
	defer close(hold)
	hang := listen(t, func(c net.Conn, br *bufio.Reader) { readRequest(br); <-hold })
	midBody := listen(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhello world")
	})
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused on purpose
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	untrusted, _ := url.Parse(tlsSrv.URL)
	for _, tc := range []struct {
		name   string
		target *url.URL
		stage  networds.Stage
		kind   networds.Kind
		answer bool
	}{
		{"refused", closed, networds.Connect, networds.Refused, false},
		{"unknown CA", untrusted, networds.Connect, networds.Unreachable, false},
		{"no answer", hang, networds.Answer, networds.Timeout, false},
		{"cut mid-body", midBody, networds.Body, networds.Dropped, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Send(context.Background(), tc.target, []byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
				Options{Timeout: 300 * time.Millisecond, MaxBody: 64})
			var ne *networds.Error
			if !errors.As(err, &ne) || ne.Stage != tc.stage || ne.Budget != 300*time.Millisecond {
				t.Fatalf("error %v (%#v), want stage %d", err, ne, tc.stage)
			}
			if w := networds.Explain(err, tc.target.Host); w.Kind != tc.kind {
				t.Errorf("kind %s, want %s: %s", w.Kind, tc.kind, w)
			}
			if (a != nil) != tc.answer || a != nil && (a.Status != 200 || string(a.Body) != "hello world") {
				t.Errorf("answer %+v", a)
			}
		})
	}
	// Cancelled by the caller while waiting for the answer.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Send(ctx, hang, []byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), Options{})
	if w := networds.Explain(err, hang.Host); w.Kind != networds.Cancelled {
		t.Errorf("cancelled: %s (%v)", w, err)
	}
}
