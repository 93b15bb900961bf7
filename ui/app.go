package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/hookscope/hookscope/assets"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/pubsub"
	"github.com/hookscope/hookscope/oauthflow"
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
}

// Run opens the store, starts the receiver on the last-used settings, and
// shows the window until it is closed.
func Run(cfg Config) error {
	logf := cfg.Logf
	if logf == nil {
		logf = log.Printf
	}
	path := cfg.DBPath
	if path == "" {
		p, err := storage.DefaultPath()
		if err != nil {
			return err
		}
		path = p
	}
	// The window's receiver acks through the store's inbox (one fdatasync,
	// not a SQLite commit): docs/storage.md.
	db, err := storage.OpenWith(path, storage.Options{Inbox: true, Logf: logf})
	if err != nil {
		return err
	}
	defer db.Close()

	a := app.NewWithID(storage.AppID)
	a.Settings().SetTheme(newHouseTheme())
	icon := fyne.NewStaticResource("hookscope.png", assets.IconPNG())
	a.SetIcon(icon)

	ctx := context.Background()
	set, err := loadSettings(ctx, db)
	if err != nil {
		logf("%v", err)
	}
	vault := chooseVault(db, path)
	secrets, err := vault.Load()
	if err != nil {
		logf("%v", err)
	}
	if len(cfg.Secrets) > 0 {
		secrets = cfg.Secrets
	}
	eng := inspector.NewEngine(db, inspector.Options{Secrets: secrets, MaxBody: set.MaxBody, Answer: inspector.AnswerMode(set.Answer), Logf: logf})
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- eng.Run(runCtx) }()

	oauthHub := &oauthflow.CallbackHub{}
	recv := &receiverCtl{handler: WithOAuthCallback(eng.Handler(), oauthHub), eng: eng}
	if err := recv.Restart(set.ListenAddr); err != nil {
		logf("%v", err) // shown in the header; the user can pick another address
	}
	tun := newTunnelCtl(set.Cloudflared, "http://"+set.ListenAddr, logf)

	svc := Services{
		Store:    db,
		Engine:   eng,
		Receiver: recv,
		Tunnel:   tun,
		Vault:    vault,
		Reverify: func(ctx context.Context) (int, error) {
			rep, err := eng.Reverify(ctx, reverifySource{db})
			return rep.Changed, err
		},
		StorePath: path,
		Version:   cfg.Version,
	}
	svc.SendTest = SendTestDeliveries
	svc.OAuthCallbacks = oauthHub

	w := a.NewWindow("Hookscope")
	w.SetIcon(icon)
	mw := newMainWindow(a, w, svc, set, secrets, icon, false)
	w.Resize(fyne.NewSize(set.WindowWidth, set.WindowHeight))
	w.SetCloseIntercept(func() {
		mw.rememberSize()
		w.Close()
	})
	w.SetMaster()
	trimDone := make(chan struct{})
	repaint := func() { mw.bridge.do(func() { w.Canvas().Refresh(w.Content()) }) }
	a.Lifecycle().SetOnStarted(func() { go trimMemory(trimDone, repaint, startupSettle, trimEvery) })
	w.ShowAndRun()
	close(trimDone)

	mw.close()
	tun.Stop()
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	recv.Shutdown(shutdownCtx)
	stopRun()
	if err := <-runDone; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("analysis: %w", err)
	}
	return nil
}

// receiverCtl runs the receiver and moves it to another address on demand.
type receiverCtl struct {
	handler http.Handler
	// eng records the requests Go's server refuses before the handler.
	eng *inspector.Engine

	mu  sync.Mutex
	srv *inspector.Server
	err error
}

func (r *receiverCtl) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		return ""
	}
	return r.srv.Addr()
}

func (r *receiverCtl) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil && r.err == nil {
		return errors.New("not started")
	}
	return r.err
}

