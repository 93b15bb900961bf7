package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// rawServer records every request's bytes as they arrived on the socket,
// which net/http would not show (it canonicalises and reorders headers).
type rawServer struct {
	ln     net.Listener
	mu     sync.Mutex
	reqs   [][]byte
	status int
}

func newRawServer(t *testing.T) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, status: 200}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *rawServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	var raw bytes.Buffer
	length := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		raw.WriteString(line)
		if line == "\r\n" {
			break
		}
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return
	}
	raw.Write(body)
	s.mu.Lock()
	s.reqs = append(s.reqs, raw.Bytes())
	st := s.status
	s.mu.Unlock()
	io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(st)+" Whatever\r\nX-Reply: yes\r\nContent-Length: 5\r\n\r\nhello")
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/hooks?x=1" }

func (s *rawServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.reqs...)
}

// captured builds a delivery the way the receiver stores one: headers in
// wire order and odd case, including Host and hop-by-hop headers.
func captured(id int64, secret string, m simulate.Message) *inspector.Delivery {
	body := m.Body()
	return &inspector.Delivery{
		ID: id, Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)),
		Headers: []inspector.Header{
			{Name: "host", Value: "abc.trycloudflare.com"},
			{Name: "user-agent", Value: simulate.UserAgent},
			{Name: "Content-Length", Value: strconv.Itoa(len(body))},
			{Name: "x-service-signature", Value: inspector.Sign([]byte(secret), body)},
			{Name: "Connection", Value: "keep-alive, X-Hop"},
			{Name: "X-Hop", Value: "drop me"},
			{Name: "content-type", Value: "application/json"},
			{Name: "Cf-Ray", Value: "8a1b2c3d4e5f-AMS"},
			{Name: "X-Forwarded-For", Value: "203.0.113.9"},
		},
	}
}

type fakeRecorder struct {
	mu    sync.Mutex
	saved []*Result
}

func (f *fakeRecorder) SaveReplay(ctx context.Context, r *Result) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved = append(f.saved, r)
	return int64(len(f.saved)), nil
}

func TestRawReplayIsByteExact(t *testing.T) {
	srv := newRawServer(t)
	g := simulate.New(1)
	d := captured(7, "s3cret", g.Message(g.Event(catalog.TypeMediaCreated), g.Event(catalog.TypeMediaReady)))
	rec := &fakeRecorder{}
	r := New(rec)
	res, err := r.Replay(context.Background(), d, Options{Target: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	host := srv.ln.Addr().String()
	want := "POST /hooks?x=1 HTTP/1.1\r\n" +
		"host: " + host + "\r\n" +
		"user-agent: " + simulate.UserAgent + "\r\n" +
		"Content-Length: " + strconv.Itoa(len(d.Body)) + "\r\n" +
		"x-service-signature: " + inspector.Sign([]byte("s3cret"), d.Body) + "\r\n" +
		"content-type: application/json\r\n" +
		"Cf-Ray: 8a1b2c3d4e5f-AMS\r\n" +
		"X-Forwarded-For: 203.0.113.9\r\n\r\n" + string(d.Body)
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	if string(reqs[0]) != want {
		t.Errorf("wire bytes differ:\n got %q\nwant %q", reqs[0], want)
	}
	if res.Status != 200 || res.StatusText != "Whatever" || string(res.ResponseBody) != "hello" || res.Mode != ModeRaw {
		t.Errorf("result = %+v", res)
	}
	if len(res.Events) != 2 || res.HookUUID == "" || res.BodySize != len(d.Body) {
		t.Errorf("result did not describe the body: %+v", res)
	}
	if len(rec.saved) != 1 || rec.saved[0].ID != 0 && rec.saved[0] != res {
		t.Errorf("recorder got %d results", len(rec.saved))
	}
	if res.ID != 1 {
		t.Errorf("result id = %d, want the recorder's 1", res.ID)
	}
}

func TestReplayResignedVerifiesOnReceiver(t *testing.T) {
	const newSecret = "the-new-secret"
	var got inspector.SignatureResult
	var gotLen string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		got = inspector.Verify(sig, sig != "", body, [][]byte{[]byte(newSecret)})
		gotLen = r.Header.Get("Content-Length")
		w.WriteHeader(204)
	}))
	defer srv.Close()
	g := simulate.New(2)
	d := captured(3, "old-secret", g.Message(g.Event(catalog.TypeMediaUpdated)))
	r := New(nil)
	res, err := r.Replay(context.Background(), d, Options{Target: srv.URL, Secret: []byte(newSecret)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != inspector.SignatureValid {
		t.Fatalf("receiver verdict %s: %s", got.Status, got.Reason)
	}
	if res.Status != 204 || res.Mode != ModeResigned || !res.OK() {
		t.Errorf("result = %+v", res)
	}
	if gotLen != strconv.Itoa(len(d.Body)) {
		t.Errorf("Content-Length %s, want %d", gotLen, len(d.Body))
	}
	b, _ := json.Marshal(res)
	if bytes.Contains(b, []byte(newSecret)) {
		t.Error("the result carries the secret")
	}

	// Without a signature header, re-signing adds one.
	d.Headers = d.Headers[:3]
	if _, err := r.Replay(context.Background(), d, Options{Target: srv.URL, Secret: []byte(newSecret)}); err != nil {
		t.Fatal(err)
	}
	if got.Status != inspector.SignatureValid {
		t.Fatalf("receiver verdict after adding the header: %s", got.Status)
	}
}

func TestReplayEditedBody(t *testing.T) {
	srv := newRawServer(t)
	g := simulate.New(3)
	d := captured(9, "k", g.Message(g.Event(catalog.TypeMediaReady)))
	r := New(nil)
	tests := []struct {
		name, body string
		stale      bool
		secret     string
		wantErr    string
		wantOffset int64
	}{
		{name: "syntax error", body: "{\"hook\": {\"uuid\": \"x\"},\n \"events\": [}", secret: "k", wantErr: "line 2, column 13", wantOffset: 36},
		{name: "truncated", body: `{"hook":`, secret: "k", wantErr: "ends early", wantOffset: 8},
		{name: "trailing data", body: `{} {}`, secret: "k", wantErr: "after the JSON value", wantOffset: 3},
		{name: "empty", body: "  ", secret: "k", wantErr: "empty"},
		{name: "no secret", body: `{"hook":{"uuid":"a"},"events":[]}`, wantErr: "needs a secret"},
		{name: "edited", body: `{"hook":{"uuid":"a"},"events":[]}`, secret: "k"},
		{name: "stale on purpose", body: `{"hook":{"uuid":"b"},"events":[]}`, stale: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.requests())
			res, err := r.Replay(context.Background(), d, Options{Target: srv.url(), Body: []byte(tt.body), Secret: []byte(tt.secret), StaleSignature: tt.stale})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				var je *JSONError
				if tt.wantOffset > 0 && (!errors.As(err, &je) || je.Offset != tt.wantOffset) {
					t.Errorf("error %v: want offset %d", err, tt.wantOffset)
				}
				if len(srv.requests()) != before {
					t.Error("a bad edit was sent")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wire := srv.requests()[before]
			if !bytes.HasSuffix(wire, []byte("\r\n\r\n"+tt.body)) {
				t.Errorf("body not sent as edited: %q", wire)
			}
			if !bytes.Contains(wire, []byte("Content-Length: "+strconv.Itoa(len(tt.body))+"\r\n")) {
				t.Errorf("Content-Length not recomputed: %q", wire)
			}
			wantSig := inspector.Sign([]byte("k"), []byte(tt.body))
			if tt.stale {
				wantSig = inspector.Sign([]byte("k"), d.Body)
			}
			if !bytes.Contains(wire, []byte("x-service-signature: "+wantSig+"\r\n")) {
				t.Errorf("signature: want %s in %q", wantSig, wire)
			}
			if res.Mode != ModeEdited {
				t.Errorf("mode %s", res.Mode)
			}
		})
	}
}

