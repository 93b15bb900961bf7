package inspector

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("whsec_receiver_test")

// harness runs a receiver on a loopback port over a memStore and collects
// analyzed records.
type harness struct {
	t     *testing.T
	store *memStore
	eng   *Engine
	srv   *Server
	url   string

	mu   sync.Mutex
	recs []*Record
	got  chan *Record
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, store: newMemStore(), got: make(chan *Record, 1000)}
	h.eng = NewEngine(h.store, opts)
	h.eng.Subscribe(func(r *Record) {
		h.mu.Lock()
		h.recs = append(h.recs, r)
		h.mu.Unlock()
		h.got <- r
	})
	srv, err := Serve("127.0.0.1:0", h.eng.Handler(), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	h.url = "http://" + srv.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.eng.Run(ctx) }()
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		srv.Shutdown(sctx)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	})
	return h
}

// next waits for the next analyzed record.
func (h *harness) next() *Record {
	h.t.Helper()
	select {
	case r := <-h.got:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatal("no delivery analyzed within 10 s")
		return nil
	}
}

func (h *harness) post(path string, body []byte, headers map[string]string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Service-Webhooks/0.0.47")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func (h *harness) postSigned(body []byte) *http.Response {
	return h.post("/webhooks", body, map[string]string{SignatureHeader: Sign(testSecret, body)})
}

func event(uuid, typ, mediaID, at string) string {
	return fmt.Sprintf(`{"uuid":%q,"type":%q,"payload":{"media":{"id":%q,"name":"Intro","url":"https://example.com/medias/%s","duration":12.5,"thumbnail":{"url":"https://example.com/t.jpg"}}},"metadata":{"account_id":"acc1"},"generated_at":%q}`, uuid, typ, mediaID, mediaID, at)
}

