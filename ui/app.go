package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/hookscope/hookscope/assets"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

// startupSettle is how long after start the window is taken to be up and
// its first page shown; trimEvery is how often freed memory is handed back
// after that (Fyne frees a text texture a minute after its last use);
// repaintSettle is how long a repaint is given to run before the trim.
const (
	startupSettle = 3 * time.Second
	trimEvery     = 30 * time.Second
	repaintSettle = 500 * time.Millisecond
)

// trimMemory hands memory that was freed back to the OS: once when the
// window is up (parsing the theme's and the system's fallback fonts leaves
// ~25 MB of freed Go heap that the runtime returns only gradually), then
// every trimEvery (the texture memory of rows scrolled past), until done is
// closed (first and every are startupSettle and trimEvery outside tests).
// Before each trim it asks for a repaint: Fyne's GL driver frees
// expired text textures only while painting a frame, so a window left idle
// after a fast scroll kept ~150 MB of them for as long as it stayed idle.
// docs/ui.md has the measurements.
func trimMemory(done <-chan struct{}, repaint func(), first, every time.Duration) {
	wait := first
	for {
		select {
		case <-done:
			return
		case <-time.After(wait):
		}
		repaint()
		select {
		case <-done:
			return
		case <-time.After(min(repaintSettle, every)):
		}
		debug.FreeOSMemory()
		trimCHeap()
		wait = every
	}
}

// Config is what main passes to Run.
type Config struct {
	// DBPath is the store file; empty means storage.DefaultPath().
	DBPath string
	// Version is shown in Settings.
	Version string
	// Logf receives operational messages (never secrets); nil logs to stderr.
	Logf func(format string, args ...any)
	// Secrets, when set (for example from an environment variable), are
	// used for this session instead of the stored ones and are not saved.
	Secrets [][]byte
	// ListenAddr, when set, is where the receiver listens this session
	// instead of the saved address (scripts that must keep a port free).
	ListenAddr string
	// Trace, when set, receives the window's draw timings (Services.Trace).
	Trace io.Writer
}

// session is what runs once a store opened: the station (store, engine,
// receiver, forwarding, tunnel) and the window's starting state.
type session struct {
	st      *station.Station
	set     station.Settings
	secrets [][]byte
	vault   station.Vault
	// relayConn is the saved relay connection string ("" none); the
	// station was linked to it at start.
	relayConn string
	oauthHub  *oauthflow.CallbackHub
	// warn is said in the status line once the window is up.
	warn error
}

// openSession opens the store at path ("" the default), starts the
// receiver on the last-used settings and forwarding: the slow part of
// starting (a locked store waits for SQLite's busy timeout, the keyring
// probe up to 3 s), run off the UI goroutine.
func openSession(cfg Config, logf func(string, ...any), path string) (*session, error) {
	s := &session{oauthHub: &oauthflow.CallbackHub{}}
	// The window answers its OAuth callback on the receiver's port.
	st, err := station.New(station.Config{
		DBPath: path,
		Engine: inspector.Options{Logf: logf},
		Wrap:   func(h http.Handler) http.Handler { return WithOAuthCallback(h, s.oauthHub) },
	})
	if err != nil {
		return nil, err
	}
	s.st = st
	db := st.Store()
	ctx := context.Background()
	if s.set, err = station.LoadSettings(ctx, db); err != nil {
		logf("%v", err)
	}
	if cfg.ListenAddr != "" {
		s.set.ListenAddr = cfg.ListenAddr
	}
	s.vault, s.warn = station.ChooseVault(db, db.Path())
	if s.warn != nil {
		logf("%v", s.warn)
	}
	if s.secrets, err = s.vault.Load(); err != nil {
		logf("%v", err)
		s.warn = cmp.Or(s.warn, err)
	}
	if len(cfg.Secrets) > 0 {
		s.secrets = cfg.Secrets
	}
	eng := st.Engine()
	eng.SetSecrets(s.secrets)
	eng.SetMaxBody(s.set.MaxBody)
	if err := st.SetAnswerRules(s.set.AnswerRules); err != nil {
		logf("%v", err)
		s.warn = cmp.Or(s.warn, err)
	}
	st.SetKeep(s.set.Keep)
	if err := st.Start(ctx); err != nil {
		st.Close(ctx)
		return nil, err
	}
	// Forwarding before the receiver binds: nothing is missed.
	if fc, err := s.set.ForwardConfig(); err != nil {
		logf("forward: %v", err) // shown in the header; the user fixes the field
	} else if fc != nil {
		if err := st.SetForward(ctx, fc); err != nil {
			logf("forward: %v", err)
		}
	}
	if err := st.Listen(s.set.ListenAddr); err != nil {
		logf("%v", err) // shown in the header; the user can pick another address
	}
	// The relay saved in Settings is connected again: what arrived there
	// while the window was closed comes first.
	if err := s.linkRelay(ctx, logf); err != nil {
		logf("relay: %v", err)
		s.warn = cmp.Or(s.warn, err)
	}
	return s, nil
}

