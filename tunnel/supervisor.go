// Package tunnel runs and supervises the developer's own cloudflared binary
// so the local webhook receiver (and the OAuth callback) get a public HTTPS
// address. It finds the binary, starts a quick or named tunnel, discovers
// the public URL, restarts cloudflared when it exits, reports state changes
// and keeps a redacted log. It never imports Fyne: the UI and the CLI
// subscribe to events.
package tunnel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/internal/pubsub"
)

// State is the tunnel's life-cycle state.
type State string

// The states a tunnel goes through.
const (
	// NotInstalled: no cloudflared binary was found; see InstallHelp.
	NotInstalled State = "not-installed"
	// Starting: cloudflared runs but has no public URL or connection yet.
	Starting State = "starting"
	// Ready: the public URL is known and an edge connection is registered.
	Ready State = "ready"
	// Reconnecting: cloudflared exited or lost its connection; the
	// supervisor is restarting it.
	Reconnecting State = "reconnecting"
	// Stopped: Stop was called (or the context ended).
	Stopped State = "stopped"
	// Failed: the supervisor gave up; Reason says why.
	Failed State = "failed"
)

// Status is a snapshot of the tunnel.
type Status struct {
	State State
	// PublicURL is the tunnel's base URL (https://host), without a path.
	PublicURL string
	// Reason explains Reconnecting and Failed (and NotInstalled) in plain words.
	Reason string
	// Version is cloudflared's version.
	Version Version
	// Binary is the cloudflared path in use.
	Binary string
	// Since is when State last changed.
	Since time.Time
	// PID is the running cloudflared's process id, 0 when none runs.
	PID int
	// MetricsAddr is cloudflared's --metrics address (host:port).
	MetricsAddr string
	// Restarts counts how often cloudflared was started again.
	Restarts int
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// StateChanged: Status.State changed (or its Reason did).
	StateChanged EventKind = iota + 1
	// URLChanged: a restarted quick tunnel got a new hostname; the POST
	// URL in the service's webhook settings must be updated.
	URLChanged
)

// URLChangedMessage is what to tell the user when the public URL changes.
const URLChangedMessage = "public URL changed — update the POST URL in the service's webhook settings"

// Event is one notification to subscribers.
type Event struct {
	Kind   EventKind
	Status Status
	// PreviousURL and Status.PublicURL are the old and new URL of a
	// URLChanged event.
	PreviousURL string
}

// Config says which cloudflared to run and how.
type Config struct {
	// Binary is the configured cloudflared path; empty means PATH.
	Binary string
	// LocalURL is the receiver's address, e.g. http://127.0.0.1:8080.
	LocalURL string
	// Token, when set, runs a named tunnel instead of a quick one. It is a
	// secret: it goes to cloudflared through TUNNEL_TOKEN, never argv or logs.
	Token string
	// Hostname is the named tunnel's public hostname (the user configured
	// it in Cloudflare); required with Token.
	Hostname string
	// Backoff returns the wait before restart number attempt (1, 2, ...).
	// Nil means 1s doubling up to 60s.
	Backoff func(attempt int) time.Duration
	// GracePeriod is how long cloudflared gets to exit after SIGTERM
	// before it is killed. Zero means 5s.
	GracePeriod time.Duration
	// PollInterval is how often the metrics endpoints are asked for the
	// URL and readiness. Zero means 250ms.
	PollInterval time.Duration
	// MaxFailures is how many runs in a row may end without ever being
	// ready before the supervisor gives up (Failed). Zero means 8;
	// negative means never give up.
	MaxFailures int
	// LogLines is how many log lines to keep. Zero means 500.
	LogLines int
	// Logf, when set, receives the supervisor's own diagnostics.
	Logf func(format string, args ...any)
	// Env is extra environment for cloudflared (KEY=VALUE), on top of
	// Hookscope's own.
	Env []string
	// GOOS selects the install help; empty means runtime.GOOS.
	GOOS string
}

// Supervisor runs one cloudflared and keeps it running.
type Supervisor struct {
	cfg  Config
	logs *ring

	mu       sync.Mutex
	status   Status
	lastURL  string // the URL last announced as ready, for URLChanged
	subs     pubsub.Hub[Event]
	started  bool
	cancel   context.CancelFunc
	done     chan struct{}
	queue    []Event
	queueSig chan struct{}
	dispDone chan struct{}
	// dispClosing tells the dispatcher to end when its queue is empty.
	dispClosing bool
}