func message(hook string, events ...string) []byte {
	return []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[%s]}`, hook, strings.Join(events, ",")))
}

func TestReceiverSignatureStatuses(t *testing.T) {
	h := newHarness(t, Options{Secrets: [][]byte{testSecret}})
	body := message("h1", event("e1", "media.ready", "m1", "2026-01-01T00:00:00Z"))

	if resp := h.postSigned(body); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if r := h.next(); r.Analysis.Signature.Status != SignatureValid || r.Analysis.Signature.SecretIndex != 0 {
		t.Fatalf("valid: %+v", r.Analysis.Signature)
	}
	h.post("/webhooks", body, map[string]string{SignatureHeader: Sign([]byte("other"), body)})
	r := h.next()
	if r.Analysis.Signature.Status != SignatureInvalid || r.Analysis.Signature.Expected[0] != Sign(testSecret, body) {
		t.Fatalf("invalid: %+v", r.Analysis.Signature)
	}
	if r.Delivery.Status != 200 {
		t.Fatalf("an invalid signature is still acknowledged (it is stored), got %d", r.Delivery.Status)
	}
	h.post("/webhooks", body, nil)
	if r := h.next(); r.Analysis.Signature.Status != SignatureMissing {
		t.Fatalf("missing: %+v", r.Analysis.Signature)
	}

	h2 := newHarness(t, Options{})
	h2.postSigned(body)
	if r := h2.next(); r.Analysis.Signature.Status != SignatureUnverified {
		t.Fatalf("unverified: %+v", r.Analysis.Signature)
	}
}

func TestReceiverStoresBeforeAnswering(t *testing.T) {
	h := newHarness(t, Options{})
	body := []byte("not json at all \x00\xff")
	resp := h.post("/hooks/custom", body, map[string]string{"Content-Type": "text/plain"})
	id := resp.Header.Get("X-Hookscope-Delivery")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("status %d id %q", resp.StatusCode, id)
	}
	// The row exists as soon as the answer arrived, analyzed or not.
	h.store.mu.Lock()
	d := h.store.rows[1]
	h.store.mu.Unlock()
	if d == nil || !bytes.Equal(d.Body, body) || d.Path != "/hooks/custom" {
		t.Fatalf("stored %+v", d)
	}
	r := h.next()
	if r.Analysis.Error == nil || !strings.Contains(r.Analysis.Error.Reason, "UTF-8") {
		t.Fatalf("malformed body not flagged: %+v", r.Analysis.Error)
	}
}

func TestReceiverMalformedAndWrongShape(t *testing.T) {
	h := newHarness(t, Options{})
	h.postSigned([]byte(`{"hook":{"uuid":"x"},"events":[`))
	if r := h.next(); r.Analysis.Error == nil || r.Analysis.Error.Offset < 0 {
		t.Fatalf("malformed JSON: %+v", r.Analysis.Error)
	}
	h.postSigned([]byte(`{"hook":{"uuid":"x"},"events":{}}`))
	if r := h.next(); r.Analysis.Error == nil || !strings.Contains(r.Analysis.Error.Reason, "events") {
		t.Fatalf("wrong shape: %+v", r.Analysis.Error)
	}
}

func TestLedger(t *testing.T) {
	h := newHarness(t, Options{Secrets: [][]byte{testSecret}})
	e1 := event("e1", "media.created", "m1", "2026-01-01T00:00:01Z")
	e2 := event("e2", "media.processing", "m1", "2026-01-01T00:00:02Z")
	e3 := event("e3", "media.ready", "m1", "2026-01-01T00:00:03Z")

	// A batched message: two events, both new.
	h.postSigned(message("h1", e1, e2))
	r := h.next()
	if len(r.Analysis.Events) != 2 || r.Analysis.Duplicates() != 0 || r.Analysis.Resend {
		t.Fatalf("batch: %+v", r.Analysis)
	}
	// The same message sent again: a re-send, both events duplicates.
	h.postSigned(message("h1", e1, e2))
	r = h.next()
	if !r.Analysis.Resend || r.Analysis.ResendOf != 1 || r.Analysis.Duplicates() != 2 {
		t.Fatalf("resend: %+v", r.Analysis)
	}
	if ev := r.Analysis.Events[0]; ev.Copies != 2 || ev.FirstDeliveryID != 1 || ev.Divergent {
		t.Fatalf("duplicate facts: %+v", ev)
	}
	// e2 again in a new message with different content: divergent.
	e2b := strings.Replace(e2, `"Intro"`, `"Intro (edited)"`, 1)
	h.postSigned(message("h2", e2b))
	r = h.next()
	if ev := r.Analysis.Events[0]; !ev.Duplicate || !ev.Divergent || ev.Copies != 3 || r.Analysis.Resend {
		t.Fatalf("divergent: %+v", ev)
	}
	// Same content, other formatting: a plain duplicate, not divergent.
	h.postSigned([]byte(strings.ReplaceAll(string(message("h3", e1)), ",", " ,\n ")))
	r = h.next()
	if ev := r.Analysis.Events[0]; !ev.Duplicate || ev.Divergent {
		t.Fatalf("reformatted duplicate: %+v", ev)
	}
	// e3 (generated 00:03) arrives, then an older event for the same media.
	h.postSigned(message("h4", e3))
	if r = h.next(); r.Analysis.Events[0].OutOfOrder {
		t.Fatal("in-order event flagged")
	}
	old := event("e0", "media.updated", "m1", "2026-01-01T00:00:02.5Z")
	h.postSigned(message("h5", old))
	r = h.next()
	if ev := r.Analysis.Events[0]; !ev.OutOfOrder || !strings.Contains(ev.OrderNote, "e3") {
		t.Fatalf("out of order: %+v", ev)
	}
	// Another media is a different subject.
	h.postSigned(message("h6", event("x1", "media.created", "m2", "2025-01-01T00:00:00Z")))
	if r = h.next(); r.Analysis.Events[0].OutOfOrder {
		t.Fatal("other subject flagged out of order")
	}
	// Within one message: the same uuid twice, and a later-then-earlier pair.
	h.postSigned(message("h7",
		event("y1", "media.created", "m3", "2026-02-01T00:00:05Z"),
		event("y1", "media.created", "m3", "2026-02-01T00:00:05Z"),
		event("y2", "media.created", "m3", "2026-02-01T00:00:01Z")))
	r = h.next()
	evs := r.Analysis.Events
	if evs[0].Duplicate || !evs[1].Duplicate || evs[1].Copies != 2 || !evs[2].OutOfOrder {
		t.Fatalf("in-message ledger: %+v", evs)
	}
}

func TestReceiverRejectsAndTruncates(t *testing.T) {
	h := newHarness(t, Options{MaxBody: 1024})
	resp, err := http.Get(h.url + "/webhooks?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET answered %d", resp.StatusCode)
	}
	r := h.next()
	if !r.Delivery.Rejected || r.Delivery.Method != "GET" || r.Delivery.Query != "x=1" || r.Analysis.Error == nil {
		t.Fatalf("GET record: %+v", r.Delivery)
	}

	big := bytes.Repeat([]byte("a"), 5000)
	resp = h.post("/webhooks", big, nil)
	if resp.StatusCode != 413 {
		t.Fatalf("oversize answered %d", resp.StatusCode)
	}
	r = h.next()
	if !r.Delivery.Truncated || len(r.Delivery.Body) != 1024 || r.Delivery.BodyLength != 5000 || r.Delivery.Status != 413 {
		t.Fatalf("oversize record: truncated=%v len=%d bodylen=%d", r.Delivery.Truncated, len(r.Delivery.Body), r.Delivery.BodyLength)
	}
	if !strings.Contains(r.Analysis.Error.Reason, "cap") {
		t.Fatalf("truncation not explained: %s", r.Analysis.Error.Reason)
	}
}

func TestReceiverKeepsRawHeaders(t *testing.T) {
	h := newHarness(t, Options{})
	conn, err := net.Dial("tcp", h.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(raw string) {
		t.Helper()
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	body1 := `{"hook":{"uuid":"a"},"events":[]}`
	// Two requests on one kept-alive connection, each after the answer to
	// the one before: Content-Length, then chunked with a trailer, with
	// headers in an order and case Go would not keep.
	send("POST /webhooks HTTP/1.1\r\nhost: example.test\r\nX-Service-Signature: abc\r\nuser-agent: Service-Webhooks/0.0.47\r\nX-Dup: 1\r\nx-dup: 2\r\nContent-Type: application/json\r\ncontent-length: " + fmt.Sprint(len(body1)) + "\r\n\r\n" + body1)
	send("POST /second HTTP/1.1\r\nHost: example.test\r\nZ-Last: z\r\nTransfer-Encoding: chunked\r\nA-First: a\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer-X: t\r\n\r\n")
	r1, r2 := h.next(), h.next()
	want1 := []Header{{"host", "example.test"}, {"X-Service-Signature", "abc"}, {"user-agent", "Service-Webhooks/0.0.47"}, {"X-Dup", "1"}, {"x-dup", "2"}, {"Content-Type", "application/json"}, {"content-length", fmt.Sprint(len(body1))}}
	if fmt.Sprint(r1.Delivery.Headers) != fmt.Sprint(want1) || r1.Delivery.HeadersReconstructed {
		t.Fatalf("headers 1:\n got %v\nwant %v", r1.Delivery.Headers, want1)
	}
	want2 := []Header{{"Host", "example.test"}, {"Z-Last", "z"}, {"Transfer-Encoding", "chunked"}, {"A-First", "a"}}
	if fmt.Sprint(r2.Delivery.Headers) != fmt.Sprint(want2) || r2.Delivery.HeadersReconstructed || string(r2.Delivery.Body) != "hello world" || r2.Delivery.Path != "/second" {
		t.Fatalf("request 2: %v %q", r2.Delivery.Headers, r2.Delivery.Body)
	}
	v, ok := r1.Delivery.Header("x-service-signature")
	if !ok || v != "abc" {
		t.Fatal("case-insensitive lookup failed")
	}
}

// TestPipelinedDeliveriesAreMarkedReconstructed: a request sent before the
// answer to the one before it gets Go's parsed headers, marked as such,
// never another request's.
func TestPipelinedDeliveriesAreMarkedReconstructed(t *testing.T) {
	h := newHarness(t, Options{})
	conn, err := net.Dial("tcp", h.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /one HTTP/1.1\r\nhost: x\r\nx-n: 1\r\nContent-Length: 2\r\n\r\n{}"+
		"POST /two HTTP/1.1\r\nhost: x\r\nx-n: 2\r\nContent-Length: 2\r\n\r\n{}")
	br := bufio.NewReader(conn)
	for range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	r1, r2 := h.next(), h.next()
	if fmt.Sprint(r1.Delivery.Headers) != "[{host x} {x-n 1} {Content-Length 2}]" || r1.Delivery.HeadersReconstructed {
		t.Errorf("first: %v reconstructed=%v", r1.Delivery.Headers, r1.Delivery.HeadersReconstructed)
	}
	if fmt.Sprint(r2.Delivery.Headers) != "[{Host x} {Content-Length 2} {X-N 2}]" || !r2.Delivery.HeadersReconstructed {
		t.Errorf("pipelined: %v reconstructed=%v", r2.Delivery.Headers, r2.Delivery.HeadersReconstructed)
	}
}

// TestBrowserOriginIsMarked: a cross-site POST from a web page carries
// Origin; the stored delivery is marked as posted by a web page, from its
// stored headers, where every face shows delivery problems.
func TestBrowserOriginIsMarked(t *testing.T) {
	h := newHarness(t, Options{Secrets: [][]byte{testSecret}})
	body := message("h-origin", event("e-origin", "media.created", "m1", "2024-01-01T00:00:00Z"))
	h.post("/webhooks", body, map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"})
	r := h.next()
	var origin []string
	for _, p := range r.Analysis.Problems {
		if p.Path == "Origin" {
			origin = append(origin, p.Message)
		}
	}
	if len(origin) != 1 || !strings.Contains(origin[0], "a web page in a browser posted this, not the service") {
		t.Fatalf("problems %+v", r.Analysis.Problems)
	}
	// The service's own deliveries carry no such mark.
	h.postSigned(body)
	for _, p := range h.next().Analysis.Problems {
		if p.Path == "Origin" {
			t.Fatalf("a delivery without Origin is marked: %+v", p)
		}
	}
}

// TestExpectationFailedIsNotRecorded: Go's server answers an Expect other
// than 100-continue with 417 before any handler runs. The client sees 417
// and the store has nothing for it (it once had a 400: a record that
// contradicted the wire); the next request is recorded as usual.
func TestExpectationFailedIsNotRecorded(t *testing.T) {
	h := newHarness(t, Options{})
	conn, err := net.Dial("tcp", h.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "POST /webhooks HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusExpectationFailed || resp.Header.Get("X-Hookscope-Delivery") != "" {
		t.Fatalf("answered %d (delivery %q), want 417 and no delivery", resp.StatusCode, resp.Header.Get("X-Hookscope-Delivery"))
	}
	if resp := h.postSigned([]byte(`{}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("next delivery answered %d", resp.StatusCode)
	}
	h.next()
	if n := len(h.store.ids()); n != 1 {
		t.Fatalf("%d deliveries stored, want only the one after the 417", n)
	}
}

