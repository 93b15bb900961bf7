// Package sandbox is `hookscope sandbox`: a local emulation of the service
// (OAuth pages, token endpoint, Data and Upload API, webhook sender).
package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/redact"
	"github.com/hookscope/hookscope/sandbox"
)

const examples = `  # run the sandbox on 127.0.0.1:8790 with the demo app, users and medias
  hookscope sandbox

  # send signed webhooks to a local receiver (hookscope listen) for every media change
  SANDBOX_HOOK_SECRET=s3cret hookscope sandbox --webhook-url http://127.0.0.1:8787/webhooks --webhook-secret-env SANDBOX_HOOK_SECRET

  # the messy delivery the spec warns about: batches, duplicates, out-of-order
  hookscope sandbox --webhook-url http://127.0.0.1:8787/webhooks --webhook-secret s3cret --at-least-once

  # short-lived tokens to exercise refresh, and refuse token params outside the query
  hookscope sandbox --token-ttl 2m --strict

  # more applications from a JSON file (an array of {name, description, client_id,
  # client_secret, redirect_uri, scopes})
  hookscope sandbox --apps apps.json

  # while it runs: make a media go created -> processing -> ready (webhooks on demand)
  curl -X POST 'http://127.0.0.1:8790/sandbox/lifecycle?account_id=741302&name=Launch'`

// Options are the sandbox's flags.
type Options struct {
	Env              *cmdutil.Env
	Addr             string
	AllowRemote      bool
	Hosts            []string
	WebhookURL       string
	WebhookSecret    string
	WebhookSecretEnv string
	AtLeastOnce      bool
	Seed             uint64
	TokenTTL         time.Duration
	CodeTTL          time.Duration
	AppsFile         string
	RedirectURI      string
	Scopes           string
	Strict           bool
	ProcessingDelay  time.Duration
	Quiet            bool
	JSON             bool

	secret []byte
	apps   []sandbox.App
}