// New makes a supervisor; nothing runs until Start.
func New(cfg Config) *Supervisor {
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = 5 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.MaxFailures == 0 {
		cfg.MaxFailures = 8
	}
	if cfg.LogLines <= 0 {
		cfg.LogLines = 500
	}
	if cfg.GOOS == "" {
		cfg.GOOS = runtime.GOOS
	}
	return &Supervisor{
		cfg:      cfg,
		logs:     newRing(cfg.LogLines),
		status:   Status{State: Stopped, Since: time.Now()},
		queueSig: make(chan struct{}, 1),
	}
}

// DefaultBackoff waits 1s, 2s, 4s ... up to 60s between restarts.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := time.Second
	for i := 1; i < attempt && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// ConsumerURL joins the public URL and the receiver path into the URL to
// paste as the webhook's POST URL.
func ConsumerURL(publicURL, path string) string {
	if publicURL == "" {
		return ""
	}
	if !strings.Contains(publicURL, "://") {
		publicURL = "https://" + publicURL
	}
	publicURL = strings.TrimRight(publicURL, "/")
	if path == "" || path == "/" {
		return publicURL + "/"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return publicURL + path
}

// Subscribe registers fn for events. Events are delivered in order on one
// goroutine of the supervisor's, never while it holds a lock, so fn may call
// State or Logs; a slow fn delays later events but never the tunnel. fn
// must not call Stop (Stop waits for event delivery to finish).
func (s *Supervisor) Subscribe(fn func(Event)) (cancel func()) {
	return s.subs.Subscribe(fn)
}

// State returns the current status.
func (s *Supervisor) State() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Logs returns the kept cloudflared log lines (secrets redacted), oldest
// first.
func (s *Supervisor) Logs() []string { return s.logs.snapshot() }

// Start finds cloudflared and starts supervising it. A missing binary gives
// the NotInstalled state and a *NotInstalledError; an unsupported version
// gives Failed and an error. Supervision ends with ctx or Stop.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("tunnel: supervisor already started")
	}
	s.started = true
	s.dispDone = make(chan struct{})
	s.mu.Unlock()
	go s.dispatch()

	if s.cfg.Token != "" && s.cfg.Hostname == "" {
		err := errors.New("tunnel: a named tunnel needs its public hostname")
		s.setState(Failed, err.Error(), nil)
		s.finishDispatch()
		return err
	}
	if s.cfg.Token == "" && s.cfg.LocalURL == "" {
		err := errors.New("tunnel: no local URL to expose")
		s.setState(Failed, err.Error(), nil)
		s.finishDispatch()
		return err
	}
	path, err := Find(s.cfg.Binary, s.cfg.GOOS)
	if err != nil {
		s.setState(NotInstalled, err.Error(), nil)
		s.finishDispatch()
		return err
	}
	v, err := readVersion(ctx, path, s.cfg.Env)
	if err != nil {
		s.logf("tunnel: %v", err)
		// An unreadable version is reported but not fatal: the binary may
		// still work, and the log view shows what happened.
	} else if v.Less(MinVersion()) {
		err := fmt.Errorf("unsupported cloudflared version %s (need %s or newer): update cloudflared", v, MinVersion())
		s.setState(Failed, err.Error(), func(st *Status) { st.Version = v; st.Binary = path })
		s.finishDispatch()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancel = cancel
	s.done = make(chan struct{})
	s.status.Binary = path
	s.status.Version = v
	s.mu.Unlock()
	go s.run(ctx, path)
	return nil
}