// fixedAnswer answers every delivery it is given with one reply, and
// counts what it was asked.
type fixedAnswer struct {
	mu    sync.Mutex
	reply Reply
	asked int
}

func (f *fixedAnswer) Answer(*Delivery, [][]byte) Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return f.reply
}

func (f *fixedAnswer) set(r Reply) {
	f.mu.Lock()
	f.reply = r
	f.mu.Unlock()
}

// TestReplies: each answer an Answerer chooses, against the real
// receiver, stored before it is sent; refusals keep their answer.
func TestReplies(t *testing.T) {
	ans := &fixedAnswer{reply: Reply{Status: 500}}
	h := newHarness(t, Options{Answer: ans})
	body := message("h1", event("e1", "media.ready", "m1", "2026-01-01T00:00:00Z"))
	if resp := h.post("/webhooks", body, nil); resp.StatusCode != 500 {
		t.Fatalf("500 answered %d", resp.StatusCode)
	}
	if r := h.next(); r.Delivery.Status != 500 || r.Delivery.Answer != "" {
		t.Fatalf("500 record: status %d answer %q", r.Delivery.Status, r.Delivery.Answer)
	}
	ans.set(Reply{Close: true})
	req, _ := http.NewRequest(http.MethodPost, h.url+"/webhooks", bytes.NewReader(body))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("close answered")
	}
	if r := h.next(); r.Delivery.Answer != "close" || r.Delivery.Status != 0 || !bytes.Equal(r.Delivery.Body, body) {
		t.Fatalf("close record: %+v", r.Delivery)
	}
	// A hold longer than the client waits: nothing answered, the record
	// says what the rule chose.
	ans.set(Reply{Status: 200, Delay: time.Minute})
	client := &http.Client{Timeout: 300 * time.Millisecond}
	req, _ = http.NewRequest(http.MethodPost, h.url+"/webhooks", bytes.NewReader(body))
	if _, err := client.Do(req); err == nil {
		t.Fatal("a 1-minute hold answered before the client's timeout")
	}
	if r := h.next(); r.Delivery.Answer != "after 1m0s" || r.Delivery.Status != 200 {
		t.Fatalf("held record: status %d answer %q", r.Delivery.Status, r.Delivery.Answer)
	}
	// Requests the receiver refuses are not the Answerer's.
	ans.set(Reply{Status: 200})
	asked := ans.asked
	if resp := h.post("/webhooks", []byte(`{}`), nil); resp.StatusCode != 200 {
		t.Fatalf("200 answered %d", resp.StatusCode)
	}
	getReq, _ := http.NewRequest(http.MethodGet, h.url+"/webhooks", nil)
	resp, err := http.DefaultClient.Do(getReq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET answered %d", resp.StatusCode)
	}
	for range 2 {
		h.next()
	}
	if ans.asked != asked+1 {
		t.Errorf("the Answerer was asked %d times for a POST and a GET, want once", ans.asked-asked)
	}
}

