package ui

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"

	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/sandbox"
	"github.com/hookscope/hookscope/tunnel"
)

// OAuthCallbackPath is where the webhook receiver serves OAuth callbacks,
// so the tunnel's public URL + this path works as a redirect URI.
const OAuthCallbackPath = "/oauth/callback"

// WithOAuthCallback serves OAuthCallbackPath with hub and everything else
// with next. A nil hub returns next unchanged.
func WithOAuthCallback(next http.Handler, hub *oauthflow.CallbackHub) http.Handler {
	if hub == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == OAuthCallbackPath {
			hub.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// oauthTab is the OAuth debugger: profiles on the left, the five-step
// stepper and the history on the right. All its fields are touched only on
// the UI goroutine; network work runs through the window's bridge.
type oauthTab struct {
	m     *mainWindow
	store oauthflow.Store
	hub   *oauthflow.CallbackHub
	// pending carries results of long waits (callback, auto-refresh) when
	// the bridge is inline: tests apply them with settle, on their own
	// goroutine, so no widget is touched from elsewhere.
	pending chan func()
	// now is the clock of the countdown.
	now func() time.Time

	content  fyne.CanvasObject
	profiles *oauthProfilesView
	steps    *oauthStepsView
	history  *oauthHistoryView
	Tabs     *container.AppTabs

	flow *oauthflow.Flow
	// settledFlow is the flow whose callback the cards show; a flow
	// settles once.
	settledFlow *oauthflow.Flow
	waitGen     int
	cancelWait  func()
	stopListen  func()
	removeHub   func()
	autoCancel  func()
	sandbox     *sandbox.Server
	// sandboxMedia is a hashed id of the sandbox's first demo media, for
	// the default call path.
	sandboxMedia string
	stopTick     chan struct{}
	closeOnce    sync.Once
}

// newOAuthTab builds the tab for m. The store is the window's store when it
// keeps OAuth data (storage.DB does); otherwise an in-memory one.
func newOAuthTab(m *mainWindow, hub *oauthflow.CallbackHub) *oauthTab {
	t := &oauthTab{m: m, hub: hub, pending: make(chan func(), 64), now: time.Now, stopTick: make(chan struct{})}
	if s, ok := m.svc.Store.(oauthflow.Store); ok {
		t.store = s
	} else {
		t.store = newMemOAuthStore()
	}
	t.profiles = newOAuthProfilesView(t)
	t.steps = newOAuthStepsView(t)
	t.history = newOAuthHistoryView(t)
	t.Tabs = container.NewAppTabs(
		container.NewTabItem("Steps", t.steps.content),
		container.NewTabItem("History", t.history.content),
	)
	t.Tabs.OnSelected = func(it *container.TabItem) {
		if it.Text == "History" {
			t.history.reload()
		}
	}
	split := container.NewHSplit(t.profiles.content, t.Tabs)
	split.Offset = 0.3
	t.content = split
	t.profiles.reload("")
	if !m.bridge.inline {
		go t.tickLoop()
	}
	return t
}

// close stops everything the tab started: waits, listeners, auto-refresh,
// the countdown and the sandbox.
func (t *oauthTab) close() {
	t.closeOnce.Do(func() {
		close(t.stopTick)
		t.stopWaiting()
		if t.autoCancel != nil {
			t.autoCancel()
		}
		if t.sandbox != nil {
			t.sandbox.Close()
		}
	})
}

// run does network or store work off the UI goroutine (inline in tests)
// and applies the result on it.
func (t *oauthTab) run(work func() func()) { t.m.bridge.Go(work) }

// later applies f on the UI goroutine from a goroutine of the tab's own
// (a callback wait, auto-refresh). With an inline bridge it is queued for
// settle instead.
func (t *oauthTab) later(f func()) {
	if t.m.bridge.inline {
		select {
		case t.pending <- f:
		case <-t.stopTick:
		}
		return
	}
	t.m.bridge.do(f)
}

// settle applies the next queued result (tests with an inline bridge); it
// reports false when none arrives within d.
func (t *oauthTab) settle(d time.Duration) bool {
	select {
	case f := <-t.pending:
		f()
		return true
	case <-time.After(d):
		return false
	}
}

// tickLoop refreshes the expiry countdown once a second: enough for a
// seconds display, and one repaint a second costs nothing.
func (t *oauthTab) tickLoop() {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-t.stopTick:
			return
		case <-tk.C:
			t.m.bridge.do(t.steps.tick)
		}
	}
}

// stopWaiting ends a callback wait and its listener.
func (t *oauthTab) stopWaiting() {
	t.waitGen++
	if t.cancelWait != nil {
		t.cancelWait()
		t.cancelWait = nil
	}
	if t.stopListen != nil {
		stop := t.stopListen
		t.stopListen = nil
		go stop() // Shutdown may wait up to 2 s for the browser's connection
	}
	if t.removeHub != nil {
		t.removeHub()
		t.removeHub = nil
	}
}

// tunnelCallbackURL is the tunnel's public URL + OAuthCallbackPath, "" when
// the tunnel is not ready or nothing serves the path.
func (t *oauthTab) tunnelCallbackURL() string {
	st := t.m.tunnelStatus
	if t.hub == nil || st.State != tunnel.Ready || st.PublicURL == "" {
		return ""
	}
	return strings.TrimRight(st.PublicURL, "/") + OAuthCallbackPath
}

