package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/hookscope/hookscope/inspector"
)

// Defaults of the relay's stream.
const (
	DefaultMaxAge          = 7 * 24 * time.Hour
	DefaultDuplicateWindow = 2 * time.Minute
	// DefaultSyncInterval is how often `hookscope relay` has the embedded
	// server sync its files to disk (Options.SyncInterval): every
	// acknowledged delivery is written to the file before the answer, so
	// a crash of the relay's process loses none, and a power cut at most
	// the last second. An fsync per delivery kept the answer's p99 far
	// over the 25 ms target on a busy disk (docs/relay.md, Durability).
	DefaultSyncInterval = time.Second
)

// MaxPayload is the embedded server's message size limit: a body at the
// receiver's 10 MiB cap plus a header block at its 4 MiB limit, with room
// for the envelope's fields. (NATS defaults to 1 MB.)
const MaxPayload = 16 << 20

// Options configure a relay's NATS side.
type Options struct {
	// DataDir holds the JetStream store, the access list and the running
	// relay's address file (see DefaultDataDir).
	DataDir string
	// ClientAddr is where the embedded server takes NATS clients (the
	// invite, revoke and status commands; NATS tools on a LAN). Default
	// 127.0.0.1:0, a free loopback port.
	ClientAddr string
	// NATSURL, when set, uses an existing NATS deployment instead of the
	// embedded server (comma-separated URLs of a cluster), authenticated
	// with the credentials file NATSCreds (a .creds file, or an NKey seed
	// file). Its users and their permissions are the deployment's (see
	// Permissions).
	NATSURL   string
	NATSCreds string
	// Stream names the stream (default DefaultStream).
	Stream string
	// Replicas is the stream's replica count on a NATS cluster (default 1;
	// the embedded server is a single node).
	Replicas int
	// MaxAge and MaxBytes bound what the stream keeps (default 7 days, no
	// byte limit); the oldest deliveries go first.
	MaxAge   time.Duration
	MaxBytes int64
	// DuplicateWindow is how long a re-publish of the same receipt is
	// recognised and dropped (default 2 minutes).
	DuplicateWindow time.Duration
	// SyncInterval, when set, lets the embedded server sync its files to
	// disk on that interval instead of before each acknowledgement: an
	// acknowledged delivery then survives a crash of the relay's process
	// (it is in the operating system's hands) but not a power cut of its
	// machine. Zero (the default) syncs every delivery before the relay
	// answers, as a laptop's store does.
	SyncInterval time.Duration
	// Logf receives operational messages (never credentials). Nil discards.
	Logf func(format string, args ...any)
}

// DefaultDataDir is the relay's data folder when none is given: under the
// user's config folder.
func DefaultDataDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the user's config folder for the relay's data (give --data): %w", err)
	}
	return filepath.Join(dir, "hookscope", "relay"), nil
}

// Server is a relay's NATS side: the stream, its Sink, and (embedded) the
// NATS server with the WebSocket endpoint laptops reach through
// NATSHandler.
type Server struct {
	opts    Options
	subject string
	logf    func(string, ...any)

	ns    *server.Server // nil with an existing deployment
	nc    *nats.Conn
	js    jetstream.JetStream
	admin *nats.Subscription
	ws    *url.URL // the embedded server's loopback WebSocket listener
	proxy http.Handler
	sink  *Sink

	started time.Time

	mu     sync.Mutex
	public string // the public URL the service is given ("" until known)
	closed bool
}