// Stop stops cloudflared (SIGTERM, then a kill after the grace period) and
// waits until it is gone. It is safe to call more than once.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Done is closed when supervision has ended (after Stop, the context's end
// or giving up). It is nil before a successful Start.
func (s *Supervisor) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// setState changes the state (and lets edit adjust other fields under the
// lock) and queues a StateChanged event when state or reason changed.
func (s *Supervisor) setState(st State, reason string, edit func(*Status)) {
	s.mu.Lock()
	old := s.status
	s.status.State = st
	s.status.Reason = reason
	if st == Ready {
		s.status.Reason = ""
	}
	if edit != nil {
		edit(&s.status)
	}
	changed := old.State != s.status.State || old.Reason != s.status.Reason
	if changed {
		s.status.Since = time.Now()
	}
	var evs []Event
	if st == Ready && changed {
		if s.lastURL != "" && s.lastURL != s.status.PublicURL {
			evs = append(evs, Event{Kind: URLChanged, Status: s.status, PreviousURL: s.lastURL})
		}
		s.lastURL = s.status.PublicURL
	}
	if changed {
		evs = append(evs, Event{Kind: StateChanged, Status: s.status})
	}
	s.queue = append(s.queue, evs...)
	s.mu.Unlock()
	if len(evs) > 0 {
		select {
		case s.queueSig <- struct{}{}:
		default:
		}
	}
}

// dispatch delivers queued events to subscribers in order until
// finishDispatch was called and the queue is empty.
func (s *Supervisor) dispatch() {
	defer close(s.dispDone)
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		closing := s.dispClosing
		s.mu.Unlock()
		for _, ev := range q {
			s.subs.Publish(ev)
		}
		if len(q) > 0 {
			continue
		}
		if closing {
			return
		}
		<-s.queueSig
	}
}

// finishDispatch lets the dispatcher end once the queued events are out,
// and waits for that.
func (s *Supervisor) finishDispatch() {
	s.mu.Lock()
	s.dispClosing = true
	s.mu.Unlock()
	select {
	case s.queueSig <- struct{}{}:
	default:
	}
	<-s.dispDone
}

// run is the supervision loop: start cloudflared, watch it, restart it.
func (s *Supervisor) run(ctx context.Context, path string) {
	// Every event, Stopped included, is delivered before Done closes, so
	// a caller of Stop has seen the whole story when Stop returns.
	defer func() {
		s.finishDispatch()
		close(s.done)
	}()
	failures := 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			wait := s.cfg.Backoff(attempt)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				s.setState(Stopped, "", func(st *Status) { st.PID, st.PublicURL = 0, "" })
				return
			case <-t.C:
			}
		}
		res := s.runOnce(ctx, path, attempt)
		if ctx.Err() != nil {
			s.setState(Stopped, "", func(st *Status) { st.PID, st.PublicURL = 0, "" })
			return
		}
		if res.wasReady {
			failures = 0
		} else {
			failures++
		}
		if s.cfg.MaxFailures > 0 && failures >= s.cfg.MaxFailures {
			s.setState(Failed, fmt.Sprintf("%s; gave up after %d attempts in a row", res.reason, failures), func(st *Status) { st.PID, st.PublicURL = 0, "" })
			return
		}
		// The old URL is dead with its process (a quick tunnel's hostname
		// never comes back), so it is not shown while reconnecting.
		s.setState(Reconnecting, res.reason+"; restarting", func(st *Status) {
			st.PID, st.PublicURL = 0, ""
			st.Restarts++
		})
	}
}

// runResult is how one cloudflared run ended.
type runResult struct {
	reason   string
	wasReady bool
}

// logHints is what the log said about a run: the URL from the box and why
// it might be failing.
type logHints struct {
	url                                             string
	registered                                      bool
	rateLimited, noNetwork, badToken, originTrouble bool
}

// hints collects logHints from the output goroutine for the watcher.
type hints struct {
	mu sync.Mutex
	h  logHints
}

func (h *hints) note(li LogInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if li.URL != "" && h.h.url == "" {
		h.h.url = li.URL
	}
	h.h.registered = h.h.registered || li.Registered
	h.h.rateLimited = h.h.rateLimited || li.RateLimited
	h.h.noNetwork = h.h.noNetwork || li.NoNetwork
	h.h.badToken = h.h.badToken || li.BadToken
	h.h.originTrouble = h.h.originTrouble || li.OriginUnreachable
}

func (h *hints) snapshot() logHints {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h
}

// freeLoopbackAddr picks a free 127.0.0.1 port for cloudflared's metrics
// server. Another program could take it before cloudflared binds it; the
// run then fails and is restarted with a new port.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a metrics port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("pick a metrics port: %w", err)
	}
	return addr, nil
}

