package ui

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

// liveSnapshot is what the bridge goroutine needs to know of UI state; the
// UI goroutine replaces it, the bridge only reads it.
type liveSnapshot struct {
	filter listFilter
	gen    int
}

// mainWindow is the whole window: header strip, tabs and status line.
type mainWindow struct {
	app    fyne.App
	w      fyne.Window
	svc    Services
	bridge *bridge
	icon   fyne.Resource
	// trace logs draw timings (nil: off).
	trace *uiTrace

	settings     station.Settings
	secrets      [][]byte
	stats        storage.Stats
	tunnelStatus tunnel.Status
	// relayState is the relay link's latest state, relayLinked whether a
	// link is set, relayWho the relay connected to (without credential).
	relayState  relay.State
	relayLinked bool
	relayWho    string
	live        atomic.Pointer[liveSnapshot]
	lastNotify  time.Time
	// sending is set while test deliveries are being sent.
	sending bool
	// skipConfirm deletes without a dialog (tests).
	skipConfirm bool

	// compiler compiles the filter bar's expressions (one per window).
	compiler *rules.Compiler

	header        *headerView
	deliveries    *deliveriesView
	deliveriesTab *container.TabItem
	resends       *resendsView
	resendsTab    *container.TabItem
	settingsV     *settingsView
	oauth         *oauthTab
	Tabs          *container.AppTabs
	Status        *widget.Label

	cancels []func()
}

// newMainWindow builds the window's content into w. inline makes every
// background job synchronous (tests).
func newMainWindow(a fyne.App, w fyne.Window, svc Services, set station.Settings, secrets [][]byte, icon fyne.Resource, inline bool) *mainWindow {
	m := &mainWindow{app: a, w: w, svc: svc, settings: set, secrets: secrets, icon: icon, trace: newUITrace(svc.Trace)}
	var err error
	if m.compiler, err = rules.NewCompiler(rules.Stored); err != nil {
		// The environment is fixed at build time: a failure is a bug.
		panic(err)
	}
	m.bridge = newBridge(m.prepare, inline)
	m.live.Store(&liveSnapshot{})
	if svc.Tunnel != nil {
		m.tunnelStatus = svc.Tunnel.Status()
	}
	if svc.Relay != nil {
		// Subscribed before the state is read: a change in between (the
		// link started with the session) reaches the bridge.
		m.cancels = append(m.cancels, svc.Relay.SubscribeRelay(m.bridge.pushRelay))
		m.relayState, m.relayLinked = svc.Relay.RelayState()
	}
	m.Status = widget.NewLabel("")
	m.Status.Truncation = fyne.TextTruncateEllipsis
	m.Status.SizeName = theme.SizeNameCaptionText
	m.header = newHeaderView(m)
	m.deliveries = newDeliveriesView(m)
	m.settingsV = newSettingsView(m)
	m.settingsV.fill(set)
	where := "nowhere (no secret store)"
	if svc.Vault != nil {
		where = svc.Vault.Where()
	}
	m.settingsV.showSecrets(secrets, where)
	m.oauth = newOAuthTab(m, svc.OAuthCallbacks)
	m.cancels = append(m.cancels, m.oauth.close)

	// The OAuth tab (ui/oauth*.go) is added here with one line, between
	// Deliveries and Settings, when it exists.
	m.deliveriesTab = container.NewTabItem("Deliveries", m.deliveries.content)
	m.resends = newResendsView(m)
	m.resendsTab = container.NewTabItem("Re-sends", m.resends.content)
	m.Tabs = container.NewAppTabs(
		m.deliveriesTab,
		m.resendsTab,
		container.NewTabItem("OAuth", m.oauth.content),
		container.NewTabItem("Settings", m.settingsV.content),
	)
	// The status bar: the last message, and the store's counts.
	right := []fyne.CanvasObject{m.header.Counts}
	if p := m.trace.countsProbe(); p != nil {
		right = append(right, p)
	}
	footer := container.NewVBox(widget.NewSeparator(), container.NewBorder(nil, nil, nil, container.NewHBox(right...), m.Status))
	w.SetContent(container.NewBorder(m.header.content, footer, nil, nil, m.Tabs))
	m.Tabs.OnSelected = func(it *container.TabItem) {
		if it == m.resendsTab {
			m.resends.load()
		}
	}
	m.Tabs.Refresh()
	m.shortcuts()

	if svc.Engine != nil {
		m.cancels = append(m.cancels, svc.Engine.Subscribe(m.bridge.pushRecord))
	}
	if w, ok := svc.Store.(storeWatcher); ok && !inline {
		m.cancels = append(m.cancels, m.watchStore(w))
	}
	if svc.Tunnel != nil {
		m.cancels = append(m.cancels, svc.Tunnel.Subscribe(m.bridge.pushTunnel))
	}
	if svc.Forward != nil {
		m.header.Forward.fill(set)
		m.header.Forward.reset(svc.Forward.ForwardStatus())
		if _, err := set.ForwardConfig(); err != nil {
			m.header.Forward.err = err
		}
		m.cancels = append(m.cancels, svc.Forward.SubscribeForward(m.bridge.pushForward))
	}
	if !inline {
		m.bridge.start()
	}
	m.refreshStats()
	m.deliveries.start()
	m.header.refresh()
	m.deliveries.Empty.refresh()
	return m
}

