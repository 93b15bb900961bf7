package inspector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/bindaddr"
	"github.com/hookscope/hookscope/internal/rawhttp"
)

// MaxHeaderBytes is the receiver's header limit. It is well above Go's
// 1 MB default so that absurd requests (a 1 MB path, 10,000 headers) reach
// the handler and are recorded rather than refused unseen.
const MaxHeaderBytes = 4 << 20

// Handler returns the receiver: it accepts a POST on any path, stores the
// request byte-exact, and only then answers. Everything else about the
// delivery is worked out after the answer, by Run.
func (e *Engine) Handler() http.Handler {
	return http.HandlerFunc(e.serveHTTP)
}

// ackBody is the tiny body of a positive answer.
const ackBody = "ok\n"

func (e *Engine) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if e.instance != "" && forwardedBy(r.Header.Values(ForwardedHeader), e.instance) {
		// This process forwarded the request itself: stored, it would be
		// forwarded again, without end.
		http.Error(w, fmt.Sprintf("508 Loop Detected: hookscope forwarded this request itself (%s: %s); it is not stored again. Check that no forward route leads back to this receiver.",
			ForwardedHeader, e.instance), http.StatusLoopDetected)
		return
	}
	received := e.now().UTC()
	e.mu.RLock()
	maxBody, answerer, tap, secrets := e.maxBody, e.answer, e.tap, e.secrets
	e.mu.RUnlock()

	d := &Delivery{
		ReceivedAt: received,
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		RemoteAddr: r.RemoteAddr,
		Source:     "receiver",
	}
	if d.Path == "" {
		d.Path = r.URL.Opaque
	}
	d.Headers, d.HeadersReconstructed = requestHeaders(r)

	body, n, release, readErr := e.readBody(r.Context(), r.Body, maxBody, r.ContentLength)
	defer release()
	d.Body = body
	d.BodyLength = n
	if readErr != nil {
		d.ReadError = readErr.Error()
	}
	if n > maxBody {
		d.Truncated = true
		if r.ContentLength > n {
			d.BodyLength = r.ContentLength
		}
	}

	// The answer is decided before the delivery is stored, so its row
	// says what the sender is answered: a refusal, the app's answer
	// (pass-through), or what the answer rules choose.
	reply := Reply{Status: http.StatusOK}
	relay := false
	switch {
	case r.Method != http.MethodPost:
		d.Rejected = true
		reply.Status = http.StatusMethodNotAllowed
	case d.Truncated:
		reply.Status = http.StatusRequestEntityTooLarge
	case readErr != nil:
		reply.Status = http.StatusBadRequest
	case tap != nil && tap.Relays(d):
		relay = true
	case answerer != nil:
		reply = answerer.Answer(d, secrets)
	}
	if relay {
		d.Status, d.Answer = 0, AnswerPassThrough
	} else {
		d.SetReply(reply)
	}
	if _, err := e.commit(r.Context(), d); err != nil {
		// Not stored, so not acknowledged: the sender must try again.
		// (commit reported the fault, once until the store works again.)
		http.Error(w, "hookscope could not store the delivery; send it again", http.StatusServiceUnavailable)
		return
	}
	if tap != nil {
		tap.Stored(d)
		if relay {
			tap.Relay(w, r, d)
			e.q.push(d) // with the status the service got
			return
		}
	}
	e.q.push(d)
	// What the row says is what the sender gets.
	answer(w, r, d, d.Reply())
}

// holdSlack is how long a held answer may take to write once its delay
// is over.
const holdSlack = 15 * time.Second

