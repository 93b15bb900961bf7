package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/sandbox"
)

const sandboxExamples = `  # run the sandbox on 127.0.0.1:8790 with the demo app, users and medias
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

func runSandbox(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "sandbox", "[flags]", sandboxExamples)
	addr := fs.String("addr", sandbox.DefaultAddr, "address to listen on (host:port); loopback unless --allow-remote")
	allowRemote := fs.Bool("allow-remote", false, "allow binding a non-loopback address (the sandbox hands out demo credentials and tokens to anyone who can reach it)")
	hookURL := fs.String("webhook-url", "", "POST URL that receives webhook deliveries for media changes (off when empty)")
	hookSecret := fs.String("webhook-secret", "", "secret key the deliveries are signed with; prefer --webhook-secret-env")
	hookSecretEnv := fs.String("webhook-secret-env", "", "name of an environment variable holding the webhook secret key")
	atLeastOnce := fs.Bool("at-least-once", false, "deliver like the spec warns: batch events, sometimes send a message twice, sometimes out of order")
	seed := fs.Uint64("seed", 0, "seed for --at-least-once randomness (0: random), to reproduce a run")
	tokenTTL := fs.Duration("token-ttl", sandbox.DefaultTokenTTL, "access token lifetime (expires_in)")
	codeTTL := fs.Duration("code-ttl", sandbox.DefaultCodeTTL, "how long an authorization code can be exchanged")
	appsFile := fs.String("apps", "", "JSON file of more applications to register: an array of {name, description, client_id, client_secret, redirect_uri, scopes}")
	redirect := fs.String("redirect-uri", "", "Redirect URI of the default app (default "+sandbox.DefaultApp().RedirectURI+")")
	scopes := fs.String("scopes", "", "comma-separated scopes of the default app (default "+strings.Join(sandbox.DefaultApp().Scopes, ",")+")")
	strict := fs.Bool("strict", false, "refuse token requests whose parameters are in the form body or HTTP Basic instead of the URL query")
	delay := fs.Duration("processing-delay", 2*time.Second, "time between created, processing and ready of an uploaded media")
	quiet := fs.Bool("quiet", false, "do not log requests and deliveries to stderr")
	jsonOut := fs.Bool("json", false, "print the startup summary as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *tokenTTL <= 0:
		return usageError("--token-ttl must be positive, got %s", *tokenTTL)
	case *codeTTL <= 0:
		return usageError("--code-ttl must be positive, got %s", *codeTTL)
	case *delay <= 0:
		return usageError("--processing-delay must be positive, got %s", *delay)
	case *hookSecret != "" && *hookSecretEnv != "":
		return usageError("give the webhook secret once: --webhook-secret or --webhook-secret-env, not both")
	case (*hookSecret != "" || *hookSecretEnv != "" || *atLeastOnce) && *hookURL == "":
		return usageError("--webhook-secret, --webhook-secret-env and --at-least-once need --webhook-url")
	}
	if *hookURL != "" {
		u, err := url.Parse(*hookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError("--webhook-url must be an absolute http or https URL")
		}
	}
	secret := []byte(*hookSecret)
	if *hookSecretEnv != "" {
		v := env.Getenv(*hookSecretEnv)
		if v == "" {
			return usageError("--webhook-secret-env %s: the environment variable is unset or empty", *hookSecretEnv)
		}
		secret = []byte(v)
	}
	if err := sandbox.CheckLoopback(*addr); err != nil {
		if !*allowRemote {
			return usageError("--addr %s is not a loopback address; add --allow-remote to serve the sandbox on the network", *addr)
		}
		fmt.Fprintf(env.Stderr, "warning: serving the sandbox on %s: anyone who can reach this machine can log in as the demo users and use its tokens\n", *addr)
	}
	def := sandbox.DefaultApp()
	if *redirect != "" {
		def.RedirectURI = *redirect
	}
	if *scopes != "" {
		def.Scopes = nil
		for _, s := range strings.Split(*scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				def.Scopes = append(def.Scopes, s)
			}
		}
	}
	apps := []sandbox.App{def}
	if *appsFile != "" {
		more, err := readSandboxApps(*appsFile)
		if err != nil {
			return err
		}
		apps = append(apps, more...)
	}

	var mu sync.Mutex
	logf := func(format string, a ...any) {
		if *quiet {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(env.Stderr, time.Now().Format("15:04:05.000")+" "+format+"\n", a...)
	}
	cfg := sandbox.Config{
		Apps: apps, TokenTTL: *tokenTTL, CodeTTL: *codeTTL,
		WebhookURL: *hookURL, WebhookSecret: secret, AtLeastOnce: *atLeastOnce, Seed: *seed,
		Strict: *strict, AllowRemote: *allowRemote, ProcessingDelay: *delay, Logf: logf,
	}
	srv, base, err := sandbox.Start(ctx, *addr, cfg)
	if err != nil {
		// A bad app or a busy port: the flags were fine, the input was not.
		return fmt.Errorf("start sandbox: %w", err)
	}
	defer srv.Close()
	mu.Lock()
	if *jsonOut {
		err = printSandboxJSON(env.Stdout, srv, base, cfg)
	} else {
		printSandboxSummary(env.Stdout, srv, base, cfg, len(secret) > 0)
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
	fmt.Fprintf(w, "  tokens     expire after %s; codes after %s\n\n", cfg.TokenTTL, cfg.CodeTTL)
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
		fmt.Fprintf(w, "Webhooks: %s, %s, %s\n", sandbox.RedactURL(cfg.WebhookURL), sig, mode)
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
		out.WebhookURL = sandbox.RedactURL(cfg.WebhookURL)
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("print summary: %w", err)
	}
	return nil
}
