// Package ui is Hookscope's desktop window, built with Fyne. It holds no
// protocol logic: it shows what the inspector, storage and tunnel engines
// report, and hands user actions back to them. Every update that arrives on
// another goroutine goes through the one bridge, which batches it and
// applies it on the UI goroutine.
package ui

import (
	"context"
	"io"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

// Store is what the views read from and write to the store. storage.DB
// implements it; tests use a fake. Expressions find deliveries through
// rules.Source; the Re-sends view reads timelines through resends.Source.
type Store interface {
	rules.Source
	resends.Source
	List(ctx context.Context, f storage.Filter, limit int) ([]storage.Summary, error)
	Count(ctx context.Context, f storage.Filter) (int64, error)
	Stats(ctx context.Context) (storage.Stats, error)
	Get(ctx context.Context, id int64) (*inspector.Record, error)
	EventCopies(ctx context.Context, uuid string) ([]storage.EventRef, error)
	Delete(ctx context.Context, ids ...int64) error
	Value(ctx context.Context, key string) ([]byte, bool, error)
	SetValue(ctx context.Context, key string, value []byte) error
}

// Engine is the part of the inspector engine the window drives.
type Engine interface {
	Subscribe(fn func(*inspector.Record)) (cancel func())
	SetSecrets(secrets [][]byte)
	SetMaxBody(n int64)
}

// Receiver is the local webhook listener; the window restarts it when the
// listen address changes.
type Receiver interface {
	// Addr is the bound host:port, "" while not listening.
	Addr() string
	// Err says why the receiver is not listening (nil when it is).
	Err() error
	// Restart listens on addr instead (closing the current socket).
	Restart(addr string) error
}

// Tunnel is the cloudflared control. A nil Tunnel hides the control.
type Tunnel interface {
	// Installed reports whether cloudflared can be run and, when not, why
	// and what to do, in one line for the header.
	Installed() (ok bool, help string)
	// Configure sets the cloudflared binary ("" means the PATH) and the
	// receiver URL to expose; they take effect from the next Start.
	Configure(binary, localURL string)
	Start() error
	Stop()
	Status() tunnel.Status
	// Subscribe reports every state change on another goroutine.
	Subscribe(fn func(tunnel.Event)) (cancel func())
}

// Forwarding is the station's forwarding as the window drives it
// (station.Station implements it): the configuration, what each route
// does, and each delivery's attempts.
type Forwarding interface {
	// SetForward replaces the configuration (nil turns forwarding off)
	// without losing what arrives meanwhile.
	SetForward(ctx context.Context, cfg *forward.Config) error
	// SubscribeForward reports every attempt and route change, on other
	// goroutines.
	SubscribeForward(fn func(forward.Event)) (cancel func())
	// ForwardStatus is every route's state, nil when forwarding is off.
	ForwardStatus() []forward.RouteStatus
	// Badges is the forward badge of each of ids that has one.
	Badges(ctx context.Context, ids []int64) (map[int64]forward.Badge, error)
	// ForwardAttempts is a delivery's attempts, oldest first.
	ForwardAttempts(ctx context.Context, id int64) ([]*forward.Attempt, error)
	// ForwardAgain sends a delivery again now, to route ("" every route
	// it matches).
	ForwardAgain(ctx context.Context, id int64, route string) ([]*forward.Attempt, error)
	// ForwardRoutes is the running routes, nil when forwarding is off.
	ForwardRoutes() []forward.Route
}

// SecretVault keeps the webhook secrets out of plain preference files.
type SecretVault interface {
	Load() ([][]byte, error)
	Save(secrets [][]byte) error
	// Where says in plain words where the secrets are kept.
	Where() string
}

// RelayLink is the station's link to a team relay as the window drives
// it (station.Station implements it).
type RelayLink interface {
	// SetRelay connects to the relay conn leads to (nil disconnects); it
	// waits for the running link's commit: call it off the UI goroutine.
	SetRelay(ctx context.Context, conn *relay.ConnString) error
	// SubscribeRelay reports the link's states on another goroutine (a
	// zero State when it is turned off).
	SubscribeRelay(fn func(relay.State)) (cancel func())
	// RelayState is the current state, and whether a link is set.
	RelayState() (relay.State, bool)
}

// RelayVault keeps the relay connection string (it holds a credential)
// where the webhook secrets are kept (station.Vault implements it).
type RelayVault interface {
	// LoadRelay is the saved connection string, "" when none is.
	LoadRelay() (string, error)
	// SaveRelay replaces it ("" forgets it).
	SaveRelay(conn string) error
}

// Services is everything a window needs; Run builds the real ones and
// tests pass fakes. Optional members may be nil: their controls are hidden.
type Services struct {
	Store    Store
	Engine   Engine
	Receiver Receiver
	Tunnel   Tunnel
	// Forward forwards deliveries to the developer's app; nil hides the
	// Forward row, badges and pane.
	Forward Forwarding
	// SetKeep applies the retention cap (0 keeps everything); nil: the
	// window keeps everything the store has.
	SetKeep func(keep int64)
	Vault   SecretVault

	// SetAnswerRules puts the receiver's answer rules in force
	// (station.Station.SetAnswerRules); nil: the receiver's answers are
	// not the window's to set.
	SetAnswerRules func(lines []string) error
	// TryAnswerRules tells what lines would answer to a stored delivery
	// arriving again (station.Station.TryAnswerRules; it reads the store:
	// call it off the UI goroutine); nil hides the Rules editor's Test
	// button.
	TryAnswerRules func(ctx context.Context, lines []string, rec *inspector.Record, attempt int) (rules.Trial, error)
	// Relay links the window's store to a team relay; nil hides the Relay
	// section and header row.
	Relay RelayLink
	// RelayVault keeps the relay connection string for the next start;
	// nil: it lasts only this session.
	RelayVault RelayVault
	// Reverify judges stored deliveries again after the secrets changed.
	Reverify func(ctx context.Context) (int, error)
	// SendTest posts simulated deliveries to url signed with the first of
	// secrets ("Send test deliveries"); nil hides the button.
	SendTest func(ctx context.Context, url string, secrets [][]byte) (int, error)
	// StorePath is shown in Settings so the user knows which file holds everything.
	StorePath string
	// Version is shown in the Settings tab.
	Version string
	// Trace, when set, receives a line each time the window draws what a
	// user waits for (a clicked delivery, the header's count): see uiTrace.
	Trace io.Writer
	// OAuthCallbacks routes callbacks the receiver gets on /oauth/callback
	// to the OAuth tab's waiting flows (tunnel redirect URIs); may be nil.
	OAuthCallbacks *oauthflow.CallbackHub
}