// close stops live updates.
func (m *mainWindow) close() {
	if stop := m.deliveries.stopSearch; stop != nil {
		stop()
	}
	for _, c := range m.cancels {
		c()
	}
	m.bridge.close()
}

func (m *mainWindow) shortcuts() {
	c := m.w.Canvas()
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyF, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) {
		m.Tabs.SelectIndex(0)
		c.Focus(m.deliveries.Search)
	})
	c.AddShortcut(&fyne.ShortcutCopy{}, func(fyne.Shortcut) {
		if m.Tabs.SelectedIndex() == 0 {
			m.deliveries.copySelectedBody()
		}
	})
	c.SetOnTypedKey(func(ev *fyne.KeyEvent) {
		if m.Tabs.Selected() == m.deliveriesTab {
			m.deliveries.typedKey(ev)
		}
	})
	c.SetOnTypedRune(func(r rune) {
		if m.Tabs.Selected() == m.deliveriesTab {
			m.deliveries.typedRune(r)
		}
	})
	m.listShortcuts(c)
}

// storeWatcher reports writes to the store by any process (storage.DB).
type storeWatcher interface {
	Watch(ctx context.Context, every time.Duration, changed func()) error
}

// watchStore shows what other processes write to the store (`listen
// --db` on the window's file): each write reaches the bridge, which reads
// the new rows and counts. It returns the function that stops it.
func (m *mainWindow) watchStore(w storeWatcher) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Watch(ctx, 0, m.bridge.pushStoreChanged); err != nil {
			m.bridge.do(func() { m.showError(fmt.Errorf("%w; restart Hookscope to see new deliveries", err)) })
		}
	}()
	return func() { cancel(); <-done }
}

// prepare runs on the bridge goroutine with what the engines reported.
func (m *mainWindow) prepare(b batch) func() {
	var applies []func()
	snap := m.live.Load()
	if len(b.records) > 0 {
		ids := make([]int64, len(b.records))
		for i, r := range b.records {
			ids[i] = r.Delivery.ID
		}
		if apply := m.deliveries.liveQuery(ids, snap.filter, snap.gen); apply != nil {
			applies = append(applies, apply)
		}
		recs := b.records
		applies = append(applies, func() { m.notify(recs) })
	}
	if b.store {
		if apply := m.deliveries.resyncQuery(snap.filter, snap.gen); apply != nil {
			applies = append(applies, apply)
		}
	}
	if len(b.records) > 0 || b.store {
		if st, err := m.svc.Store.Stats(context.Background()); err == nil {
			applies = append(applies, func() { m.setStats(st) })
		}
		applies = append(applies, m.resends.storeChanged)
	}
	if b.tunnel != nil {
		ev := *b.tunnel
		applies = append(applies, func() { m.tunnelEvent(ev) })
	}
	if b.relay != nil {
		st := *b.relay
		applies = append(applies, func() { m.relayChanged(st, st.Phase != "") })
	}
	if len(b.attempts) > 0 || len(b.routes) > 0 || len(b.warnings) > 0 {
		applies = append(applies, func() { m.forwardEvents(b) })
	}
	return func() {
		for _, f := range applies {
			f()
		}
	}
}