// tunnelChanged is called by the window when the tunnel state changes.
func (t *oauthTab) tunnelChanged() { t.profiles.refreshHelpers() }

// Loopback redirect ports are picked below the ephemeral ranges (Linux
// 32768-60999, Windows and macOS 49152-65535). The port is only checked
// free here and bound later, when Authorize starts the listener; a port
// the kernel hands out for ":0" binds and outgoing connections could be
// taken by any of those in between (a test run once failed so), one below
// them only by a program asking for that very number.
const (
	loopbackPortMin   = 20000
	loopbackPortSpan  = 12768 // up to 32767
	loopbackPortTries = 30
)

// oauthFreePort finds a free port on 127.0.0.1 outside the ephemeral
// range, falling back to one the kernel picks when none of a few random
// tries is free.
func oauthFreePort() (int, error) {
	for range loopbackPortTries {
		port := loopbackPortMin + rand.IntN(loopbackPortSpan)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// oauthLoopbackURI returns a redirect URI on a free loopback port.
func oauthLoopbackURI() (string, error) {
	port, err := oauthFreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d/callback", port), nil
}

// trySandbox starts the built-in sandbox on a free loopback port with an
// app whose Redirect URI is a free loopback port too, and returns the
// matching profile.
func (t *oauthTab) startSandbox() (*sandbox.Server, oauthflow.Profile, string, error) {
	redirect, err := oauthLoopbackURI()
	if err != nil {
		return nil, oauthflow.Profile{}, "", err
	}
	app := sandbox.DefaultApp()
	app.RedirectURI = redirect
	srv, base, err := sandbox.Start(context.Background(), "127.0.0.1:0", sandbox.Config{Apps: []sandbox.App{app}, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, oauthflow.Profile{}, "", fmt.Errorf("start the sandbox: %w", err)
	}
	media := ""
	for _, md := range srv.Medias() {
		media = md.HashedID
		break
	}
	p := oauthflow.Profile{Name: "sandbox", BaseURL: base, AuthURL: base, ClientID: app.ClientID, ClientSecret: app.ClientSecret,
		RedirectURI: redirect, Scopes: append([]string(nil), app.Scopes...)}
	return srv, p, media, nil
}

// memOAuthStore keeps OAuth data in memory when the window's store does
// not (tests of other views with a fake store).
type memOAuthStore struct {
	mu          sync.Mutex
	profiles    map[string]oauthflow.Profile
	tokens      map[string]oauthflow.Token
	states      map[string]oauthflow.State
	transcripts []oauthflow.Transcript
}

func newMemOAuthStore() *memOAuthStore {
	return &memOAuthStore{profiles: map[string]oauthflow.Profile{}, tokens: map[string]oauthflow.Token{}, states: map[string]oauthflow.State{}}
}

func (s *memOAuthStore) SaveTranscript(_ context.Context, tr oauthflow.Transcript) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr.ID = int64(len(s.transcripts) + 1)
	s.transcripts = append(s.transcripts, tr)
	return tr.ID, nil
}

func (s *memOAuthStore) SaveFlowState(_ context.Context, st oauthflow.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states[st.Profile] = st
	return nil
}

func (s *memOAuthStore) SaveToken(_ context.Context, profile string, tok oauthflow.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[profile] = tok
	return nil
}

func (s *memOAuthStore) SaveProfile(_ context.Context, p oauthflow.Profile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profiles[p.Name] = p
	return nil
}

func (s *memOAuthStore) LoadProfile(_ context.Context, name string) (oauthflow.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.profiles[name]
	if !ok {
		return p, fmt.Errorf("profile %q: %w", name, oauthflow.ErrNotFound)
	}
	return p, nil
}

func (s *memOAuthStore) ListProfiles(context.Context) ([]oauthflow.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]oauthflow.Profile, 0, len(s.profiles))
	for _, p := range s.profiles {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *memOAuthStore) DeleteProfile(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.profiles, name)
	delete(s.tokens, name)
	return nil
}

func (s *memOAuthStore) LoadToken(_ context.Context, profile string) (oauthflow.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.tokens[profile]
	if !ok {
		return tok, fmt.Errorf("token of %q: %w", profile, oauthflow.ErrNotFound)
	}
	return tok, nil
}

func (s *memOAuthStore) LatestFlowState(_ context.Context, profile string) (oauthflow.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.states[profile]
	if !ok {
		return st, fmt.Errorf("flow state of %q: %w", profile, oauthflow.ErrNotFound)
	}
	return st, nil
}

func (s *memOAuthStore) ListTranscripts(_ context.Context, profile, flowID string, limit int) ([]oauthflow.Transcript, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []oauthflow.Transcript
	for _, tr := range s.transcripts {
		if (profile == "" || tr.Profile == profile) && (flowID == "" || tr.FlowID == flowID) {
			out = append(out, tr)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// oauthNotFound reports a store's "nothing saved yet".
func oauthNotFound(err error) bool { return errors.Is(err, oauthflow.ErrNotFound) }
