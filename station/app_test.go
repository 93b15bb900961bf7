package station_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/station"
)

// rawApp is the developer's app as the tests see it: a plain TCP server
// that keeps every request byte for byte (header block and body) and
// answers what answer says.
type rawApp struct {
	ln     net.Listener
	answer func(req []byte) (status int, body string, delay time.Duration)

	mu    sync.Mutex
	conns map[net.Conn]bool
	reqs  [][]byte
	got   chan struct{}
	wg    sync.WaitGroup
}

func newRawApp(t *testing.T, addr string) *rawApp {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a := &rawApp{ln: ln, got: make(chan struct{}, 1)}
	a.answer = func([]byte) (int, string, time.Duration) { return 200, "ok", 0 }
	a.wg.Add(1)
	go a.serve()
	t.Cleanup(a.close)
	return a
}

func (a *rawApp) url(path string) string { return "http://" + a.ln.Addr().String() + path }

func (a *rawApp) close() {
	a.ln.Close()
	a.mu.Lock()
	for c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *rawApp) serve() {
	defer a.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		if a.conns == nil {
			a.conns = map[net.Conn]bool{}
		}
		a.conns[c] = true
		a.mu.Unlock()
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer func() {
				a.mu.Lock()
				delete(a.conns, c)
				a.mu.Unlock()
				c.Close()
			}()
			br := bufio.NewReader(c)
			for {
				req, err := readRaw(br)
				if err != nil {
					return
				}
				a.mu.Lock()
				a.reqs = append(a.reqs, req)
				answer := a.answer
				a.mu.Unlock()
				select {
				case a.got <- struct{}{}:
				default:
				}
				status, body, delay := answer(req)
				if delay > 0 {
					time.Sleep(delay)
				}
				if status == 0 {
					return // close without answering
				}
				fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nX-App: yes\r\nContent-Length: %d\r\n\r\n%s", status, http.StatusText(status), len(body), body)
			}
		}()
	}
}

// readRaw reads one request with a Content-Length body, returning its bytes.
func readRaw(br *bufio.Reader) ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		b.WriteString(line)
		if line == "\r\n" {
			break
		}
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	b.Write(body)
	return b.Bytes(), nil
}

func (a *rawApp) setAnswer(f func(req []byte) (int, string, time.Duration)) {
	a.mu.Lock()
	a.answer = f
	a.mu.Unlock()
}

func (a *rawApp) requests() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]byte(nil), a.reqs...)
}

// bodies returns the request bodies the app got, in order.
func (a *rawApp) bodies() []string {
	var out []string
	for _, r := range a.requests() {
		_, body, _ := bytes.Cut(r, []byte("\r\n\r\n"))
		out = append(out, string(body))
	}
	return out
}

// waitFor waits until cond holds for the app's requests.
func (a *rawApp) waitFor(t *testing.T, what string, within time.Duration, cond func([][]byte) bool) {
	t.Helper()
	deadline := time.After(within)
	for !cond(a.requests()) {
		select {
		case <-a.got:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("after %v the app still had not %s (it got %d requests)", within, what, len(a.requests()))
		}
	}
}

// open starts a station on a fresh store with fwd.
func open(t *testing.T, dbPath string, fwd *forward.Config, secrets ...[]byte) *station.Station {
	t.Helper()
	if dbPath == "" {
		dbPath = filepath.Join(t.TempDir(), "hooks.db")
	}
	st, err := station.Open(context.Background(), station.Config{
		DBPath: dbPath, Addr: "127.0.0.1:0", Forward: fwd,
		Engine: inspector.Options{Secrets: secrets, Logf: t.Logf},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

func routes(t *testing.T, specs ...string) []forward.Route {
	t.Helper()
	rs, err := forward.ParseRoutes(specs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// post sends a signed delivery and returns the answer's status and body.
func post(t *testing.T, url string, body, secret []byte) (int, string) {
	t.Helper()
	req, err := simulate.NewRequest(context.Background(), url, body, secret)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rawPost writes a request byte for byte and returns the status line.
func rawPost(t *testing.T, addr, wire string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, wire); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

// message builds a message with one event per type.
func message(g *simulate.Generator, types ...string) []byte {
	var evs []simulate.Event
	for _, ty := range types {
		evs = append(evs, g.Event(ty))
	}
	return g.Message(evs...).Body()
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}