// TestHeldPastServerTimeouts: a held answer outlasts the server's read
// and write time-outs (which protect it from slow clients) and is sent;
// so is a close after a hold.
func TestHeldPastServerTimeouts(t *testing.T) {
	ans := &fixedAnswer{reply: Reply{Status: 202, Delay: 400 * time.Millisecond}}
	ms := newMemStore()
	eng := NewEngine(ms, Options{Answer: ans})
	srv, err := Serve("127.0.0.1:0", eng.Handler(), ServerOptions{ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	resp, err := http.Post("http://"+srv.Addr()+"/webhooks", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("held 400 ms past 100 ms time-outs: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("held answer %d, want 202", resp.StatusCode)
	}
	ans.set(Reply{Close: true, Delay: 200 * time.Millisecond})
	if _, err := http.Post("http://"+srv.Addr()+"/webhooks", "application/json", strings.NewReader(`{}`)); err == nil {
		t.Fatal("close after a hold answered")
	}
	ms.mu.Lock()
	stored := len(ms.rows)
	ms.mu.Unlock()
	if stored != 2 {
		t.Fatalf("%d deliveries stored, want 2", stored)
	}
}

// TestReplyRecord: a reply goes into a delivery's Status and Answer and
// comes back out the same; rows of versions before answer rules read as
// they were answered.
func TestReplyRecord(t *testing.T) {
	cases := []struct {
		reply   Reply
		status  int
		answer  string
		text    string
		service int
	}{
		{Reply{Status: 200}, 200, "", "200", 200},
		{Reply{Status: 500}, 500, "", "500", 500},
		{Reply{Close: true}, 0, "close", "close", 0},
		{Reply{Status: 200, Delay: 12 * time.Second}, 200, "after 12s", "200 after 12s", 0},
		{Reply{Status: 503, Delay: 1500 * time.Millisecond}, 503, "after 1.5s", "503 after 1.5s", 503},
		{Reply{Close: true, Delay: 3 * time.Second}, 0, "close after 3s", "close after 3s", 0},
	}
	for _, c := range cases {
		var d Delivery
		d.SetReply(c.reply)
		if d.Status != c.status || d.Answer != c.answer {
			t.Errorf("%+v recorded as %d %q, want %d %q", c.reply, d.Status, d.Answer, c.status, c.answer)
		}
		if got := d.Reply(); got != c.reply {
			t.Errorf("%d %q read back as %+v, want %+v", d.Status, d.Answer, got, c.reply)
		}
		if got := c.reply.String(); got != c.text {
			t.Errorf("%+v.String() = %q, want %q", c.reply, got, c.text)
		}
		if got := c.reply.ServiceStatus(); got != c.service {
			t.Errorf("%+v.ServiceStatus() = %d, want %d", c.reply, got, c.service)
		}
	}
	if got := ReplyOf(0, "hang"); got != (Reply{Status: 200, Delay: HangFor}) {
		t.Errorf("an old hang row reads %+v", got)
	}
	if got := ReplyOf(502, AnswerPassThrough); got != (Reply{Status: 502}) {
		t.Errorf("a pass-through row reads %+v", got)
	}
}

func TestStoreFailureIsNotAcknowledged(t *testing.T) {
	ms := newMemStore()
	ms.failWrite = errors.New("disk full")
	eng := NewEngine(ms, Options{})
	srv, err := Serve("127.0.0.1:0", eng.Handler(), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	resp, err := http.Post("http://"+srv.Addr()+"/webhooks", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("unstored delivery answered %d, want 503", resp.StatusCode)
	}
}

func TestRecoveryAnalyzesWhatACrashLeft(t *testing.T) {
	ms := newMemStore()
	for i := 0; i < 3; i++ {
		ms.InsertDelivery(context.Background(), &Delivery{Method: "POST", Path: "/webhooks", Body: message(fmt.Sprint("h", i), event(fmt.Sprint("e", i), "media.ready", "m", "2026-01-01T00:00:00Z"))})
	}
	eng := NewEngine(ms, Options{})
	var n int
	eng.Subscribe(func(*Record) { n++ })
	if err := eng.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n != 3 || len(ms.analyses) != 3 {
		t.Fatalf("recovered %d, stored analyses %d", n, len(ms.analyses))
	}
}

func TestReverify(t *testing.T) {
	h := newHarness(t, Options{})
	body := message("h1", event("e1", "media.ready", "m1", "2026-01-01T00:00:00Z"))
	h.postSigned(body)
	if r := h.next(); r.Analysis.Signature.Status != SignatureUnverified {
		t.Fatal(r.Analysis.Signature)
	}
	h.eng.SetSecrets([][]byte{[]byte("wrong"), testSecret})
	rep, err := h.eng.Reverify(context.Background(), h.store)
	if err != nil || rep.Changed != 1 || rep.Checked != 1 || rep.Transitions["unverified -> valid with secret #2"] != 1 {
		t.Fatalf("reverify: %+v %v", rep, err)
	}
	if r := h.next(); r.Analysis.Signature.Status != SignatureValid || r.Analysis.Signature.SecretIndex != 1 {
		t.Fatalf("after reverify: %+v", r.Analysis.Signature)
	}
	if rep, _ := h.eng.Reverify(context.Background(), h.store); rep.Changed != 0 || rep.Unchanged != 1 {
		t.Fatalf("second reverify: %+v", rep)
	}
	// Another secret added: every digest expected changes, no verdict does.
	h.eng.SetSecrets([][]byte{[]byte("wrong"), testSecret, []byte("third")})
	if rep, _ := h.eng.Reverify(context.Background(), h.store); rep.Changed != 0 || rep.Unchanged != 1 {
		t.Fatalf("a secret added: %+v; the verdict did not change", rep)
	}
	if r := h.next(); len(r.Analysis.Signature.Expected) != 3 {
		t.Fatalf("the expected digests were not refreshed: %+v", r.Analysis.Signature)
	}
}

func TestConcurrentDeliveries(t *testing.T) {
	h := newHarness(t, Options{Secrets: [][]byte{testSecret}})
	const n = 200
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := message(fmt.Sprint("h", i), event(fmt.Sprint("e", i), "media.ready", fmt.Sprint("m", i), "2026-01-01T00:00:00Z"))
			req, _ := http.NewRequest(http.MethodPost, h.url+"/webhooks", bytes.NewReader(body))
			req.Header.Set(SignatureHeader, Sign(testSecret, body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if r := h.next(); r.Analysis.Signature.Status != SignatureValid {
			t.Fatalf("delivery %d: %s", r.Delivery.ID, r.Analysis.Signature.Status)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, ":8787": false, "0.0.0.0:1": false, "192.168.1.2:1": false, "bad": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}

func TestIngestThenDrainAnalyzesOnce(t *testing.T) {
	ms := newMemStore()
	eng := NewEngine(ms, Options{})
	var n int
	var outOfOrder bool
	eng.Subscribe(func(r *Record) {
		n++
		for _, e := range r.Analysis.Events {
			outOfOrder = outOfOrder || e.OutOfOrder
		}
	})
	ctx := context.Background()
	eng.Ingest(ctx, &Delivery{Method: "POST", Body: message("h1", event("e1", "media.processing", "m", "2026-01-01T00:00:01Z"))})
	eng.Ingest(ctx, &Delivery{Method: "POST", Body: message("h2", event("e2", "media.ready", "m", "2026-01-01T00:00:02Z"))})
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if n != 2 || outOfOrder {
		t.Fatalf("analyzed %d times (want 2), out-of-order flagged: %v", n, outOfOrder)
	}
	eng.Ingest(ctx, &Delivery{Method: "POST", Body: message("h3", event("e3", "media.updated", "m", "2026-01-01T00:00:03Z"))})
	if err := eng.Drain(ctx); err != nil || n != 3 {
		t.Fatalf("second drain: %d %v", n, err)
	}
}

// countingStore counts Unanalyzed calls, to see how dropped bodies are
// read back.
type countingStore struct {
	*memStore
	mu    sync.Mutex
	calls int
}

func (c *countingStore) Unanalyzed(ctx context.Context, after int64, limit int) ([]*Delivery, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.memStore.Unanalyzed(ctx, after, limit)
}

// A flood beyond QueueBytes keeps only ids in memory; analysis must read
// those bodies back (in runs, not one query each) and analyze every
// delivery with its own body.
func TestQueueOverflowReloadsBodies(t *testing.T) {
	cs := &countingStore{memStore: newMemStore()}
	eng := NewEngine(cs, Options{QueueBytes: 300})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 60
	var mu sync.Mutex
	hooks := map[int64]string{}
	all := make(chan struct{})
	eng.Subscribe(func(r *Record) {
		mu.Lock()
		defer mu.Unlock()
		hooks[r.Delivery.ID] = r.Analysis.HookUUID
		if len(hooks) == n {
			close(all)
		}
	})
	runDone := make(chan error, 1)
	// Run first, so its recovery finds an empty store and every delivery
	// goes through the queue.
	go func() { runDone <- eng.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	cs.mu.Lock()
	before := cs.calls
	cs.mu.Unlock()
	want := map[int64]string{}
	for i := range n {
		hook := fmt.Sprintf("hook-%02d", i)
		body := message(hook, event(fmt.Sprintf("ev-%02d", i), "media.ready", "m", "2026-01-01T00:00:01Z"))
		id, err := eng.Ingest(ctx, &Delivery{Method: "POST", Body: body, BodyLength: int64(len(body))})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = hook
	}
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatal("not every delivery was analyzed")
	}
	cancel()
	<-runDone
	mu.Lock()
	defer mu.Unlock()
	for id, hook := range want {
		if hooks[id] != hook {
			t.Errorf("delivery %d analyzed with hook %q, want %q", id, hooks[id], hook)
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if reloads := cs.calls - before; reloads > 10 {
		t.Errorf("%d store reads to reload %d dropped bodies: want a few runs", reloads, n)
	}
}

// TestServeSaysWhenThePortIsTaken: a port held by another program is
// named in plain words, as a PortInUseError the window can offer a fix for.
func TestServeSaysWhenThePortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_, err = Serve(ln.Addr().String(), http.NotFoundHandler(), ServerOptions{})
	var busy *PortInUseError
	if !errors.As(err, &busy) || err.Error() != "port "+port+" is in use by another program (on 127.0.0.1)" {
		t.Fatalf("Serve on a taken port: %v", err)
	}
	if _, err := Serve("127.0.0.1:99999", http.NotFoundHandler(), ServerOptions{}); err == nil || errors.As(err, &busy) {
		t.Fatalf("a bad port is not a taken one: %v", err)
	}
}