// Start starts the relay's NATS side: the embedded server in DataDir (or
// a connection to NATSURL) and the stream.
func Start(ctx context.Context, o Options) (*Server, error) {
	o.Stream = cmp.Or(o.Stream, DefaultStream)
	o.ClientAddr = cmp.Or(o.ClientAddr, "127.0.0.1:0")
	o.Replicas = max(o.Replicas, 1)
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	o.DuplicateWindow = min(o.DuplicateWindow, o.MaxAge)
	s := &Server{opts: o, subject: subjectOf(o.Stream), logf: o.Logf, started: time.Now().UTC()}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	var err error
	if o.NATSURL != "" {
		err = s.connectExternal()
	} else {
		err = s.startEmbedded()
	}
	if err == nil {
		err = s.ensureStream(ctx)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.sink = &Sink{js: s.js, nc: s.nc, stream: o.Stream, subject: s.subject}
	if s.ns != nil {
		if err := s.writeState(); err != nil {
			s.Close()
			return nil, err
		}
		s.dropRevokedConsumers(ctx)
	}
	return s, nil
}

// subjectOf is the subject a stream's receipts are published on; each
// stream has its own, so two relays can share one NATS deployment.
func subjectOf(stream string) string { return "hookscope.deliveries." + stream }

func (s *Server) startEmbedded() error {
	if s.opts.DataDir == "" {
		return errors.New("the relay needs a data folder (--data)")
	}
	// The relay's own key is created on first start.
	if err := UpdateCredentials(s.opts.DataDir, func(*Credentials) error { return nil }); err != nil {
		return err
	}
	creds, err := LoadCredentials(s.opts.DataDir)
	if err != nil {
		return err
	}
	sopts, err := s.serverOptions(creds)
	if err != nil {
		return err
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return fmt.Errorf("start the relay's NATS server: %w", err)
	}
	ns.SetLoggerV2(natsLogger{s.logf}, false, false, false)
	ns.Start()
	s.ns = ns
	if !ns.ReadyForConnections(30 * time.Second) {
		return fmt.Errorf("the relay's NATS server did not start on %s within 30 s (is the port free? is %s writable?)", s.opts.ClientAddr, s.opts.DataDir)
	}
	ws, err := url.Parse(ns.WebsocketURL())
	if err != nil {
		return fmt.Errorf("the relay's WebSocket listener: %w", err)
	}
	s.ws = ws
	s.proxy = wsProxy(ws)
	kp, err := nkeys.FromSeed([]byte(creds.RelaySeed))
	if err != nil {
		return fmt.Errorf("the relay's own key: %w", err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nkeyOption(kp), nats.Name("hookscope relay"),
		nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to the relay's NATS server: %w", err)
	}
	s.nc = nc
	if s.js, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("the relay's JetStream: %w", err)
	}
	s.admin, err = nc.Subscribe(adminSubject, func(m *nats.Msg) {
		msg := "ok"
		if err := s.Reload(context.Background()); err != nil {
			msg = err.Error()
		}
		m.Respond([]byte(msg))
	})
	if err != nil {
		return fmt.Errorf("the relay's admin subject: %w", err)
	}
	return nil
}

// serverOptions are the embedded server's settings for creds' users.
func (s *Server) serverOptions(creds *Credentials) (*server.Options, error) {
	host, portStr, err := net.SplitHostPort(s.opts.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("the relay's NATS client address %q: want host:port", s.opts.ClientAddr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("the relay's NATS client address %q: the port is not a number", s.opts.ClientAddr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	users, err := creds.nkeyUsers(s.opts.Stream)
	if err != nil {
		return nil, err
	}
	o := &server.Options{
		ServerName: "hookscope-relay",
		Host:       host,
		Port:       port,
		Nkeys:      users,
		JetStream:  true,
		StoreDir:   filepath.Join(s.opts.DataDir, storeDir),
		MaxPayload: MaxPayload,
		// By default every acknowledged delivery is on disk (fsync) before
		// the relay answers the service: a power cut of the relay's
		// machine loses nothing it answered 200 to (see SyncInterval).
		SyncAlways:   s.opts.SyncInterval <= 0,
		SyncInterval: s.opts.SyncInterval,
		// Laptops reach the WebSocket listener only through the relay's
		// HTTP port (NATSHandler), so it listens on loopback alone; TLS
		// is the tunnel's or the user's HTTPS front's.
		Websocket: server.WebsocketOpts{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoTLS: true},
		NoSigs:    true,
	}
	if err := checkExposure(o); err != nil {
		return nil, err
	}
	return o, nil
}

// checkExposure refuses a NATS listener beyond loopback without
// authentication: the stream holds every delivery's headers and body.
func checkExposure(o *server.Options) error {
	if len(o.Nkeys) > 0 || len(o.Users) > 0 || o.Username != "" || o.Authorization != "" {
		return nil
	}
	for _, host := range []string{o.Host, o.Websocket.Host} {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("refusing to expose NATS on %s without authentication: the stream holds every delivery", cmp.Or(host, "every interface"))
		}
	}
	return nil
}

// nkeyOption authenticates a NATS connection with kp.
func nkeyOption(kp nkeys.KeyPair) nats.Option {
	pub, _ := kp.PublicKey()
	return nats.Nkey(pub, kp.Sign)
}

// wsProxy is the /nats endpoint: a reverse proxy (with the WebSocket
// upgrade) to the embedded server's loopback WebSocket listener.
func wsProxy(ws *url.URL) http.Handler {
	target := *ws
	target.Scheme = "http" // the upgrade is an HTTP request
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&target)
			r.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "the relay's NATS server is not answering", http.StatusBadGateway)
		},
	}
	return p
}