// linkRelay connects the station to the relay whose connection string
// the vault holds, if any. Its errors never quote the string.
func (s *session) linkRelay(ctx context.Context, logf func(string, ...any)) error {
	raw, err := s.vault.LoadRelay()
	if err != nil || raw == "" {
		return err
	}
	s.relayConn = raw
	conn, err := relay.ParseConnString(raw)
	if err != nil {
		return fmt.Errorf("the saved relay connection: %w", err)
	}
	if err := s.st.SetRelay(ctx, &conn); err != nil {
		return fmt.Errorf("relay %s: %w", conn.Redacted(), err)
	}
	logf("relay: connecting as %s", conn.Redacted())
	return nil
}

// Run shows the window at once, opens the store (or says why it cannot,
// and offers another), starts the receiver (the station both faces run)
// on the last-used settings, and runs until the window is closed. It
// returns the store's error when none could be opened.
func Run(cfg Config) error {
	logf := cfg.Logf
	if logf == nil {
		logf = log.Printf
	}
	a := app.NewWithID(storage.AppID)
	a.Settings().SetTheme(newHouseTheme())
	icon := fyne.NewStaticResource("hookscope.png", assets.IconPNG())
	a.SetIcon(icon)
	w := a.NewWindow("Hookscope")
	w.SetIcon(icon)
	w.SetMaster()
	def := station.DefaultSettings()
	w.Resize(fyne.NewSize(def.WindowWidth, def.WindowHeight))

	// boot runs the opening off the UI goroutine; the main window has its
	// own bridge.
	boot := newBridge(nil, false)
	var mw *mainWindow
	stores := &storeChooser{a: a, w: w, boot: boot,
		open: func(path string) (*session, error) { return openSession(cfg, logf, path) },
	}
	stores.opened = func(s *session) {
		svc := stationServices(s.st, s.set.Cloudflared, logf)
		svc.Vault = s.vault
		svc.RelayVault = s.vault
		svc.Version = cfg.Version
		svc.SendTest = SendTestDeliveries
		svc.OAuthCallbacks = s.oauthHub
		svc.Trace = cfg.Trace
		mw = newMainWindow(a, w, svc, s.set, s.secrets, icon, false)
		if mw.settingsV.Relay != nil && s.relayConn != "" {
			mw.settingsV.Relay.fill(s.relayConn)
			if c, err := relay.ParseConnString(s.relayConn); err == nil {
				mw.relayWho = c.Redacted()
				mw.settingsV.Relay.refresh()
			}
		}
		if s.warn != nil {
			mw.showError(s.warn)
		}
		w.Resize(fyne.NewSize(s.set.WindowWidth, s.set.WindowHeight))
		w.SetCloseIntercept(func() {
			mw.rememberSize()
			w.Close()
		})
	}
	trimDone := make(chan struct{})
	repaint := func() { boot.do(func() { w.Canvas().Refresh(w.Content()) }) }
	a.Lifecycle().SetOnStarted(func() {
		stores.try(stores.firstStore(cfg.DBPath), false)
		go trimMemory(trimDone, repaint, startupSettle, trimEvery)
	})
	// SIGTERM and Ctrl+C in the terminal close the window as its close
	// button does, so the store, forwarding and tunnel stop cleanly.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			boot.do(func() {
				if mw != nil {
					mw.rememberSize()
				}
				a.Quit()
			})
		case <-trimDone:
		}
	}()
	w.ShowAndRun()
	signal.Stop(sigs)
	close(trimDone)
	stores.stop()
	boot.close() // an opening under way finishes first

	if mw != nil {
		mw.close()
	}
	s, err := stores.result()
	if s == nil {
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.st.Close(shutdownCtx)
}

// stationServices is what the window drives of a station: its store,
// engine, receiver, tunnel, retention and forwarding.
func stationServices(st *station.Station, cloudflared string, logf func(string, ...any)) Services {
	db, eng := st.Store(), st.Engine()
	return Services{
		Store:    db,
		Engine:   eng,
		Receiver: stationReceiver{st},
		Tunnel:   &stationTunnel{st: st, binary: cloudflared, logf: logf},
		Forward:  st,
		SetKeep:  st.SetKeep,
		// The answer rules live in the station, with their attempt
		// counter.
		SetAnswerRules: st.SetAnswerRules,
		TryAnswerRules: st.TryAnswerRules,
		Relay:          st,
		Reverify: func(ctx context.Context) (int, error) {
			rep, err := eng.Reverify(ctx, reverifySource{db})
			return rep.Changed, err
		},
		StorePath: db.Path(),
	}
}

// stationReceiver is the station's receiver as the window's Receiver: a
// restart binds the new address first, so a bad one leaves it where it was.
type stationReceiver struct{ st *station.Station }

func (r stationReceiver) Addr() string              { return r.st.Addr() }
func (r stationReceiver) Err() error                { return r.st.Err() }
func (r stationReceiver) Restart(addr string) error { return r.st.Listen(addr) }

