// Package sandbox emulates the video service on loopback: its OAuth 2.0
// authorization pages and token endpoint, a slice of the Data API, an
// Upload API endpoint and a webhook sender. It follows the service's spec
// exactly where the spec speaks and says so in headers and pages where it
// has to choose, so every Hookscope test and every offline developer has a
// faithful partner. It never imports Fyne.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/internal/redact"
)

// DefaultAddr is where `hookscope sandbox` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8790"

// Default lifetimes, chosen to look like the service's.
const (
	DefaultTokenTTL = 6 * time.Hour
	DefaultCodeTTL  = 10 * time.Minute
)

// Role is a user's role in one account. Only managers and owners may
// authorize an application (spec 5.1, 7).
type Role string

// The three roles the demo users have.
const (
	RoleOwner   Role = "owner"
	RoleManager Role = "manager"
	RoleViewer  Role = "viewer"
)

// CanAuthorize reports whether the role may authorize an application.
func (r Role) CanAuthorize() bool { return r == RoleOwner || r == RoleManager }

// Account is one account of the service: it holds medias and is what an
// application is connected to.
type Account struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// OAuthDisabled makes authorization for this account fail: the spec
	// says OAuth must be enabled for an account before it can be used.
	OAuthDisabled bool `json:"oauth_disabled,omitempty"`
}

// Membership is a user's role in an account.
type Membership struct {
	Account Account `json:"account"`
	Role    Role    `json:"role"`
}

// User is a person who can log in to the sandbox's authorization pages.
// The passwords are demo credentials shown on the login page.
type User struct {
	ContactID   string       `json:"contact_id"`
	Name        string       `json:"name"`
	Email       string       `json:"email"`
	Password    string       `json:"password"`
	Memberships []Membership `json:"memberships"`
}

// App is an OAuth application registered with the service (spec 2.1).
type App struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	RedirectURI  string   `json:"redirect_uri"`
	Scopes       []string `json:"scopes"`
}

// Project is the folder a media lives in.
type Project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Media is one video held by an account.
type Media struct {
	HashedID    string
	AccountID   string
	Name        string
	Description string
	Duration    float64
	Project     Project
	// Status is the processing state the sandbox tracks: queued,
	// processing, ready or failed. The spec names events, not states.
	Status  string
	Created time.Time
	Updated time.Time
}

// ScopeMeaning returns the spec's meaning of a scope (word for word from
// spec 5.2), or "" for an unknown one.
func ScopeMeaning(scope string) string {
	switch scope {
	case "all:all":
		return "Everything the API allows."
	case "all:read":
		return "All data requests; no changes."
	case "media:read":
		return "Requests for media and project data, including customization and captions data."
	case "stats:read":
		return "Requests for stats data."
	case "media:upload":
		return "Uploading via the API, and fetching a single media by hashed ID (medias#show)."
	}
	return ""
}

// Config configures a sandbox. The zero value gives the default app, the
// demo users and their demo medias.
type Config struct {
	// Apps are the registered applications; empty means DefaultApp alone.
	Apps []App
	// Users are the people who can log in; empty means DefaultUsers.
	Users []User
	// Medias are the seeded medias; empty means DefaultMedias for the
	// accounts of Users.
	Medias []Media
	// TokenTTL is the access token lifetime (default 6h).
	TokenTTL time.Duration
	// CodeTTL is how long an authorization code can be exchanged (default 10m).
	CodeTTL time.Duration
	// WebhookURL, when set, receives signed webhook deliveries for media
	// changes.
	WebhookURL string
	// WebhookSecret keys the X-Service-Signature HMAC.
	WebhookSecret []byte
	// AtLeastOnce makes deliveries behave as the spec warns they may:
	// events batched together, occasional duplicate messages, and
	// messages sent out of order.
	AtLeastOnce bool
	// ProcessingDelay is the time between the steps of an upload's life
	// cycle (created, processing, ready); default 2s.
	ProcessingDelay time.Duration
	// Seed seeds the at-least-once randomness; 0 picks a random seed.
	Seed uint64
	// Strict refuses token requests whose parameters are not in the URL
	// query instead of accepting them with an X-Sandbox-Note.
	Strict bool
	// AllowRemote lets Start bind a non-loopback address; requests may
	// then name the sandbox by any IP address.
	AllowRemote bool
	// Hosts are host names the sandbox answers to besides loopback names
	// and addresses (localhost, 127.0.0.1, [::1]) and the host Start
	// binds: a tunnel's or a LAN name. A request naming any other host is
	// refused, so a web page cannot read the sandbox through a name of its
	// own pointed at this machine (DNS rebinding).
	Hosts []string
	// Now is the clock; nil means time.Now. Tests inject one to expire
	// codes and tokens.
	Now func() time.Time
	// Logf receives one line per request and per delivery; never a secret.
	Logf func(format string, args ...any)
	// HTTPClient sends webhook deliveries; nil means a client with the
	// service's 10 second time-out.
	HTTPClient *http.Client
}