// snapshotLive publishes the filter the bridge must match live updates against.
func (m *mainWindow) snapshotLive() {
	m.live.Store(&liveSnapshot{filter: m.deliveries.model.filter, gen: m.deliveries.model.gen})
}

func (m *mainWindow) setStats(st storage.Stats) {
	wasEmpty := m.stats.Deliveries == 0
	m.stats = st
	m.header.refreshCounts()
	m.deliveries.refreshCounts()
	if wasEmpty != (st.Deliveries == 0) {
		m.deliveries.refreshList()
	}
}

func (m *mainWindow) refreshStats() {
	store := m.svc.Store
	m.bridge.Go(func() func() {
		st, err := store.Stats(context.Background())
		if err != nil {
			return func() { m.showError(fmt.Errorf("read counts: %w", err)) }
		}
		return func() { m.setStats(st) }
	})
}

// notify sends desktop notifications for the problems the user asked
// about, at most one every few seconds so a burst is one notification.
func (m *mainWindow) notify(recs []*inspector.Record) {
	var invalid, divergent int
	for _, r := range recs {
		if r.Analysis == nil {
			continue
		}
		if r.Analysis.Signature.Status == inspector.SignatureInvalid {
			invalid++
		}
		if r.Analysis.Divergent() {
			divergent++
		}
	}
	var parts []string
	if invalid > 0 && m.settings.NotifyInvalid {
		parts = append(parts, fmt.Sprintf("%d with an invalid signature", invalid))
	}
	if divergent > 0 && m.settings.NotifyDivergent {
		parts = append(parts, plural.Count(divergent, "divergent duplicate", "divergent duplicates"))
	}
	if len(parts) == 0 || time.Since(m.lastNotify) < 5*time.Second {
		return
	}
	m.lastNotify = time.Now()
	m.app.SendNotification(fyne.NewNotification("Hookscope", "New deliveries: "+strings.Join(parts, ", ")))
}

func (m *mainWindow) tunnelEvent(ev tunnel.Event) {
	m.tunnelStatus = ev.Status
	m.header.refreshTunnel()
	m.oauth.tunnelChanged()
	m.deliveries.Empty.refresh()
	switch {
	case ev.Kind == tunnel.URLChanged:
		m.showStatus(tunnel.URLChangedMessage)
	case ev.Status.State == tunnel.Failed:
		m.showError(fmt.Errorf("tunnel failed: %s", ev.Status.Reason))
	}
}

// localURL is the consumer URL on this machine.
func (m *mainWindow) localURL() string { return m.localBase() + m.settings.Path }

// localBase is the receiver's base URL, without the path.
func (m *mainWindow) localBase() string {
	addr := m.settings.ListenAddr
	if m.svc.Receiver != nil {
		if a := m.svc.Receiver.Addr(); a != "" {
			addr = a
		}
	}
	return "http://" + addr
}

// tunnelHint says why there is no public URL and how to get one.
func (m *mainWindow) tunnelHint() string {
	if m.svc.Tunnel == nil {
		return "no tunnel control in this build"
	}
	if ok, why := m.svc.Tunnel.Installed(); !ok {
		return why
	}
	if st := m.tunnelStatus.State; st == tunnel.Starting || st == tunnel.Reconnecting {
		return "the tunnel is starting…"
	}
	return "none yet: press Start tunnel in the header"
}