// answer sends d's reply: after its delay (ended early, with nothing
// sent, when the sender hangs up or the receiver stops), the status or a
// closed connection.
func answer(w http.ResponseWriter, r *http.Request, d *Delivery, reply Reply) {
	if reply.Delay > 0 {
		// The server's write deadline (for slow clients) would cut a
		// long hold short: this request's moves past the hold. (Its read
		// deadline does not: net/http clears it once the body is read.)
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(reply.Delay + holdSlack))
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	if reply.Close {
		closeConn(w)
		return
	}
	status := reply.Status
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Hookscope-Delivery", strconv.FormatInt(d.ID, 10))
	if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	if status == http.StatusRequestEntityTooLarge || d.Truncated {
		// The rest of the body is not read; do not keep the connection.
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(status)
	if status == http.StatusOK {
		io.WriteString(w, ackBody)
	} else {
		fmt.Fprintf(w, "%d %s (recorded by hookscope as delivery %d)\n", status, http.StatusText(status), d.ID)
	}
}

// forwardedBy reports whether a ForwardedHeader's values name instance.
func forwardedBy(values []string, instance string) bool {
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(name) == instance {
				return true
			}
		}
	}
	return false
}

// smallBody is how much of a body is read before any of the body memory
// budget is taken: webhook messages are a few KB, and their ack path
// stays free of the budget's bookkeeping.
const smallBody = 64 << 10

// readBody reads up to max+1 bytes so a body over the cap is detected
// without reading all of it. It returns at most max bytes, the count
// read, and a release to call once the body is no longer held for the
// request. Bodies bigger than smallBody first take their size (at most
// max+1) from the engine's body memory budget, waiting while concurrent
// big bodies hold it: memory for bodies being received stays bounded by
// the budget however many arrive at once (32 concurrent 9.5 MiB bodies
// took the process to 2 GB without it). A declared length sizes the
// buffer once instead of growing it (several copies of every body).
func (e *Engine) readBody(ctx context.Context, r io.Reader, max, declared int64) ([]byte, int64, func(), error) {
	none := func() {}
	if r == nil || r == http.NoBody {
		return nil, 0, none, nil
	}
	limit := io.LimitReader(r, max+1)
	size := max + 1
	if declared >= 0 {
		size = min(declared, max+1)
	}
	if size <= smallBody {
		b, err := readSized(limit, size)
		return capped(b, max, none, err)
	}
	// Start small: a body that declares no length may still be small.
	first, err := readSized(io.LimitReader(limit, smallBody), smallBody)
	if err != nil || int64(len(first)) < smallBody {
		return capped(first, max, none, err)
	}
	take := min(size, e.bodyBudget)
	if err := e.bodies.Acquire(ctx, take); err != nil {
		return capped(first, max, none, fmt.Errorf("waiting for memory to read the body: %w", err))
	}
	release := func() { e.bodies.Release(take) }
	b := make([]byte, len(first), size+1)
	copy(b, first)
	b, err = readInto(b, limit)
	return capped(b, max, release, err)
}

// capped cuts b to max bytes and returns it with the count read.
func capped(b []byte, max int64, release func(), err error) ([]byte, int64, func(), error) {
	n := int64(len(b))
	if n > max {
		b = b[:max]
	}
	return b, n, release, err
}

// readSized reads r to EOF into a buffer sized for n bytes (one byte more,
// so the EOF read needs no growth); a longer body still reads whole.
func readSized(r io.Reader, n int64) ([]byte, error) {
	return readInto(make([]byte, 0, n+1), r)
}

// readInto appends r to b up to EOF, growing b only when it is full.
func readInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func closeConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	c.Close()
}

// requestHeaders returns the headers as written on the wire when the
// listener captured them, else Go's parsed headers (sorted, canonical) and
// true.
func requestHeaders(r *http.Request) ([]Header, bool) {
	if fields, ok := rawhttp.HeadOf(r); ok {
		return headersOf(fields), false
	}
	var hs []Header
	if r.Host != "" {
		hs = append(hs, Header{Name: "Host", Value: r.Host})
	}
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		for _, v := range r.Header[k] {
			hs = append(hs, Header{Name: k, Value: v})
		}
	}
	if r.ContentLength >= 0 && r.Header.Get("Content-Length") == "" && len(r.TransferEncoding) == 0 && r.ContentLength > 0 {
		hs = append(hs, Header{Name: "Content-Length", Value: fmt.Sprint(r.ContentLength)})
	}
	return hs, true
}