// DefaultApp is the application every sandbox registers unless told
// otherwise. Its credentials are fixed so documentation, scripts and tests
// can name them; they are demo values that only this sandbox accepts.
func DefaultApp() App {
	return App{
		Name:         "Hookscope Demo",
		Description:  "Hookscope's demo integration: reads your media library and shows what the API returns.",
		ClientID:     "sandbox-demo-client",
		ClientSecret: "sandbox-demo-secret",
		RedirectURI:  "http://127.0.0.1:8765/callback",
		Scopes:       []string{"all:all"},
	}
}

// DefaultUsers returns the demo users: an owner of two accounts, a manager
// of one and a viewer who may not authorize.
func DefaultUsers() []User {
	acme, side := demoAccounts()
	return []User{
		{ContactID: "5001", Name: "Olivia Owner", Email: "owner@example.com", Password: "owner",
			Memberships: []Membership{{acme, RoleOwner}, {side, RoleOwner}}},
		{ContactID: "5002", Name: "Manny Manager", Email: "manager@example.com", Password: "manager",
			Memberships: []Membership{{acme, RoleManager}}},
		{ContactID: "5003", Name: "Vic Viewer", Email: "viewer@example.com", Password: "viewer",
			Memberships: []Membership{{acme, RoleViewer}}},
	}
}

// DefaultMedias returns demo medias for each account: fixed ones for the
// demo accounts, two generated ones (stable ids) for any other account.
func DefaultMedias(accounts []Account) []Media {
	acme, side := demoAccounts()
	var out []Media
	for _, a := range accounts {
		switch a.ID {
		case acme.ID:
			mk := Project{ID: "mkt4a1b2c3", Name: "Marketing"}
			sp := Project{ID: "sup7d8e9f0", Name: "Support"}
			out = append(out,
				Media{HashedID: "k3j9x2m7pq", AccountID: a.ID, Name: "Product tour", Description: "A three-minute walk through the product.", Duration: 187.32, Project: mk},
				Media{HashedID: "h8d2f5w1zc", AccountID: a.ID, Name: "Onboarding, step 1", Description: "Creating your first project.", Duration: 64.5, Project: sp},
				Media{HashedID: "t6y4u8n0vb", AccountID: a.ID, Name: "Customer story: Northwind", Duration: 241.04, Project: mk},
			)
		case side.ID:
			p := Project{ID: "per1q2w3e4", Name: "Personal"}
			out = append(out,
				Media{HashedID: "r2e5w8q1ma", AccountID: a.ID, Name: "Garage band rehearsal", Duration: 1312.8, Project: p},
				Media{HashedID: "p9o7i5u3ly", AccountID: a.ID, Name: "Time-lapse: sunrise", Duration: 42.0, Project: p},
			)
		default:
			p := Project{ID: stableID("prj", a.ID), Name: "Demo"}
			out = append(out,
				Media{HashedID: stableID("m1", a.ID), AccountID: a.ID, Name: "Demo video 1", Duration: 95.25, Project: p},
				Media{HashedID: stableID("m2", a.ID), AccountID: a.ID, Name: "Demo video 2", Duration: 30.0, Project: p},
			)
		}
	}
	return out
}

// demoAccounts returns the two demo accounts.
func demoAccounts() (acme, side Account) {
	return Account{ID: "741302", Name: "Acme Studio", URL: "https://acme-studio.video.example"},
		Account{ID: "741388", Name: "Side Project", URL: "https://side-project.video.example"}
}

