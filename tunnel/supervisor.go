// Package tunnel runs and supervises the developer's own cloudflared binary
// so the local webhook receiver (and the OAuth callback) get a public HTTPS
// address. It finds the binary, starts a quick or named tunnel, discovers
// the public URL, says in plain words why a tunnel is not ready (and what
// to do), restarts cloudflared when it exits, reports state changes and
// keeps a redacted log. It never imports Fyne: the UI and the CLI
// subscribe to events.
package tunnel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hookscope/hookscope/internal/pubsub"
	"github.com/hookscope/hookscope/internal/redact"
)

// State is the tunnel's life-cycle state.
type State string

// The states a tunnel goes through.
const (
	// NotInstalled: there is no usable cloudflared (none found, or what
	// was found cannot run, is not cloudflared, or is too old); Reason
	// says which and what to do.
	NotInstalled State = "not-installed"
	// Starting: the tunnel has not been ready yet. cloudflared runs, or is
	// about to be started again (NextRetry); Reason says what went wrong
	// so far, "" while nothing has.
	Starting State = "starting"
	// Ready: the public URL is known and an edge connection is registered.
	Ready State = "ready"
	// Reconnecting: the tunnel was ready and is not any more: cloudflared
	// lost its connection, or exited and is being started again.
	Reconnecting State = "reconnecting"
	// Stopped: Stop was called (or the context ended).
	Stopped State = "stopped"
	// Failed: the supervisor gave up; Reason says why.
	Failed State = "failed"
)

// Status is a snapshot of the tunnel.
type Status struct {
	State State
	// PublicURL is the tunnel's base URL (https://host), without a path;
	// set only while Ready.
	PublicURL string
	// Reason says, in plain words, what is wrong and what to do: why the
	// tunnel is not ready yet (Starting), not any more (Reconnecting), or
	// given up (Failed, NotInstalled). "" when nothing is wrong.
	Reason string
	// Cause classifies Reason.
	Cause Cause
	// Attempt counts the cloudflared runs in a row that ended without the
	// tunnel getting ready (0 while none has).
	Attempt int
	// NextRetry is when cloudflared is started again; zero while it runs
	// or when it will not be.
	NextRetry time.Time
	// Protocol is the edge protocol Hookscope asked for ("" lets
	// cloudflared choose; "http2" after QUIC was found blocked).
	Protocol string
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
	// StateChanged: the Status changed: its State, Reason, Cause,
	// NextRetry or PID (a new run).
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
	// Protocol is cloudflared's edge protocol: "" lets cloudflared choose
	// (QUIC), and Hookscope switches to HTTP/2 once when QUIC (UDP port
	// 7844) is found blocked; "quic" or "http2" force one (--protocol).
	Protocol string
	// Backoff returns a fresh restart schedule for one supervision; it is
	// reset after a run that got ready. Nil means DefaultBackoff.
	Backoff func() backoff.BackOff
	// RateLimitWait is the least wait before asking for a quick tunnel
	// again after Cloudflare rate-limited one. Zero means 5 minutes.
	RateLimitWait time.Duration
	// EdgeTimeout is how long a run may go without an edge connection,
	// while its connection attempts fail, before the supervisor says why
	// (cloudflared's own connectivity pre-checks usually say it sooner).
	// Zero means 20 s.
	EdgeTimeout time.Duration
	// GracePeriod is how long cloudflared gets to exit after SIGTERM
	// before it is killed. Zero means 5s.
	GracePeriod time.Duration
	// PollInterval is how often the metrics endpoints are asked for the
	// URL and readiness. Zero means 250ms.
	PollInterval time.Duration
	// MaxFailures is how many runs in a row may end without ever being
	// ready before the supervisor gives up (Failed). Zero means 8;
	// negative means never give up. Permanent causes give up at once.
	MaxFailures int
	// LogLines is how many log lines to keep. Zero means 500.
	LogLines int
	// OnLog, when set, receives every log line as it comes: cloudflared's
	// (redacted) and the supervisor's own ("hookscope: …"). It runs on the
	// goroutine reading cloudflared's output and must not block.
	OnLog func(line string)
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
	if cfg.RateLimitWait <= 0 {
		cfg.RateLimitWait = 5 * time.Minute
	}
	if cfg.EdgeTimeout <= 0 {
		cfg.EdgeTimeout = 20 * time.Second
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
		status:   Status{State: Stopped, Since: time.Now(), Protocol: cfg.Protocol},
		queueSig: make(chan struct{}, 1),
	}
}