// Server is a running receiver.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Serve listens on addr and serves h with the receiver's timeouts and
// raw-header capture. It returns once the socket is bound, so the address
// is known (addr may use port 0).
func Serve(addr string, h http.Handler, o ServerOptions) (*Server, error) {
	ln, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	return ServeListener(ln, h, o), nil
}

// Listen binds the receiver's address, for ServeListener: a port another
// program holds is a *PortInUseError. (listen binds before it opens its
// store, so a taken port creates none.)
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if bindaddr.InUse(err) {
		return nil, &PortInUseError{Addr: addr, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// PortInUseError says the receiver's address is held by another program:
// the user picks another port or stops that program.
type PortInUseError struct {
	// Addr is the address asked for (host:port).
	Addr string
	Err  error
}

// Error names the port in plain words.
func (e *PortInUseError) Error() string {
	host, port, err := net.SplitHostPort(e.Addr)
	if err != nil {
		return fmt.Sprintf("%s is in use by another program", e.Addr)
	}
	return fmt.Sprintf("port %s is in use by another program (on %s)", port, host)
}

// Unwrap exposes the bind error.
func (e *PortInUseError) Unwrap() error { return e.Err }

// ServerOptions are the receiver's settings beside its handler.
//
// Requests Go's HTTP server refuses itself before any handler runs (a
// malformed head, two different Content-Lengths, a control byte in a
// header, a head over MaxHeaderBytes, an Expect other than 100-continue)
// are answered by it (400, 417, 431, 501, 505) and not recorded: the
// service never sends them.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading the request line and headers
	// (slowloris). Default 10 s; tests shorten it (and ReadTimeout) to
	// prove slow clients are cut off without waiting that long.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request. Default 60 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing the answer, from the end of the
	// request's head. Default 30 s; a held answer extends its own.
	WriteTimeout time.Duration
}

// ServeListener serves h on an existing listener (tests, socket
// activation); see Serve.
func ServeListener(ln net.Listener, h http.Handler, o ServerOptions) *Server {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 60 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	baseCtx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		// Every request claims the head its connection copied, whichever
		// handler serves it, so heads stay in step with requests.
		Handler: rawhttp.Claim(h),
		// A slow client cannot pin a connection: headers within 10 s
		// (slowloris), a whole body within a minute.
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		// A held answer (Reply.Delay) moves its own deadlines.
		WriteTimeout:   o.WriteTimeout,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: MaxHeaderBytes,
		ConnContext:    rawhttp.ConnContext,
		BaseContext:    func(net.Listener) context.Context { return baseCtx },
		ErrorLog:       nil,
	}
	// Shutdown waits for handlers; a request held by an answer rule
	// ("200 after 12s") must let go at once.
	srv.RegisterOnShutdown(cancel)
	s := &Server{srv: srv, ln: ln, done: make(chan error, 1)}
	go func() {
		err := srv.Serve(rawhttp.NewListener(ln, MaxHeaderBytes))
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		cancel()
		s.done <- err
	}()
	return s
}

// headersOf converts captured fields to Headers.
func headersOf(fields []rawhttp.Field) []Header {
	hs := make([]Header, len(fields))
	for i, f := range fields {
		hs[i] = Header{Name: f.Name, Value: f.Value}
	}
	return hs
}

// Addr is the bound address, e.g. 127.0.0.1:8787.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops accepting, lets in-flight requests finish (each is stored
// before it is answered) and returns when they have, or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
		return fmt.Errorf("stop receiver on %s: %w", s.Addr(), err)
	}
	return <-s.done
}

// IsLoopback reports whether addr (host:port) binds only the loopback
// interface. An empty host binds every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