func (s *Server) connectExternal() error {
	opts := []nats.Option{nats.Name("hookscope relay"), nats.MaxReconnects(-1)}
	if s.opts.NATSCreds != "" {
		o, err := credsOption(s.opts.NATSCreds)
		if err != nil {
			return err
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(s.opts.NATSURL, opts...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", redactURL(s.opts.NATSURL), err)
	}
	s.nc = nc
	if s.js, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("JetStream at %s: %w", redactURL(s.opts.NATSURL), err)
	}
	if limit := nc.MaxPayload(); limit < MaxPayload {
		s.logf("relay: the NATS server takes messages up to %d bytes: a delivery bigger than that is kept with its body cut and answered 413 (set max_payload to %d on the server to carry the receiver's 10 MiB cap)", limit, MaxPayload)
	}
	return nil
}

// credsOption reads a .creds file (user JWT and seed) or a file holding
// an NKey seed.
func credsOption(path string) (nats.Option, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --nats-creds: %w", err)
	}
	if strings.Contains(string(b), "BEGIN NATS USER JWT") {
		return nats.UserCredentials(path), nil
	}
	o, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("--nats-creds %s is neither a .creds file nor an NKey seed file", path)
	}
	return o, nil
}

// ensureStream creates the stream or brings its limits to the options.
func (s *Server) ensureStream(ctx context.Context) error {
	maxBytes := s.opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = -1
	}
	cfg := jetstream.StreamConfig{
		Name:        s.opts.Stream,
		Description: "Hookscope relay: one message per webhook receipt",
		Subjects:    []string{s.subject},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      s.opts.MaxAge,
		MaxBytes:    maxBytes,
		Duplicates:  s.opts.DuplicateWindow,
		Replicas:    s.opts.Replicas,
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := s.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("create the relay's stream %s: %w", s.opts.Stream, err)
	}
	return nil
}

// Sink is what the receiver stores deliveries with on the relay.
func (s *Server) Sink() *Sink { return s.sink }

// NATSHandler serves NATS over WebSocket for laptops; the relay's HTTP
// server routes NATSPath to it, beside the receiver, so one port (and one
// tunnel) serves both. With an existing NATS deployment laptops connect to
// the deployment, and it answers 404 saying so.
func (s *Server) NATSHandler() http.Handler {
	if s.proxy == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "this relay uses an existing NATS deployment: laptops connect to it directly", http.StatusNotFound)
		})
	}
	return s.proxy
}

// MaxBody is the largest body the relay carries whole: the receiver's
// cap, or less when the NATS server's message limit is lower (its header
// block takes the rest). Set the receiver's cap to it so a bigger body is
// answered 413 by the receiver, as any body over the cap is.
func (s *Server) MaxBody() int64 {
	return min(inspector.DefaultMaxBody, max(s.nc.MaxPayload()-envelopeRoom, 0))
}

// envelopeRoom is what MaxBody leaves of a message for the envelope's
// other fields and an ordinary header block.
const envelopeRoom = 64 << 10