// publicURL is the consumer URL through the tunnel, "" when there is none.
func (m *mainWindow) publicURL() string {
	if m.tunnelStatus.PublicURL == "" {
		return ""
	}
	return tunnel.ConsumerURL(m.tunnelStatus.PublicURL, m.settings.Path)
}

func (m *mainWindow) receiverState() (string, error) {
	if m.svc.Receiver == nil {
		return m.settings.ListenAddr, nil
	}
	if err := m.svc.Receiver.Err(); err != nil {
		return "", err
	}
	return m.svc.Receiver.Addr(), nil
}

// copy puts s on the clipboard and says what was copied.
func (m *mainWindow) copy(s, what string) {
	m.app.Clipboard().SetContent(s)
	m.showStatus(fmt.Sprintf("Copied %s (%s).", what, human.Bytes(int64(len(s)))))
}

// showStatus shows a transient message in the status line.
func (m *mainWindow) showStatus(msg string) {
	m.Status.Importance = widget.MediumImportance
	m.Status.SetText(msg)
	m.clearStatusLater(msg)
}

func (m *mainWindow) showError(err error) {
	m.Status.Importance = widget.DangerImportance
	m.Status.SetText(err.Error())
}

func (m *mainWindow) clearStatusLater(msg string) {
	if m.bridge.inline {
		return
	}
	m.bridge.Go(func() func() {
		time.Sleep(5 * time.Second)
		return func() {
			if m.Status.Text == msg {
				m.Status.SetText("")
			}
		}
	})
}

func (m *mainWindow) toggleTunnel() {
	t := m.svc.Tunnel
	if t == nil {
		return
	}
	switch m.tunnelStatus.State {
	case tunnel.Starting, tunnel.Ready, tunnel.Reconnecting:
		m.bridge.Go(func() func() {
			t.Stop()
			st := t.Status()
			return func() { m.tunnelEvent(tunnel.Event{Kind: tunnel.StateChanged, Status: st}) }
		})
	default:
		m.bridge.Go(func() func() {
			err := t.Start()
			st := t.Status()
			return func() {
				m.tunnelEvent(tunnel.Event{Kind: tunnel.StateChanged, Status: st})
				if err != nil {
					m.showError(fmt.Errorf("start tunnel: %w", err))
				}
			}
		})
	}
}

func (m *mainWindow) sendTest() {
	send := m.svc.SendTest
	if send == nil {
		return
	}
	if _, err := m.receiverState(); err != nil {
		m.showError(fmt.Errorf("send test deliveries: the receiver is not listening: %w", err))
		return
	}
	url, secrets := m.localURL(), m.secrets
	m.sending = true
	m.header.SendTest.Disable()
	m.deliveries.Empty.SendTest.Disable()
	m.showStatus("Sending test deliveries…")
	m.bridge.Go(func() func() {
		n, err := send(context.Background(), url, secrets)
		return func() {
			m.sending = false
			m.header.refreshReceiver()
			m.deliveries.Empty.refresh()
			if err != nil {
				m.showError(fmt.Errorf("send test deliveries: %w", err))
				return
			}
			m.showStatus(fmt.Sprintf("Sent %d test deliveries to %s.", n, m.localURL()))
		}
	})
}

// promptSecret asks for a signature secret.
func (m *mainWindow) promptSecret() {
	d, e := secretDialog(m.w, m.addSecret)
	d.Show()
	m.w.Canvas().Focus(e) // type at once, Enter adds
}

func (m *mainWindow) addSecret(s string) {
	for _, old := range m.secrets {
		if string(old) == s {
			m.showStatus("That secret is already set.")
			return
		}
	}
	m.setSecrets(append(append([][]byte(nil), m.secrets...), []byte(s)))
}

func (m *mainWindow) removeSecret(i int) {
	if i < 0 || i >= len(m.secrets) {
		return
	}
	next := append(append([][]byte(nil), m.secrets[:i]...), m.secrets[i+1:]...)
	m.setSecrets(next)
}