// NewCmd builds `hookscope sandbox`; runF replaces the server in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "sandbox [flags]",
		Short: "Run a local emulation of the service: OAuth pages, token endpoint, Data/Upload API, webhooks",
		Long: `Run a local emulation of the service with demo data only: its OAuth pages and
token endpoint, a slice of the Data and Upload APIs, and a webhook sender.
Everything works offline; Ctrl+C stops it.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Addr, "addr", sandbox.DefaultAddr, "address to listen on (host:port); loopback unless --allow-remote")
	fs.StringArrayVar(&o.Hosts, "host", nil, "also answer requests that name this host `name` (a tunnel's or a LAN name; repeatable); loopback names and the --addr host always work, any other is refused (DNS rebinding defence)")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow binding a non-loopback address (the sandbox hands out demo credentials and tokens to anyone who can reach it)")
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "POST URL that receives webhook deliveries for media changes (off when empty)")
	fs.StringVar(&o.WebhookSecret, "webhook-secret", "", "secret key the deliveries are signed with; prefer --webhook-secret-env")
	fs.StringVar(&o.WebhookSecretEnv, "webhook-secret-env", "", "name of an environment variable holding the webhook secret key")
	fs.BoolVar(&o.AtLeastOnce, "at-least-once", false, "deliver like the spec warns: batch events, sometimes send a message twice, sometimes out of order")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed for --at-least-once randomness (0: random), to reproduce a run")
	fs.DurationVar(&o.TokenTTL, "token-ttl", sandbox.DefaultTokenTTL, "access token lifetime (expires_in)")
	fs.DurationVar(&o.CodeTTL, "code-ttl", sandbox.DefaultCodeTTL, "how long an authorization code can be exchanged")
	fs.StringVar(&o.AppsFile, "apps", "", "JSON file of more applications to register: an array of {name, description, client_id, client_secret, redirect_uri, scopes}")
	fs.StringVar(&o.RedirectURI, "redirect-uri", "", "Redirect URI of the default app (default "+sandbox.DefaultApp().RedirectURI+")")
	fs.StringVar(&o.Scopes, "scopes", "", "comma-separated scopes of the default app (default "+strings.Join(sandbox.DefaultApp().Scopes, ",")+")")
	fs.BoolVar(&o.Strict, "strict", false, "refuse token requests whose parameters are in the form body or HTTP Basic instead of the URL query")
	fs.DurationVar(&o.ProcessingDelay, "processing-delay", 2*time.Second, "time between created, processing and ready of an uploaded media")
	fs.BoolVar(&o.Quiet, "quiet", false, "do not log requests and deliveries to stderr")
	fs.BoolVar(&o.JSON, "json", false, "print the startup summary as one JSON object")
	_ = cmd.MarkFlagFilename("apps", "json")
	return cmd
}

// validate checks the flags and resolves the webhook secret.
func (o *Options) validate([]string) error {
	switch {
	case o.TokenTTL <= 0:
		return cmdutil.UsageErrorf("--token-ttl must be positive, got %s", o.TokenTTL)
	case o.CodeTTL <= 0:
		return cmdutil.UsageErrorf("--code-ttl must be positive, got %s", o.CodeTTL)
	case o.ProcessingDelay <= 0:
		return cmdutil.UsageErrorf("--processing-delay must be positive, got %s", o.ProcessingDelay)
	case o.WebhookSecret != "" && o.WebhookSecretEnv != "":
		return cmdutil.UsageErrorf("give the webhook secret once: --webhook-secret or --webhook-secret-env, not both")
	case (o.WebhookSecret != "" || o.WebhookSecretEnv != "" || o.AtLeastOnce) && o.WebhookURL == "":
		return cmdutil.UsageErrorf("--webhook-secret, --webhook-secret-env and --at-least-once need --webhook-url")
	}
	if o.WebhookURL != "" {
		u, err := url.Parse(o.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cmdutil.UsageErrorf("--webhook-url must be an absolute http or https URL")
		}
	}
	o.secret = []byte(o.WebhookSecret)
	if o.WebhookSecretEnv != "" {
		v := o.Env.Getenv(o.WebhookSecretEnv)
		if v == "" {
			return cmdutil.UsageErrorf("--webhook-secret-env %s: the environment variable is unset or empty", o.WebhookSecretEnv)
		}
		o.secret = []byte(v)
	}
	if err := cmdutil.CheckHostPort("--addr", o.Addr); err != nil {
		return err
	}
	for i, h := range o.Hosts {
		if strings.ContainsAny(h, "/@ ") {
			h = ""
		} else if name, _, err := net.SplitHostPort(h); err == nil {
			h = name
		}
		if h == "" {
			return cmdutil.UsageErrorf("--host %q: want a host name such as sandbox.example.test (no scheme or path)", o.Hosts[i])
		}
		o.Hosts[i] = h
	}
	if sandbox.CheckLoopback(o.Addr) != nil && !o.AllowRemote {
		return cmdutil.UsageErrorf("--addr %s is not a loopback address; add --allow-remote to serve the sandbox on the network", o.Addr)
	}
	return o.resolveApps()
}

// resolveApps builds the registered applications from --redirect-uri,
// --scopes and --apps, and checks each as the service's settings screen
// would: a wrong value is a usage error, said before anything starts.
func (o *Options) resolveApps() error {
	def := sandbox.DefaultApp()
	if o.RedirectURI != "" {
		def.RedirectURI = o.RedirectURI
	}
	if o.Scopes != "" {
		def.Scopes = nil
		for _, s := range strings.Split(o.Scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				def.Scopes = append(def.Scopes, s)
			}
		}
	}
	if err := def.Validate(); err != nil {
		return cmdutil.UsageErrorf("--redirect-uri/--scopes: the default app: %v", err)
	}
	o.apps = []sandbox.App{def}
	if o.AppsFile != "" {
		more, err := readSandboxApps(o.AppsFile)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		for i, a := range more {
			if err := a.Validate(); err != nil {
				return cmdutil.UsageErrorf("--apps %s: app #%d (%q): %v", o.AppsFile, i+1, a.Name, err)
			}
		}
		o.apps = append(o.apps, more...)
	}
	return nil
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	if sandbox.CheckLoopback(o.Addr) != nil {
		fmt.Fprintf(env.Stderr, "warning: serving the sandbox on %s: anyone who can reach this machine can log in as the demo users and use its tokens\n", o.Addr)
	}
	var mu sync.Mutex
	logf := func(format string, a ...any) {
		if o.Quiet {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(env.Stderr, time.Now().Format("15:04:05.000")+" "+format+"\n", a...)
	}
	cfg := sandbox.Config{
		Apps: o.apps, TokenTTL: o.TokenTTL, CodeTTL: o.CodeTTL,
		WebhookURL: o.WebhookURL, WebhookSecret: o.secret, AtLeastOnce: o.AtLeastOnce, Seed: o.Seed,
		Strict: o.Strict, AllowRemote: o.AllowRemote, Hosts: o.Hosts, ProcessingDelay: o.ProcessingDelay, Logf: logf,
	}
	srv, base, err := sandbox.Start(ctx, o.Addr, cfg)
	if err != nil {
		// The flags were checked: a busy port, most likely.
		return fmt.Errorf("start sandbox: %w", err)
	}
	defer srv.Close()
	mu.Lock()
	if o.JSON {
		err = printSandboxJSON(env.Stdout, srv, base, cfg)
	} else {
		printSandboxSummary(env.Stdout, srv, base, cfg, len(o.secret) > 0)
	}
	mu.Unlock()
	if err != nil {
		return err
	}
	<-ctx.Done()
	logf("sandbox: stopping")
	return nil
}

// readSandboxApps reads more applications: a JSON array, or an object with an
// "apps" array.
func readSandboxApps(path string) ([]sandbox.App, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--apps: %w", err)
	}
	var apps []sandbox.App
	if err := json.Unmarshal(b, &apps); err != nil {
		var wrapped struct {
			Apps []sandbox.App `json:"apps"`
		}
		if err2 := json.Unmarshal(b, &wrapped); err2 != nil || wrapped.Apps == nil {
			return nil, fmt.Errorf("--apps %s: want a JSON array of {name, description, client_id, client_secret, redirect_uri, scopes}: %v", path, err)
		}
		apps = wrapped.Apps
	}
	if len(apps) == 0 {
		return nil, fmt.Errorf("--apps %s: the file lists no applications", path)
	}
	return apps, nil
}

func printSandboxSummary(w io.Writer, srv *sandbox.Server, base string, cfg sandbox.Config, signed bool) {
	fmt.Fprintf(w, "Service sandbox running: a local emulation of the video service, with demo data only.\n\n")
	fmt.Fprintf(w, "  base URL   %s\n", base)
	fmt.Fprintf(w, "  auth URL   %s   (GET /oauth/authorize; the spec lists it under both)\n", base)
	fmt.Fprintf(w, "  token      POST %s/oauth/token   (inputs as URL query parameters%s)\n", base, map[bool]string{true: "; strict: nowhere else", false: ""}[cfg.Strict])
	fmt.Fprintf(w, "  Data API   %s/v1/medias/<hashed_id>\n", base)
	fmt.Fprintf(w, "  Upload API POST %s/upload?access_token=<ACCESS_TOKEN>   (query token only)\n", base)
	fmt.Fprintf(w, "  tokens     expire after %s; codes after %s\n\n", human.Duration(cfg.TokenTTL), human.Duration(cfg.CodeTTL))
	fmt.Fprintf(w, "Registered apps (client secrets are printed because they are this sandbox's own demo credentials):\n")
	for _, a := range srv.Apps() {
		fmt.Fprintf(w, "  %s\n", a.Name)
		if a.Description != "" {
			fmt.Fprintf(w, "    description    %s\n", a.Description)
		}
		fmt.Fprintf(w, "    client_id      %s\n    client_secret  %s\n    redirect URI   %s\n    scopes         %s\n    authorize link %s\n",
			a.ClientID, a.ClientSecret, a.RedirectURI, strings.Join(a.Scopes, " "), sandbox.AuthorizeURL(base, a, nil))
	}
	fmt.Fprintf(w, "\nDemo users (log in on the authorization page; only managers and owners can authorize):\n")
	for _, u := range srv.Users() {
		var accts []string
		for _, m := range u.Memberships {
			accts = append(accts, fmt.Sprintf("%s of %s (%s)", m.Role, m.Account.Name, m.Account.ID))
		}
		fmt.Fprintf(w, "  %-22s %-10s %s: %s\n", u.Email, u.Password, u.Name, strings.Join(accts, ", "))
	}
	fmt.Fprintf(w, "\nDemo medias:\n")
	for _, m := range srv.Medias() {
		fmt.Fprintf(w, "  %s  account %s  %s\n", m.HashedID, m.AccountID, m.Name)
	}
	fmt.Fprintln(w)
	switch {
	case cfg.WebhookURL == "":
		fmt.Fprintf(w, "Webhooks: off (add --webhook-url to receive media events)\n")
	default:
		mode := "one event per message, in order"
		if cfg.AtLeastOnce {
			mode = "at-least-once: batched, duplicated, out of order"
		}
		sig := "signed with the secret given"
		if !signed {
			sig = "UNSIGNED (no secret given)"
		}
		fmt.Fprintf(w, "Webhooks: %s, %s, %s\n", redact.URL(cfg.WebhookURL), sig, mode)
	}
	fmt.Fprintf(w, "Trigger a media life cycle: curl -X POST '%s/sandbox/lifecycle?account_id=%s&name=Demo'\n", base, srv.Users()[0].Memberships[0].Account.ID)
	fmt.Fprintf(w, "Overview page: %s/\nPress Ctrl-C to stop.\n", base)
}

func printSandboxJSON(w io.Writer, srv *sandbox.Server, base string, cfg sandbox.Config) error {
	type media struct {
		HashedID  string `json:"hashed_id"`
		AccountID string `json:"account_id"`
		Name      string `json:"name"`
	}
	out := struct {
		BaseURL    string         `json:"base_url"`
		AuthURL    string         `json:"auth_url"`
		TokenURL   string         `json:"token_url"`
		Apps       []sandbox.App  `json:"apps"`
		Users      []sandbox.User `json:"users"`
		Medias     []media        `json:"medias"`
		WebhookURL string         `json:"webhook_url,omitempty"`
	}{BaseURL: base, AuthURL: base, TokenURL: base + "/oauth/token", Apps: srv.Apps(), Users: srv.Users()}
	for _, m := range srv.Medias() {
		out.Medias = append(out.Medias, media{m.HashedID, m.AccountID, m.Name})
	}
	if cfg.WebhookURL != "" {
		out.WebhookURL = redact.URL(cfg.WebhookURL)
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("print summary: %w", err)
	}
	return nil
}
