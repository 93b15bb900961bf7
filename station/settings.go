package station

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/rules"
)

// SettingsKey is where the settings live in the store's kv table: one
// record that the window writes and both the window and `hookscope
// listen` read, so they share one store file and one configuration. (The
// key keeps the window's first name for it.)
const SettingsKey = "ui.settings"

// KV is the store's key-value table (storage.DB implements it): the
// settings and, without an OS keyring, the secrets.
type KV interface {
	Value(ctx context.Context, key string) ([]byte, bool, error)
	SetValue(ctx context.Context, key string, value []byte) error
}

// Settings are the receiver's persisted configuration. The secrets are
// kept apart, in a Vault. The window edits and saves them; `listen` runs
// on them where no flag says otherwise.
type Settings struct {
	// ListenAddr is the receiver's host:port (loopback).
	ListenAddr string `json:"listen_addr"`
	// Path is the consumer path shown in URLs (every path is received).
	Path string `json:"path"`
	// MaxBody is the body cap in bytes.
	MaxBody int64 `json:"max_body"`
	// Keep is how many deliveries to keep (the oldest are deleted); 0
	// keeps all.
	Keep int64 `json:"keep"`
	// AnswerRules answer each delivery, in order, the first that matches
	// answering (`COND => ACTION` or ACTION, rules.NewRules); none answers
	// 200 to every delivery.
	AnswerRules []string `json:"answer_rules,omitempty"`
	// ForwardTo is the routes, separated by spaces (forward.SplitRoutes):
	// the app's URL, GLOB=URL, or `where COND => URL`.
	ForwardTo string `json:"forward_to,omitempty"`
	// ForwardOn turns forwarding to ForwardTo on.
	ForwardOn bool `json:"forward_on,omitempty"`
	// ForwardMode is ack or pass-through ("" is ack).
	ForwardMode string `json:"forward_mode,omitempty"`
	// ForwardCA names a PEM file of certificates trusted for https
	// forward targets besides the system's (an app behind a private CA).
	ForwardCA string `json:"forward_ca,omitempty"`

	// The window's own: notifications, the cloudflared binary, its size.
	NotifyInvalid   bool    `json:"notify_invalid"`
	NotifyDivergent bool    `json:"notify_divergent"`
	Cloudflared     string  `json:"cloudflared"`
	WindowWidth     float32 `json:"window_width"`
	WindowHeight    float32 `json:"window_height"`
}

// DefaultAddr and DefaultPath are the receiver's first-run address and
// consumer path, in the window and in listen.
const (
	DefaultAddr = "127.0.0.1:8787"
	DefaultPath = "/webhooks"
)

// DefaultSettings are the first-run settings.
func DefaultSettings() Settings {
	return Settings{
		ListenAddr:      DefaultAddr,
		Path:            DefaultPath,
		MaxBody:         inspector.DefaultMaxBody,
		NotifyInvalid:   true,
		NotifyDivergent: true,
		WindowWidth:     1280,
		WindowHeight:    800,
	}
}

// storedSettings is the record as written, with what versions before
// answer rules wrote.
type storedSettings struct {
	Settings
	// Answer is the answer mode before answer rules (200, 500, hang,
	// close): each is a rule without a condition.
	Answer string `json:"answer,omitempty"`
}

// LoadSettings reads the settings, the defaults filling what is missing
// (DefaultSettings when none are saved).
func LoadSettings(ctx context.Context, kv KV) (Settings, error) {
	set, _, err := SavedSettings(ctx, kv)
	return set, err
}