// stationTunnel is the station's cloudflared as the window's Tunnel: a new
// supervisor per start, so a changed binary takes effect; the station
// points it at wherever the receiver listens.
type stationTunnel struct {
	st   *station.Station
	logf func(string, ...any)

	mu     sync.Mutex
	binary string
	// last is the supervisor Start made, kept when it stops or was
	// refused (its status and log say why).
	last *tunnel.Supervisor
}

func (t *stationTunnel) Installed() (bool, string) {
	t.mu.Lock()
	bin := t.binary
	t.mu.Unlock()
	var ni *tunnel.NotInstalledError
	if _, err := tunnel.Find(bin, runtime.GOOS); errors.As(err, &ni) {
		if ni.Configured {
			return false, ni.Summary() + ": fix the path in Settings → Tunnel, or clear it to use cloudflared from PATH"
		}
		return false, "install cloudflared for a public URL (see Settings → Tunnel)"
	}
	return true, ""
}

// Configure changes the binary for the next start; the station follows
// the receiver's address itself.
func (t *stationTunnel) Configure(binary, _ string) {
	t.mu.Lock()
	t.binary = binary
	t.mu.Unlock()
}

func (t *stationTunnel) Start() error {
	if sup := t.st.Tunnel(); sup != nil && tunnelRunning(sup.State().State) {
		return nil
	}
	t.mu.Lock()
	bin := t.binary
	t.mu.Unlock()
	sup, err := t.st.StartTunnel(context.Background(), tunnel.Config{Binary: bin, Logf: t.logf})
	if sup != nil {
		t.mu.Lock()
		t.last = sup
		t.mu.Unlock()
	}
	return err
}

func (t *stationTunnel) Stop() { t.st.StopTunnel() }

// current is the station's supervisor, else the last one Start made.
func (t *stationTunnel) current() *tunnel.Supervisor {
	if sup := t.st.Tunnel(); sup != nil {
		return sup
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *stationTunnel) Status() tunnel.Status {
	if sup := t.current(); sup != nil {
		return sup.State()
	}
	return tunnel.Status{State: tunnel.Stopped}
}

// Logs is the tunnel's log: cloudflared's recent lines and the
// supervisor's own (the header's Log button shows them).
func (t *stationTunnel) Logs() []string {
	if sup := t.current(); sup != nil {
		return sup.Logs()
	}
	return nil
}

// Subscribe reports every tunnel event, on the supervisor's event goroutine.
func (t *stationTunnel) Subscribe(fn func(tunnel.Event)) func() { return t.st.SubscribeTunnel(fn) }

// SendTestDeliveries posts a realistic set of simulated deliveries to url:
// one message per event type, an at-least-once scenario (duplicates,
// shuffled order, batches), a divergent copy and one badly signed message.
// Messages are signed with the first secret (unsigned when there is none).
// It returns how many were answered; an answer other than 2xx, or none,
// is a failure, as for hookscope send.
func SendTestDeliveries(ctx context.Context, url string, secrets [][]byte) (int, error) {
	var secret []byte
	if len(secrets) > 0 {
		secret = secrets[0]
	}
	g := simulate.New(time.Now().UnixNano())
	var msgs []simulate.Message
	for _, typ := range catalog.TypeNames() {
		msgs = append(msgs, g.Message(g.Event(typ)))
	}
	if more, err := g.Scenario(simulate.ScenarioAtLeastOnce, simulate.ScenarioOptions{Batch: 2, Duplicates: 1, Shuffle: true}); err == nil {
		msgs = append(msgs, more...)
	}
	// A divergent duplicate: the first event again, same uuid, its media
	// renamed, as a sender that re-sends after an edit would.
	ev := msgs[0].Events[0]
	ev.Payload = renamedMedia(ev.Payload)
	msgs = append(msgs, g.Message(ev))
	out := simulate.SignedWith(secret, msgs...)
	// A message signed with the wrong key shows what an invalid signature looks like.
	out = append(out, simulate.Outgoing{Message: g.Message(g.Event("media.ready")), Secret: []byte("not-the-configured-secret")})
	rep := simulate.Send(ctx, url, out, simulate.SendOptions{Timeout: 20 * time.Second})
	ok, notOK, _ := rep.Counts()
	return ok + notOK, rep.Err()
}

// renamedMedia returns payload with its media's name changed; a payload
// without one gets a field it did not have.
func renamedMedia(payload any) any {
	b, err := json.Marshal(payload)
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		return payload
	}
	if media, ok := m["media"].(map[string]any); ok {
		if name, ok := media["name"].(string); ok {
			media["name"] = name + " (edited)"
			return m
		}
	}
	m["edited"] = true
	return m
}

// reverifySource adapts the store to inspector.ReverifySource.
type reverifySource struct{ db *storage.DB }

func (r reverifySource) EachRecord(ctx context.Context, fn func(*inspector.Record) error) error {
	return r.db.Each(ctx, storage.Filter{}, fn)
}

func (r reverifySource) UpdateSignature(ctx context.Context, id int64, res inspector.SignatureResult) error {
	return r.db.UpdateSignature(ctx, id, res)
}