// Args returns cloudflared's arguments for a tunnel with the given metrics
// address. A named tunnel's token is not among them: it travels in the
// TUNNEL_TOKEN environment variable, which `cloudflared tunnel run` reads,
// so it is not visible in ps.
func (c Config) Args(metricsAddr string) []string {
	args := []string{"tunnel", "--no-autoupdate", "--metrics", metricsAddr}
	if c.Token != "" {
		return append(args, "run")
	}
	return append(args, "--url", c.LocalURL)
}

func (s *Supervisor) runOnce(ctx context.Context, path string, attempt int) runResult {
	// Linux's parent-death signal fires when the OS thread that started
	// the child exits, not the process. Holding this goroutine on its
	// thread until the child is reaped keeps that thread alive (nothing
	// else can run on it and then retire it), so the signal fires only
	// when Hookscope itself dies.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	metrics, err := freeLoopbackAddr()
	if err != nil {
		return runResult{reason: err.Error()}
	}
	cmd := exec.Command(path, s.cfg.Args(metrics)...)
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	if s.cfg.Token != "" {
		cmd.Env = append(cmd.Env, "TUNNEL_TOKEN="+s.cfg.Token)
	}
	h := &hints{}
	lw := &lineWriter{fn: func(line string) {
		line = redact(line, s.cfg.Token)
		s.logs.add(line)
		h.note(ParseLogLine(line))
	}}
	cmd.Stdout = lw
	cmd.Stderr = lw
	// If a grandchild keeps the pipes open, Wait still returns.
	cmd.WaitDelay = s.cfg.GracePeriod
	setProcAttrs(cmd)
	if err := cmd.Start(); err != nil {
		return runResult{reason: fmt.Sprintf("could not start cloudflared: %v", err)}
	}
	release, err := afterStart(cmd)
	if err != nil {
		s.logf("tunnel: %v (cloudflared may outlive a crashed Hookscope)", err)
	}
	defer release()
	s.logs.add(fmt.Sprintf("hookscope: started %s %s (pid %d)", path, strings.Join(s.cfg.Args(metrics), " "), cmd.Process.Pid))
	state := Starting
	if attempt > 0 {
		state = Reconnecting
	}
	s.mu.Lock()
	reason := s.status.Reason
	s.mu.Unlock()
	if state == Starting {
		reason = ""
	}
	s.setState(state, reason, func(st *Status) {
		st.PID = cmd.Process.Pid
		st.MetricsAddr = metrics
		st.PublicURL = ""
	})

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	wasReady := s.watch(ctx, metrics, h, exited)
	var waitErr error
	select {
	case waitErr = <-exited:
	default:
		// ctx ended: stop cloudflared in order.
		_ = s.stopProcess(cmd, exited)
		lw.flush()
		return runResult{reason: "stopped", wasReady: wasReady}
	}
	lw.flush()
	return runResult{reason: s.exitReason(waitErr, h.snapshot()), wasReady: wasReady}
}

// watch polls the metrics endpoints (and reads the log hints) until
// cloudflared exits or ctx ends, moving between Starting/Reconnecting and
// Ready. It reports whether the run ever became ready. It returns with the
// exit still in the channel when ctx ended, and having consumed nothing
// otherwise: the exit error is put back.
func (s *Supervisor) watch(ctx context.Context, metrics string, h *hints, exited chan error) bool {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	wasReady := false
	ready := false
	publicURL := ""
	if s.cfg.Token != "" {
		publicURL = ConsumerURL(s.cfg.Hostname, "")
		publicURL = strings.TrimRight(publicURL, "/")
	}
	for {
		select {
		case <-ctx.Done():
			return wasReady
		case err := <-exited:
			exited <- err
			return wasReady
		case <-tick.C:
		}
		hs := h.snapshot()
		if publicURL == "" {
			if u := quickTunnelURL(ctx, client, metrics); u != "" {
				publicURL = u
			} else if hs.url != "" {
				publicURL = hs.url
			}
		}
		nowReady := metricsReady(ctx, client, metrics)
		if !nowReady && hs.registered && !ready && !wasReady {
			// Old cloudflared or a metrics server that did not come up:
			// trust the log's "Registered tunnel connection".
			nowReady = metricsUnreachable(ctx, client, metrics)
		}
		if ctx.Err() != nil {
			// A poll cut short by Stop says nothing about the tunnel.
			return wasReady
		}
		switch {
		case nowReady && publicURL != "" && !ready:
			ready, wasReady = true, true
			u := publicURL
			s.setState(Ready, "", func(st *Status) { st.PublicURL = u })
		case !nowReady && ready:
			ready = false
			s.setState(Reconnecting, "cloudflared lost its connection to Cloudflare", nil)
		}
	}
}