func TestReplayTargetErrors(t *testing.T) {
	d := captured(1, "k", simulate.New(4).Message())
	for _, target := range []string{"", "ftp://x/y", "http://", "://bad"} {
		if _, err := New(nil).Replay(context.Background(), d, Options{Target: target}); err == nil {
			t.Errorf("target %q accepted", target)
		}
	}
	// A closed port is an outcome, recorded, not an error.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	rec := &fakeRecorder{}
	res, err := New(rec).Replay(context.Background(), d, Options{Target: "http://" + addr + "/?access_token=tok123"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 0 || res.Error != "nothing is listening on "+addr+" (connection refused); start it, or check the port in the URL" || len(rec.saved) != 1 {
		t.Errorf("result = %+v", res)
	}
	if strings.Contains(res.Target, "tok123") {
		t.Errorf("target not redacted: %s", res.Target)
	}
	d.Truncated = true
	if _, err := New(nil).Replay(context.Background(), d, Options{Target: "http://" + addr}); err == nil {
		t.Error("a truncated delivery was replayed")
	}
}

type memKV map[string][]byte

func (m memKV) Value(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok := m[key]
	return v, ok, nil
}

func (m memKV) SetValue(ctx context.Context, key string, value []byte) error {
	m[key] = value
	return nil
}

func TestRememberTarget(t *testing.T) {
	kv := memKV{}
	ctx := context.Background()
	if got, _ := LastTarget(ctx, kv); got != "" {
		t.Errorf("fresh store remembers %q", got)
	}
	if ok, err := RememberTarget(ctx, kv, "http://127.0.0.1:3000/hooks"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := RememberTarget(ctx, kv, "http://127.0.0.1:3000/hooks?token=abc"); ok {
		t.Error("a URL with a token was remembered")
	}
	if _, err := RememberTarget(ctx, kv, "nope"); err == nil {
		t.Error("a bad URL was remembered")
	}
	if got, _ := LastTarget(ctx, kv); got != "http://127.0.0.1:3000/hooks" {
		t.Errorf("remembered %q", got)
	}
}

func TestReplayOverTLSAndInterimAnswers(t *testing.T) {
	var got []byte
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(202)
	}))
	defer srv.Close()
	g := simulate.New(6)
	d := captured(1, "k", g.Message(g.Event(catalog.TypeMediaReady)))
	// The capture carried Expect: 100-continue; the server answers 100 first.
	d.Headers = append(d.Headers, inspector.Header{Name: "Expect", Value: "100-continue"})
	r := New(nil)
	r.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	res, err := r.Replay(context.Background(), d, Options{Target: srv.URL + "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 202 || !bytes.Equal(got, d.Body) {
		t.Errorf("status %d, error %q, body equal %v", res.Status, res.Error, bytes.Equal(got, d.Body))
	}
	// Without the test CA the handshake fails, as an outcome.
	res, err = New(nil).Replay(context.Background(), d, Options{Target: srv.URL})
	if err != nil || res.Status != 0 || !strings.Contains(res.Error, "not signed by an authority this machine trusts") {
		t.Errorf("untrusted certificate: %v %+v", err, res)
	}
}