// SetPublicURL records the URL the service sends to (a tunnel's, or the
// user's HTTPS front): invite and status read it with the laptops'
// address derived from it.
func (s *Server) SetPublicURL(public string) error {
	if public != "" {
		if _, err := WebSocketURL(public); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.public = public
	s.mu.Unlock()
	if s.ns == nil {
		return nil
	}
	return s.writeState()
}

// LaptopURL is the address laptops connect to ("" until the public URL
// is known, or with an existing deployment: its own URL).
func (s *Server) LaptopURL() string {
	if s.ns == nil {
		return s.opts.NATSURL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, _ := WebSocketURL(s.public)
	return u
}

// ClientURL is the embedded server's NATS client address (loopback by
// default); "" with an existing deployment.
func (s *Server) ClientURL() string {
	if s.ns == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Reload reads the access list again: a new credential can connect, and a
// revoked or replaced one is disconnected and refused from then on (its
// consumers are deleted).
func (s *Server) Reload(ctx context.Context) error {
	if s.ns == nil {
		return errors.New("this relay uses an existing NATS deployment: its users are managed there")
	}
	creds, err := LoadCredentials(s.opts.DataDir)
	if err != nil {
		return err
	}
	sopts, err := s.serverOptions(creds)
	if err != nil {
		return err
	}
	if err := s.ns.ReloadOptions(sopts); err != nil {
		return fmt.Errorf("apply the relay's credentials: %w", err)
	}
	s.dropRevokedConsumers(ctx)
	return nil
}

// dropRevokedConsumers deletes the consumers of revoked credentials: they
// can never read again, and their position would show in status.
func (s *Server) dropRevokedConsumers(ctx context.Context) {
	creds, err := LoadCredentials(s.opts.DataDir)
	if err != nil {
		return
	}
	st, err := s.js.Stream(ctx, s.opts.Stream)
	if err != nil {
		return
	}
	for _, u := range creds.Users {
		if u.Active() {
			continue
		}
		for _, c := range []string{u.Name, pullConsumer(u.Name)} {
			if err := st.DeleteConsumer(ctx, c); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				s.logf("relay: delete %s's consumer %s: %v", u.Name, c, err)
			}
		}
	}
}

// state is relay.json: how the commands on the same machine reach a
// running relay.
type state struct {
	PID       int       `json:"pid"`
	ClientURL string    `json:"client_url"`
	PublicURL string    `json:"public_url,omitempty"`
	LaptopURL string    `json:"laptop_url,omitempty"`
	Stream    string    `json:"stream"`
	StartedAt time.Time `json:"started_at"`
}

func (s *Server) writeState() error {
	s.mu.Lock()
	st := state{PID: os.Getpid(), ClientURL: s.ns.ClientURL(), PublicURL: s.public, Stream: s.opts.Stream, StartedAt: s.started}
	s.mu.Unlock()
	st.LaptopURL, _ = WebSocketURL(st.PublicURL)
	b, _ := json.MarshalIndent(st, "", "  ")
	return writeFileAtomic(filepath.Join(s.opts.DataDir, stateFile), append(b, '\n'))
}

// readState reads a running relay's relay.json (os.ErrNotExist when no
// relay has run there).
func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read %s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// Close stops the relay's NATS side: the connection, then the embedded
// server (which flushes the stream).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.nc != nil {
		s.nc.Drain()
		s.nc.Close()
	}
	if s.ns != nil {
		os.Remove(filepath.Join(s.opts.DataDir, stateFile))
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
	return nil
}

// natsLogger passes the embedded server's warnings and errors on; its
// notices (the start banner) and traces are dropped.
type natsLogger struct{ logf func(string, ...any) }

func (l natsLogger) Noticef(string, ...any) {}
func (l natsLogger) Warnf(format string, v ...any) {
	if strings.HasPrefix(format, "Maximum payloads over") || strings.HasPrefix(format, "Websocket not configured with TLS") {
		// Both on purpose: MaxPayload carries the receiver's cap; TLS is
		// the tunnel's or the HTTPS front's (the listener is loopback).
		return
	}
	l.logf("relay: nats: "+format, v...)
}
func (l natsLogger) Fatalf(format string, v ...any) { l.logf("relay: nats: "+format, v...) }
func (l natsLogger) Errorf(format string, v ...any) { l.logf("relay: nats: "+format, v...) }
func (l natsLogger) Debugf(string, ...any)          {}
func (l natsLogger) Tracef(string, ...any)          {}