// quickTunnelURL asks GET /quicktunnel for the hostname. cloudflared
// answers {"hostname":"…"} with Content-Type text/plain, so the body is
// parsed whatever the header says.
func quickTunnelURL(ctx context.Context, c *http.Client, metrics string) string {
	body, code, err := get(ctx, c, "http://"+metrics+"/quicktunnel")
	if err != nil || code != http.StatusOK {
		return ""
	}
	var v struct {
		Hostname string `json:"hostname"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &v) != nil {
		return ""
	}
	host := strings.TrimSpace(v.Hostname)
	host = strings.TrimPrefix(strings.TrimPrefix(host, "https://"), "http://")
	host = strings.TrimRight(host, "/")
	if host == "" || strings.ContainsAny(host, " /\\?#@") {
		return ""
	}
	return "https://" + host
}

func metricsReady(ctx context.Context, c *http.Client, metrics string) bool {
	_, code, err := get(ctx, c, "http://"+metrics+"/ready")
	return err == nil && code == http.StatusOK
}

// metricsUnreachable reports whether the metrics server does not answer at
// all (as opposed to answering "not ready").
func metricsUnreachable(ctx context.Context, c *http.Client, metrics string) bool {
	_, _, err := get(ctx, c, "http://"+metrics+"/ready")
	return err != nil
}

func get(ctx context.Context, c *http.Client, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("get %s: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("get %s: %w", url, err)
	}
	return b, resp.StatusCode, nil
}

// stopProcess sends SIGTERM, waits the grace period, then kills the process
// group; it returns the Wait error.
func (s *Supervisor) stopProcess(cmd *exec.Cmd, exited chan error) error {
	if err := terminate(cmd); err != nil {
		s.logf("tunnel: SIGTERM cloudflared (pid %d): %v", cmd.Process.Pid, err)
	}
	t := time.NewTimer(s.cfg.GracePeriod)
	defer t.Stop()
	select {
	case err := <-exited:
		// The group may still hold stragglers that ignored SIGTERM.
		_ = kill(cmd)
		return err
	case <-t.C:
	}
	s.logs.add(fmt.Sprintf("hookscope: cloudflared (pid %d) did not exit %s after SIGTERM; killing it", cmd.Process.Pid, s.cfg.GracePeriod))
	if err := kill(cmd); err != nil {
		s.logf("tunnel: kill cloudflared (pid %d): %v", cmd.Process.Pid, err)
	}
	return <-exited
}

// exitReason turns how cloudflared ended into plain words.
func (s *Supervisor) exitReason(err error, h logHints) string {
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		return fmt.Sprintf("cloudflared stopped: %v", err)
	}
	switch {
	case code == 11:
		return "cloudflared exited with code 11: it tried to update itself (auto-update). " +
			"Hookscope passes --no-autoupdate, so this cloudflared may ignore it or be wrapped by a script; " +
			"update cloudflared with your package manager instead"
	case h.rateLimited:
		return fmt.Sprintf("rate limited by Cloudflare (error code 1015 / 429 Too Many Requests): too many quick tunnels were requested; wait a few minutes (cloudflared exited with code %d)", code)
	case h.badToken:
		return fmt.Sprintf("Cloudflare rejected the tunnel token: check the token of the named tunnel (cloudflared exited with code %d)", code)
	case h.noNetwork:
		return fmt.Sprintf("no network: cloudflared cannot reach Cloudflare (cloudflared exited with code %d)", code)
	case code < 0:
		return "cloudflared was killed by a signal"
	default:
		return fmt.Sprintf("cloudflared exited with code %d", code)
	}
}

// lineWriter turns cloudflared's output stream into lines.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.fn(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	// A runaway line without newline must not grow without bound.
	if len(w.buf) > 64<<10 {
		w.fn(string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.fn(string(w.buf))
		w.buf = nil
	}
}