// setSecrets stores the secrets, hands them to the engine and re-verifies
// the stored deliveries in the background.
func (m *mainWindow) setSecrets(secrets [][]byte) {
	if m.svc.Vault != nil {
		if err := m.svc.Vault.Save(secrets); err != nil {
			m.showError(err)
			return
		}
	}
	m.secrets = secrets
	if m.svc.Engine != nil {
		m.svc.Engine.SetSecrets(secrets)
	}
	where := ""
	if m.svc.Vault != nil {
		where = m.svc.Vault.Where()
	}
	m.settingsV.showSecrets(secrets, where)
	m.header.refresh()
	m.deliveries.Empty.refresh()
	if rv := m.svc.Reverify; rv != nil {
		m.showStatus("Secrets saved; checking stored signatures again…")
		m.bridge.Go(func() func() {
			n, err := rv(context.Background())
			return func() {
				if err != nil {
					m.showError(err)
					return
				}
				m.showStatus("Secrets saved; " + plural.Count(n, "stored delivery changed its signature verdict.", "stored deliveries changed their signature verdict."))
				m.refreshStats()
			}
		})
	}
}

// applySettings makes new settings take effect and persists them, then
// calls done with what went wrong (nil: saved). The receiver moves when
// the address changed, and tries again when it is not listening (the
// program holding its port may have gone). Moving it waits for the old
// socket's requests (up to 5 s) and restarts a running tunnel, so that
// part runs off the UI goroutine; done runs on it.
func (m *mainWindow) applySettings(set station.Settings, done func(error)) {
	old := m.settings
	if _, err := set.ForwardConfig(); err != nil && m.svc.Forward != nil {
		done(fmt.Errorf("not saved: %w", err))
		return
	}
	r, eng, store, tun := m.svc.Receiver, m.svc.Engine, m.svc.Store, m.svc.Tunnel
	setKeep, setRules, fw := m.svc.SetKeep, m.svc.SetAnswerRules, m.svc.Forward
	m.bridge.Go(func() func() {
		if r != nil && (r.Err() != nil || set.ListenAddr != old.ListenAddr && set.ListenAddr != r.Addr()) {
			if err := r.Restart(set.ListenAddr); err != nil {
				return func() {
					m.header.refresh()
					m.deliveries.Empty.refresh()
					done(fmt.Errorf("not saved: cannot listen on %s: %w", set.ListenAddr, err))
				}
			}
		}
		if eng != nil {
			eng.SetMaxBody(set.MaxBody)
		}
		if setRules != nil {
			if err := setRules(set.AnswerRules); err != nil {
				return func() { done(fmt.Errorf("not saved: %w", err)) }
			}
		}
		if setKeep != nil && set.Keep != old.Keep {
			setKeep(set.Keep)
		}
		// A new CA file takes effect in the running forwarding at once;
		// the forwarder says when the file is not PEM.
		var fwStatus []forward.RouteStatus
		if fw != nil && set.ForwardCA != old.ForwardCA {
			if cfg, err := set.ForwardConfig(); err == nil && cfg != nil {
				if err := fw.SetForward(context.Background(), cfg); err != nil {
					return func() { done(fmt.Errorf("not saved: %w", err)) }
				}
				fwStatus = fw.ForwardStatus()
			}
		}
		if tun != nil && (set.Cloudflared != old.Cloudflared || set.ListenAddr != old.ListenAddr) {
			addr := set.ListenAddr
			if r != nil && r.Addr() != "" {
				addr = r.Addr()
			}
			tun.Configure(set.Cloudflared, "http://"+addr)
		}
		err := station.SaveSettings(context.Background(), store, set)
		return func() {
			m.settings = set
			if fwStatus != nil {
				m.header.Forward.reset(fwStatus)
			}
			m.snapshotLive()
			m.header.refresh()
			m.deliveries.Empty.refresh()
			done(err)
		}
	})
}

// freePortTries is how many ports after the configured one useFreePort
// tries before it lets the system pick one.
const freePortTries = 20