// stableID derives a 10-character lowercase id from a seed, so generated
// medias keep their ids across restarts.
func stableID(prefix, seed string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	h := uint64(14695981039346656037)
	for _, c := range []byte(prefix + "/" + seed) {
		h ^= uint64(c)
		h *= 1099511628211
	}
	b := make([]byte, 10)
	for i := range b {
		b[i] = alphabet[h%uint64(len(alphabet))]
		h = h/uint64(len(alphabet)) ^ (h << 7) ^ uint64(i)*0x9e3779b97f4a7c15
	}
	return string(b)
}

// Server is a running sandbox: its registry, its sessions, codes and tokens,
// its medias and its webhook sender. All state sits behind mu.
type Server struct {
	cfg     Config
	apps    map[string]App
	appList []App
	users   []User
	handler http.Handler
	tmpl    templates
	hooks   *hookSender
	// hosts are the names requests may give besides loopback ones
	// (Config.Hosts, lower case).
	hosts []string

	mu       sync.Mutex
	sessions map[string]*session
	codes    map[string]*authCode
	access   map[string]*accessToken
	refresh  map[string]*refreshToken
	grants   map[grantKey][]string
	medias   map[string]*Media
	order    []string // media ids in creation order, for listings

	closeOnce sync.Once
	httpSrv   *http.Server
	wg        sync.WaitGroup
	stop      context.CancelFunc
	ctx       context.Context
}

type grantKey struct{ contactID, clientID, accountID string }

// New validates cfg, fills in defaults and builds a sandbox. Call Close when
// done so the webhook sender stops.
func New(cfg Config) (*Server, error) {
	if len(cfg.Apps) == 0 {
		cfg.Apps = []App{DefaultApp()}
	}
	if len(cfg.Users) == 0 {
		cfg.Users = DefaultUsers()
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.CodeTTL <= 0 {
		cfg.CodeTTL = DefaultCodeTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{
		cfg:      cfg,
		apps:     map[string]App{},
		users:    cfg.Users,
		sessions: map[string]*session{},
		codes:    map[string]*authCode{},
		access:   map[string]*accessToken{},
		refresh:  map[string]*refreshToken{},
		grants:   map[grantKey][]string{},
		medias:   map[string]*Media{},
	}
	for _, h := range cfg.Hosts {
		s.hosts = append(s.hosts, strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), ".")))
	}
	for i, a := range cfg.Apps {
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("app #%d (%q): %w", i+1, a.Name, err)
		}
		if _, dup := s.apps[a.ClientID]; dup {
			return nil, fmt.Errorf("app #%d (%q): client_id %q is registered twice", i+1, a.Name, a.ClientID)
		}
		a.Scopes = append([]string(nil), a.Scopes...)
		s.apps[a.ClientID] = a
		s.appList = append(s.appList, a)
	}
	emails := map[string]bool{}
	var accounts []Account
	seen := map[string]bool{}
	for i, u := range cfg.Users {
		if u.Email == "" || u.Password == "" || u.ContactID == "" {
			return nil, fmt.Errorf("user #%d: contact_id, email and password are required", i+1)
		}
		if emails[strings.ToLower(u.Email)] {
			return nil, fmt.Errorf("user #%d: email %q is used twice", i+1, u.Email)
		}
		emails[strings.ToLower(u.Email)] = true
		if len(u.Memberships) == 0 {
			return nil, fmt.Errorf("user %s: no account memberships", u.Email)
		}
		for _, m := range u.Memberships {
			if m.Account.ID == "" {
				return nil, fmt.Errorf("user %s: an account has no id", u.Email)
			}
			switch m.Role {
			case RoleOwner, RoleManager, RoleViewer:
			default:
				return nil, fmt.Errorf("user %s: role %q in account %s is not owner, manager or viewer", u.Email, m.Role, m.Account.ID)
			}
			if !seen[m.Account.ID] {
				seen[m.Account.ID] = true
				accounts = append(accounts, m.Account)
			}
		}
	}
	medias := cfg.Medias
	if len(medias) == 0 {
		medias = DefaultMedias(accounts)
	}
	created := cfg.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	for _, m := range medias {
		if m.HashedID == "" || !seen[m.AccountID] {
			return nil, fmt.Errorf("media %q: needs a hashed id and an account one of the users belongs to", m.Name)
		}
		if _, dup := s.medias[m.HashedID]; dup {
			return nil, fmt.Errorf("media %q: hashed id %s is used twice", m.Name, m.HashedID)
		}
		m := m
		if m.Status == "" {
			m.Status = "ready"
		}
		if m.Created.IsZero() {
			m.Created = created
		}
		if m.Updated.IsZero() {
			m.Updated = m.Created
		}
		s.medias[m.HashedID] = &m
		s.order = append(s.order, m.HashedID)
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	if cfg.WebhookURL != "" {
		u, err := url.Parse(cfg.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("webhook URL %q: want an absolute http or https URL", redact.URL(cfg.WebhookURL))
		}
		s.hooks = newHookSender(s)
		s.spawn(func() { s.hooks.run(s.ctx) })
		if len(cfg.WebhookSecret) == 0 {
			cfg.Logf("webhook: no secret configured, so deliveries go out without %s", "X-Service-Signature")
		}
	}
	s.tmpl = parseTemplates()
	s.handler = s.routes()
	return s, nil
}