// DefaultBackoff is the restart schedule: about 2 s, doubling up to 5
// minutes, with ±20 % jitter so many Hookscopes behind one network do not
// ask Cloudflare in step. Every quick-tunnel run asks Cloudflare's API for
// a new tunnel (cloudflared cannot reuse one), so the schedule is slow.
func DefaultBackoff() backoff.BackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     2 * time.Second,
		RandomizationFactor: 0.2,
		Multiplier:          2,
		MaxInterval:         5 * time.Minute,
	}
}

// Protocols are the values Config.Protocol accepts ("" included).
func Protocols() []string { return []string{"", "auto", "quic", "http2"} }

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

// Logs returns the kept log lines, oldest first: cloudflared's (secrets
// redacted) and the supervisor's own ("hookscope: …": each start, each
// failed try and when the next is due).
func (s *Supervisor) Logs() []string { return s.logs.snapshot() }

// note keeps one of the supervisor's own lines with cloudflared's.
func (s *Supervisor) note(format string, args ...any) {
	s.addLog("hookscope: " + fmt.Sprintf(format, args...))
}

func (s *Supervisor) addLog(line string) {
	s.logs.add(line)
	if s.cfg.OnLog != nil {
		s.cfg.OnLog(line)
	}
}

// Start finds cloudflared, checks it (Resolve) and starts supervising it.
// No usable cloudflared gives the NotInstalled state and a
// *NotInstalledError; a configuration that cannot work gives Failed and an
// error. Supervision ends with ctx or Stop.
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

	fail := func(st State, cause Cause, err error) error {
		s.note("%v", err)
		s.setState(st, cause, err.Error(), nil)
		s.finishDispatch()
		return err
	}
	switch {
	case s.cfg.Token != "" && s.cfg.Hostname == "":
		return fail(Failed, CauseConfig, errors.New("tunnel: a named tunnel needs its public hostname"))
	case s.cfg.Token == "" && s.cfg.LocalURL == "":
		return fail(Failed, CauseConfig, errors.New("tunnel: no local URL to expose"))
	case s.cfg.Protocol != "" && !isProtocol(s.cfg.Protocol):
		return fail(Failed, CauseConfig, fmt.Errorf("tunnel: protocol %q is not one cloudflared knows (auto, quic, http2)", s.cfg.Protocol))
	}
	path, v, err := Resolve(ctx, s.cfg.Binary, s.cfg.GOOS, s.cfg.Env)
	if err != nil {
		return fail(NotInstalled, CauseNotInstalled, err)
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

func isProtocol(p string) bool {
	for _, q := range Protocols() {
		if p == q {
			return true
		}
	}
	return false
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

// setState changes the state, cause and reason (and lets edit adjust other
// fields under the lock) and queues a StateChanged event when anything a
// face shows changed.
func (s *Supervisor) setState(st State, cause Cause, reason string, edit func(*Status)) {
	s.mu.Lock()
	old := s.status
	s.status.State = st
	s.status.Cause, s.status.Reason = cause, reason
	if st == Ready {
		s.status.Cause, s.status.Reason = CauseNone, ""
	}
	if edit != nil {
		edit(&s.status)
	}
	if old.State != s.status.State {
		s.status.Since = time.Now()
	}
	changed := old.State != s.status.State || old.Reason != s.status.Reason || old.Cause != s.status.Cause ||
		!old.NextRetry.Equal(s.status.NextRetry) || old.PID != s.status.PID
	var evs []Event
	if st == Ready && old.State != Ready {
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

// run is the supervision loop: start cloudflared, watch it, restart it
// after a wait, give up on a permanent cause or too many failures.
func (s *Supervisor) run(ctx context.Context, path string) {
	// Every event, Stopped included, is delivered before Done closes, so
	// a caller of Stop has seen the whole story when Stop returns.
	defer func() {
		s.finishDispatch()
		close(s.done)
	}()
	stopped := func() {
		s.setState(Stopped, CauseNone, "", func(st *Status) { st.PID, st.PublicURL, st.NextRetry = 0, "", time.Time{} })
	}
	schedule := s.cfg.Backoff()
	schedule.Reset()
	failures := 0
	everReady := false
	protocol := s.cfg.Protocol
	for {
		res := s.runOnce(ctx, path, protocol, everReady)
		if ctx.Err() != nil {
			stopped()
			return
		}
		everReady = everReady || res.wasReady
		if res.switchTo != "" {
			// Not a failure: the same tunnel, another protocol, at once.
			protocol = res.switchTo
			s.note("QUIC (UDP port 7844) looks blocked; starting cloudflared again with --protocol %s", protocol)
			continue
		}
		if res.wasReady {
			failures = 0
			schedule.Reset()
		}
		failures++
		state := Starting
		if everReady {
			state = Reconnecting
		}
		wait := schedule.NextBackOff()
		give := ""
		switch {
		case res.cause.Permanent():
			give = res.reason
		case s.cfg.MaxFailures > 0 && failures >= s.cfg.MaxFailures:
			give = fmt.Sprintf("%s; gave up after %d tries in a row", res.reason, failures)
		case wait == backoff.Stop:
			give = fmt.Sprintf("%s; gave up after %d tries", res.reason, failures)
		}
		if give != "" {
			s.note("gave up: %s", give)
			s.setState(Failed, res.cause, give, func(st *Status) {
				st.PID, st.PublicURL, st.NextRetry, st.Attempt = 0, "", time.Time{}, failures
			})
			return
		}
		if res.cause == CauseRateLimited {
			wait = max(wait, s.cfg.RateLimitWait)
		}
		next := time.Now().Add(wait)
		s.note("try %d failed: %s; next try at %s (in %s)", failures, res.reason, next.Format(time.TimeOnly), wait.Round(time.Second))
		s.setState(state, res.cause, res.reason, func(st *Status) {
			st.PID, st.PublicURL = 0, ""
			st.Attempt, st.NextRetry = failures, next
			st.Restarts++
		})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			stopped()
			return
		case <-t.C:
		}
	}
}

// runResult is how one cloudflared run ended.
type runResult struct {
	cause    Cause
	reason   string
	wasReady bool
	// switchTo is the protocol to run again with at once, "" for none.
	switchTo string
}

// precheckResult is one connectivity pre-check's outcome.
type precheckResult int

const (
	precheckUnknown precheckResult = iota
	precheckPassed
	precheckFailed
)

// logHints is what the log said during one run: the URL from the box, the
// registration, why it is failing and what cloudflared's pre-checks found.
type logHints struct {
	url        string
	registered bool
	// failure is the first failure line's cause (cloudflared repeats it
	// in other words as it exits), failureDetail its detail.
	failure       Cause
	failureDetail string
	// edgeDials counts failed connection attempts to the edge;
	// lastEdgeError is the last one's error.
	edgeDials     int
	lastEdgeError string
	// precheck holds each pre-check component's result.
	precheck map[string]precheckResult
	// lastError is the last error line: the plain line cloudflared prints
	// as it exits on an error, else the last ERR line's error.
	lastError string
	lastPlain string
}

// hints collects logHints from the output goroutine for the watcher.
type hints struct {
	mu sync.Mutex
	h  logHints
}

func (h *hints) note(line string, li LogInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if li.URL != "" && h.h.url == "" {
		h.h.url = li.URL
	}
	h.h.registered = h.h.registered || li.Registered
	if li.Failure != CauseNone && h.h.failure == CauseNone {
		h.h.failure, h.h.failureDetail = li.Failure, li.Detail
	}
	if li.EdgeDial {
		h.h.edgeDials++
		h.h.lastEdgeError = li.Detail
	}
	if li.Precheck != "" {
		if h.h.precheck == nil {
			h.h.precheck = map[string]precheckResult{}
		}
		h.h.precheck[li.Precheck] = precheckPassed
		if li.PrecheckFailed {
			h.h.precheck[li.Precheck] = precheckFailed
		}
	}
	line = strings.TrimSpace(line)
	switch {
	case line == "" || li.URL != "":
	case li.Level == "ERR" || li.Level == "FTL":
		if e := errorField(line); e != "" {
			h.h.lastError = e
		}
	case li.Level == "" && !strings.HasPrefix(line, "See '"):
		h.h.lastPlain = line
	}
}

func (h *hints) snapshot() logHints {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.h
	c.precheck = maps.Clone(h.h.precheck)
	if c.lastPlain != "" {
		c.lastError = c.lastPlain
	}
	return c
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
	return c.args(metricsAddr, c.Protocol)
}

func (c Config) args(metricsAddr, protocol string) []string {
	args := []string{"tunnel", "--no-autoupdate", "--metrics", metricsAddr}
	if protocol != "" {
		args = append(args, "--protocol", protocol)
	}
	if c.Token != "" {
		return append(args, "run")
	}
	return append(args, "--url", c.LocalURL)
}

func (s *Supervisor) runOnce(ctx context.Context, path, protocol string, everReady bool) runResult {
	// Linux's parent-death signal fires when the OS thread that started
	// the child exits, not the process. Holding this goroutine on its
	// thread until the child is reaped keeps that thread alive (nothing
	// else can run on it and then retire it), so the signal fires only
	// when Hookscope itself dies.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	metrics, err := freeLoopbackAddr()
	if err != nil {
		return runResult{cause: CauseExited, reason: err.Error()}
	}
	args := s.cfg.args(metrics, protocol)
	cmd, guard, err := guardedCommand(path, args)
	if err != nil {
		return runResult{cause: CauseCannotRun, reason: fmt.Sprintf("could not start cloudflared: %v", err)}
	}
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	if s.cfg.Token != "" {
		cmd.Env = append(cmd.Env, "TUNNEL_TOKEN="+s.cfg.Token)
	}
	h := &hints{}
	red := redact.New(s.cfg.Token)
	lw := &lineWriter{fn: func(line string) {
		line = red.Text(line)
		s.addLog(line)
		h.note(line, ParseLogLine(line))
	}}
	cmd.Stdout = lw
	cmd.Stderr = lw
	// If a grandchild keeps the pipes open, Wait still returns.
	cmd.WaitDelay = s.cfg.GracePeriod
	if err := cmd.Start(); err != nil {
		guard.abandon()
		return startFailure(err)
	}
	if err := guard.started(cmd); err != nil {
		s.logf("tunnel: %v (cloudflared may outlive a crashed Hookscope)", err)
	}
	defer guard.reaped(cmd)
	s.note("started %s %s (pid %d)", path, strings.Join(args, " "), cmd.Process.Pid)
	state := Starting
	if everReady {
		state = Reconnecting
	}
	// The previous try's reason stays until this one says more.
	s.mu.Lock()
	cause, reason := s.status.Cause, s.status.Reason
	s.mu.Unlock()
	s.setState(state, cause, reason, func(st *Status) {
		st.PID = cmd.Process.Pid
		st.MetricsAddr = metrics
		st.PublicURL = ""
		st.NextRetry = time.Time{}
		st.Protocol = protocol
	})

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	w := s.watch(ctx, metrics, protocol, everReady, h, exited)
	select {
	case waitErr := <-exited:
		lw.flush()
		code, signaled := exitStatus(waitErr)
		cause, reason := exitReason(code, signaled, h.snapshot())
		if cause == CauseExited && (code == 126 || code == 127) {
			// The guard shell could not exec cloudflared (it was removed
			// or replaced since the version check).
			cause = CauseCannotRun
		}
		return runResult{cause: cause, reason: reason, wasReady: w.wasReady}
	default:
		// ctx ended, or another protocol is due: stop cloudflared in order.
		_ = s.stopProcess(cmd, exited)
		lw.flush()
		return runResult{cause: CauseEdgeBlocked, reason: w.reason, wasReady: w.wasReady, switchTo: w.switchTo}
	}
}

// startFailure classifies an exec failure: a program that cannot be run
// here will not run on the next try either.
func startFailure(err error) runResult {
	reason := fmt.Sprintf("could not start cloudflared: %v", err)
	switch {
	case errors.Is(err, syscall.ENOEXEC), errors.Is(err, fs.ErrPermission):
		return runResult{cause: CauseCannotRun, reason: reason}
	case errors.Is(err, fs.ErrNotExist):
		return runResult{cause: CauseNotInstalled, reason: reason}
	}
	return runResult{cause: CauseExited, reason: reason}
}

// exitStatus reads a Wait error: the exit code, and whether a signal ended
// the process.
func exitStatus(err error) (code int, signaled bool) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, false
	case errors.As(err, &ee):
		return ee.ExitCode(), ee.ExitCode() < 0
	}
	return -1, false
}

// watchResult is how watch ended.
type watchResult struct {
	wasReady bool
	// switchTo and reason: stop this run and start one with that
	// protocol at once.
	switchTo, reason string
}

// watch polls the metrics endpoints (and reads the log hints) until
// cloudflared exits or ctx ends, moving between Starting/Reconnecting and
// Ready, and saying why it is not ready when the edge cannot be reached.
// It reports whether the run ever became ready. It returns with the exit
// still in the channel when cloudflared exited (the exit error is put
// back), else having consumed nothing.
func (s *Supervisor) watch(ctx context.Context, metrics, protocol string, everReady bool, h *hints, exited chan error) watchResult {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	started := time.Now()
	var res watchResult
	ready := false
	publicURL := ""
	if s.cfg.Token != "" {
		publicURL = ConsumerURL(s.cfg.Hostname, "")
		publicURL = strings.TrimRight(publicURL, "/")
	}
	notReady := func() State {
		if everReady || res.wasReady {
			return Reconnecting
		}
		return Starting
	}
	for {
		select {
		case <-ctx.Done():
			return res
		case err := <-exited:
			exited <- err
			return res
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
		if !nowReady && hs.registered && !ready && !res.wasReady {
			// Old cloudflared or a metrics server that did not come up:
			// trust the log's "Registered tunnel connection".
			nowReady = metricsUnreachable(ctx, client, metrics)
		}
		if ctx.Err() != nil {
			// A poll cut short by Stop says nothing about the tunnel.
			return res
		}
		switch {
		case nowReady && publicURL != "" && !ready:
			ready, res.wasReady = true, true
			u := publicURL
			s.setState(Ready, CauseNone, "", func(st *Status) { st.PublicURL = u; st.Attempt = 0 })
		case !nowReady && ready:
			ready = false
			s.setState(Reconnecting, CauseLostConnection, describe(CauseLostConnection, ""), func(st *Status) { st.PublicURL = "" })
		case !nowReady && !ready:
			waited := time.Since(started)
			if s.shouldSwitch(hs, protocol, waited) {
				res.switchTo, res.reason = "http2", edgeReason(hs, protocol, s.cfg.EdgeTimeout, true)
				s.setState(notReady(), CauseEdgeBlocked, res.reason, nil)
				return res
			}
			if edgeBlocked(hs, protocol, waited >= s.cfg.EdgeTimeout) {
				s.setState(notReady(), CauseEdgeBlocked, edgeReason(hs, protocol, s.cfg.EdgeTimeout, false), nil)
			}
		}
	}
}

// edgeBlocked reports a run that cannot reach Cloudflare's edge: the
// pre-check of its protocol's transport failed, or its connection attempts
// have failed for long enough (timedOut).
func edgeBlocked(h logHints, protocol string, timedOut bool) bool {
	transport := "UDP Connectivity"
	if protocol == "http2" {
		transport = "TCP Connectivity"
	}
	if h.precheck[transport] == precheckFailed {
		// The pre-check table reports UDP, then TCP. With the protocol left
		// to choose, TCP's line decides between a switch to HTTP/2 and
		// "both blocked": wait for it rather than say something else first.
		_, tcpKnown := h.precheck["TCP Connectivity"]
		return tcpKnown || timedOut || (protocol != "" && protocol != "auto")
	}
	return timedOut && h.edgeDials > 0
}

// shouldSwitch reports that QUIC cannot reach the edge and HTTP/2 may, when
// cloudflared's protocol is left to choose: the pre-checks found UDP
// blocked and TCP open, or, without pre-checks, QUIC attempts have failed
// for EdgeTimeout. It switches once: HTTP/2 is never switched back.
func (s *Supervisor) shouldSwitch(h logHints, protocol string, waited time.Duration) bool {
	if protocol != "" && protocol != "auto" {
		return false
	}
	udp, tcp := h.precheck["UDP Connectivity"], h.precheck["TCP Connectivity"]
	if udp == precheckFailed {
		return tcp == precheckPassed
	}
	return len(h.precheck) == 0 && waited >= s.cfg.EdgeTimeout && h.edgeDials > 0 &&
		strings.Contains(strings.ToLower(h.lastEdgeError), "quic")
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
		return err
	case <-t.C:
	}
	s.note("cloudflared (pid %d) did not exit %s after SIGTERM; killing it", cmd.Process.Pid, s.cfg.GracePeriod)
	if err := kill(cmd); err != nil {
		s.logf("tunnel: kill cloudflared (pid %d): %v", cmd.Process.Pid, err)
	}
	return <-exited
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