// useFreePort moves the receiver to a free port: the next free one after
// the configured port (so the URL stays easy to read), else any the system
// gives, and saves it in Settings. The button is disabled and says so
// while the receiver moves (off the UI goroutine).
func (m *mainWindow) useFreePort() {
	r := m.svc.Receiver
	if r == nil {
		return
	}
	was := m.settings.ListenAddr
	host, port, err := net.SplitHostPort(was)
	if err != nil {
		host, port = "127.0.0.1", "8787"
	}
	first, _ := strconv.Atoi(port)
	candidates := make([]string, 0, freePortTries+1)
	for p := first + 1; p <= first+freePortTries && p <= 65535; p++ {
		candidates = append(candidates, net.JoinHostPort(host, strconv.Itoa(p)))
	}
	candidates = append(candidates, net.JoinHostPort(host, "0"))
	b := m.header.FreePort
	b.Disable()
	b.SetText("Finding a free port…")
	finish := func() {
		b.SetText("Use a free port")
		b.Enable()
	}
	m.bridge.Go(func() func() {
		var err error
		for _, addr := range candidates {
			if err = r.Restart(addr); err == nil {
				break
			}
		}
		addr := r.Addr()
		return func() {
			if err != nil {
				finish()
				m.header.refresh()
				m.showError(fmt.Errorf("no free port on %s: %w", host, err))
				return
			}
			set := m.settings
			set.ListenAddr = addr
			m.applySettings(set, func(err error) {
				finish()
				if err != nil {
					m.showError(err)
					return
				}
				m.settingsV.fill(set)
				m.showStatus(fmt.Sprintf("Listening on %s instead of %s (saved in Settings). Update the URL wherever you pasted it.", set.ListenAddr, was))
			})
		}
	})
}

// showAnswerSettings opens the Settings tab at its Answer rules card.
func (m *mainWindow) showAnswerSettings() {
	m.showSettings(m.settingsV.Rules.content)
}

// showRelaySettings opens the Settings tab at its Team relay card.
func (m *mainWindow) showRelaySettings() {
	if r := m.settingsV.Relay; r != nil {
		m.showSettings(r.content)
	}
}

// showSettings opens the Settings tab scrolled to show o (a card's
// content) near its top, under the card's title. A tab shown for the
// first time is laid out at its next frame, so the scroll is also done
// once more after it.
func (m *mainWindow) showSettings(o fyne.CanvasObject) {
	m.Tabs.Select(m.Tabs.Items[len(m.Tabs.Items)-1])
	m.scrollSettingsTo(o)
	m.bridge.Go(func() func() { return func() { m.scrollSettingsTo(o) } })
}

// scrollSettingsTo scrolls Settings to o as it is laid out now.
func (m *mainWindow) scrollSettingsTo(o fyne.CanvasObject) {
	sc := m.settingsV.scroll
	drv := fyne.CurrentApp().Driver()
	y := drv.AbsolutePositionForObject(o).Y - drv.AbsolutePositionForObject(sc.Content).Y
	// The card's title and subtitle sit above its content.
	sc.ScrollToOffset(fyne.NewPos(0, max(0, y-3*theme.TextHeadingSize())))
}

// rememberSize saves the window size for the next start.
func (m *mainWindow) rememberSize() {
	s := m.w.Canvas().Size()
	if s.Width < 200 || s.Height < 200 {
		return
	}
	m.settings.WindowWidth, m.settings.WindowHeight = s.Width, s.Height
	_ = station.SaveSettings(context.Background(), m.svc.Store, m.settings)
}

func (m *mainWindow) deleteDeliveries(ids ...int64) {
	store := m.svc.Store
	m.bridge.Go(func() func() {
		err := store.Delete(context.Background(), ids...)
		st, serr := store.Stats(context.Background())
		return func() {
			if err != nil {
				m.showError(fmt.Errorf("delete: %w", err))
				return
			}
			m.deliveries.removed(ids...)
			if serr == nil {
				m.setStats(st)
			}
			m.showStatus(fmt.Sprintf("Deleted delivery #%d.", ids[0]))
		}
	})
}