// SavedSettings is LoadSettings, and whether any were saved. Settings
// that cannot be read give the defaults and the error.
func SavedSettings(ctx context.Context, kv KV) (Settings, bool, error) {
	def := DefaultSettings()
	b, ok, err := kv.Value(ctx, SettingsKey)
	if err != nil {
		return def, false, fmt.Errorf("read settings: %w", err)
	}
	if !ok {
		return def, false, nil
	}
	st := storedSettings{Settings: def}
	if err := json.Unmarshal(b, &st); err != nil {
		return def, false, fmt.Errorf("settings are unreadable, using defaults: %w", err)
	}
	set := st.Settings
	set.ListenAddr = cmp.Or(set.ListenAddr, def.ListenAddr)
	set.Path = cmp.Or(set.Path, def.Path)
	if set.MaxBody <= 0 {
		set.MaxBody = def.MaxBody
	}
	if set.AnswerRules == nil && st.Answer != "" && st.Answer != "200" {
		set.AnswerRules = []string{st.Answer}
	}
	return set, true, nil
}

// SaveSettings writes the settings.
func SaveSettings(ctx context.Context, kv KV, set Settings) error {
	b, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("encode settings: %w", err)
	}
	if err := kv.SetValue(ctx, SettingsKey, b); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	return nil
}

// Validate checks settings typed by the user and says what is wrong: the
// address (loopback: the window only listens on this machine), the path,
// the caps, the answer rules (a *rules.RuleError with the rule and the
// column) and the forwarding.
func (s Settings) Validate() error {
	host, port, err := net.SplitHostPort(s.ListenAddr)
	if err != nil || port == "" {
		return fmt.Errorf("listen address %q must be host:port, for example %s", s.ListenAddr, DefaultAddr)
	}
	if host == "" || !inspector.IsLoopback(s.ListenAddr) {
		return fmt.Errorf("listen address %q is not a loopback address; the app only listens on this machine (use 127.0.0.1)", s.ListenAddr)
	}
	if !strings.HasPrefix(s.Path, "/") {
		return fmt.Errorf("path %q must start with /", s.Path)
	}
	if s.MaxBody < 1024 {
		return errors.New("body cap must be at least 1 KiB")
	}
	if s.Keep < 0 {
		return errors.New("retention must be 0 (keep everything) or a positive number of deliveries")
	}
	if _, err := rules.NewRules(s.AnswerRules, nil); err != nil {
		return err
	}
	_, err = s.ForwardConfig()
	return err
}

// ForwardConfig is the forwarding the settings ask for: nil while the
// switch is off or there is no route, an error that says what is wrong
// with the routes, the mode or the CA file.
func (s Settings) ForwardConfig() (*forward.Config, error) {
	specs := forward.SplitRoutes(s.ForwardTo)
	if !s.ForwardOn || len(specs) == 0 {
		return nil, nil
	}
	routes, err := forward.ParseRoutes(specs)
	if err != nil {
		return nil, err
	}
	mode, err := forward.ParseMode(s.ForwardMode)
	if err != nil {
		return nil, err
	}
	if err := CheckForwardCA(s.ForwardCA); err != nil {
		return nil, err
	}
	return &forward.Config{Routes: routes, Mode: mode, CAFile: s.ForwardCA}, nil
}

// CheckForwardCA says what is wrong with a CA file for forward targets
// (path "" is none): it must be readable and hold at least one PEM
// certificate. The forwarder checks it again when it starts (its client's
// trust pool); this check lets a face say so when the file is chosen.
func CheckForwardCA(path string) error {
	if path == "" {
		return nil
	}
	_, err := forward.LoadCA(path)
	return err
}

// AnswerWarning says how the answer rules answer when that is not 200 at
// once to every delivery (rules.Rules.Warning), "" when it is; rules that
// do not compile say so.
func (s Settings) AnswerWarning() string {
	rs, err := rules.NewRules(s.AnswerRules, nil)
	if err != nil {
		return "the answer rules are not valid: " + err.Error()
	}
	return rs.Warning()
}

// Equal reports settings that are the same in every field (no rules and
// an empty list of rules are the same).
func (s Settings) Equal(o Settings) bool {
	same := slices.Equal(s.AnswerRules, o.AnswerRules)
	s.AnswerRules, o.AnswerRules = nil, nil
	return same && reflect.DeepEqual(s, o)
}