// Validate checks a registration the way the service's settings screen
// would.
func (a App) Validate() error {
	switch {
	case a.Name == "":
		return errors.New("name is required")
	case a.ClientID == "":
		return errors.New("client_id is required")
	case a.ClientSecret == "":
		return errors.New("client_secret is required")
	case a.RedirectURI == "":
		return errors.New("redirect_uri is required")
	case len(a.Scopes) == 0:
		return errors.New("at least one scope is required")
	}
	u, err := url.Parse(a.RedirectURI)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("redirect_uri %q is not an absolute URL", a.RedirectURI)
	}
	if u.Fragment != "" || strings.Contains(a.RedirectURI, "#") {
		return fmt.Errorf("redirect_uri %q has a fragment, which OAuth forbids", a.RedirectURI)
	}
	for _, sc := range a.Scopes {
		if ScopeMeaning(sc) == "" {
			return fmt.Errorf("scope %q is unknown (known: all:all, all:read, media:read, stats:read, media:upload)", sc)
		}
	}
	return nil
}

// Apps returns the registered applications, in registration order.
func (s *Server) Apps() []App {
	out := make([]App, len(s.appList))
	for i, a := range s.appList {
		out[i] = a
		out[i].Scopes = append([]string(nil), a.Scopes...)
	}
	return out
}

// Users returns the demo users.
func (s *Server) Users() []User { return append([]User(nil), s.users...) }

// Medias returns a snapshot of every media, in creation order.
func (s *Server) Medias() []Media {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Media, 0, len(s.order))
	for _, id := range s.order {
		if m, ok := s.medias[id]; ok {
			out = append(out, *m)
		}
	}
	return out
}

// Handler returns the sandbox's HTTP face.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops the webhook sender (abandoning deliveries still queued) and,
// for a server made by Start, the listener.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.shutdown()
		if s.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.httpSrv.Shutdown(ctx)
			cancel()
		}
		s.wg.Wait()
	})
}

// shutdown cancels the server's context under mu, so spawn never adds to
// the wait group after Close has started waiting.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.stop()
	s.mu.Unlock()
}

// Start builds a sandbox and serves it on addr (DefaultAddr when empty)
// until ctx ends or Close is called. It returns the base URL, which is also
// the auth URL: the spec lists /oauth/authorize under both. A non-loopback
// addr is refused unless cfg.AllowRemote is set.
func Start(ctx context.Context, addr string, cfg Config) (*Server, string, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	if !cfg.AllowRemote {
		if err := CheckLoopback(addr); err != nil {
			return nil, "", err
		}
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			cfg.Hosts = append(slices.Clone(cfg.Hosts), host)
		}
	}
	s, err := New(cfg)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.httpSrv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logf("sandbox: serve: %v", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
			// Close waits on wg, so shut the listener down here instead.
			s.shutdown()
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.httpSrv.Shutdown(sctx)
			cancel()
		case <-s.ctx.Done():
		}
	}()
	host := ln.Addr().String()
	return s, "http://" + host, nil
}

// CheckLoopback returns an error unless addr's host is a loopback address
// (127.0.0.0/8, ::1 or localhost).
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not loopback: the sandbox hands out demo credentials and tokens, so it binds 127.0.0.1 unless remote access is allowed explicitly", addr)
	}
	return nil
}

// randomHex returns n random bytes hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms.
	return hex.EncodeToString(b)
}