// Restart binds addr first and only then closes the old socket, so a bad
// address leaves the receiver running where it was.
func (r *receiverCtl) Restart(addr string) error {
	srv, err := inspector.Serve(addr, r.handler, inspector.ServerOptions{Engine: r.eng})
	r.mu.Lock()
	old := r.srv
	if err != nil {
		if old == nil {
			r.err = err
		}
		r.mu.Unlock()
		return err
	}
	r.srv, r.err = srv, nil
	r.mu.Unlock()
	if old != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = old.Shutdown(ctx)
	}
	return nil
}

// Shutdown stops the receiver.
func (r *receiverCtl) Shutdown(ctx context.Context) {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Shutdown(ctx)
	}
}

// tunnelCtl adapts tunnel.Supervisor to the window's Tunnel: a new
// supervisor per start, so a changed binary or address takes effect.
type tunnelCtl struct {
	logf func(string, ...any)

	mu       sync.Mutex
	binary   string
	localURL string
	sup      *tunnel.Supervisor
	cancel   func()
	// subs outlives the supervisors: the window subscribes once.
	subs pubsub.Hub[tunnel.Event]
}

func newTunnelCtl(binary, localURL string, logf func(string, ...any)) *tunnelCtl {
	return &tunnelCtl{binary: binary, localURL: localURL, logf: logf}
}

func (t *tunnelCtl) Installed() (bool, string) {
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

// Configure changes the binary and the receiver address for the next start.
func (t *tunnelCtl) Configure(binary, localURL string) {
	t.mu.Lock()
	t.binary, t.localURL = binary, localURL
	t.mu.Unlock()
}

func (t *tunnelCtl) Start() error {
	t.mu.Lock()
	if t.sup != nil {
		t.mu.Unlock()
		return nil
	}
	sup := tunnel.New(tunnel.Config{Binary: t.binary, LocalURL: t.localURL, Logf: t.logf})
	t.sup = sup
	t.cancel = sup.Subscribe(t.subs.Publish)
	t.mu.Unlock()
	if err := sup.Start(context.Background()); err != nil {
		t.Stop()
		return err
	}
	return nil
}

func (t *tunnelCtl) Stop() {
	t.mu.Lock()
	sup, cancel := t.sup, t.cancel
	t.sup, t.cancel = nil, nil
	t.mu.Unlock()
	if sup != nil {
		sup.Stop()
		cancel()
	}
}

func (t *tunnelCtl) Status() tunnel.Status {
	t.mu.Lock()
	sup := t.sup
	t.mu.Unlock()
	if sup == nil {
		return tunnel.Status{State: tunnel.Stopped}
	}
	return sup.State()
}

// Subscribe reports every tunnel event, on the supervisor's event goroutine.
func (t *tunnelCtl) Subscribe(fn func(tunnel.Event)) func() { return t.subs.Subscribe(fn) }

// SendTestDeliveries posts a realistic set of simulated deliveries to url:
// one message per event type, an at-least-once scenario (duplicates,
// shuffled order, batches), a divergent copy and one badly signed message.
// Messages are signed with the first secret (unsigned when there is none).
// It returns how many were sent.
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
	client := &http.Client{Timeout: 20 * time.Second}
	sent := 0
	post := func(body, key []byte) error {
		req, err := simulate.NewRequest(ctx, url, body, key)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("post to %s: %w", url, err)
		}
		resp.Body.Close()
		sent++
		return nil
	}
	for _, m := range msgs {
		if err := post(m.Body(), secret); err != nil {
			return sent, err
		}
	}
	// A divergent duplicate: the first event again, same uuid, its media
	// renamed, as a sender that re-sends after an edit would.
	if len(msgs) > 0 && len(msgs[0].Events) > 0 {
		ev := msgs[0].Events[0]
		ev.Payload = renamedMedia(ev.Payload)
		if err := post(g.Message(ev).Body(), secret); err != nil {
			return sent, err
		}
	}
	// A message signed with the wrong key shows what an invalid signature looks like.
	if err := post(g.Message(g.Event("media.ready")).Body(), []byte("not-the-configured-secret")); err != nil {
		return sent, err
	}
	return sent, nil
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
