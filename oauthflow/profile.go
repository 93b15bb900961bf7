// Package oauthflow walks the video service's OAuth 2.0 authorization code
// flow one step at a time (authorize URL, callback, token exchange, refresh,
// API call) and keeps a byte-exact transcript of every step, so a developer
// can see exactly what was sent, what came back and why a step failed.
//
// The token calls are written with net/http on purpose: the service wants
// its token parameters in the URL query, and golang.org/x/oauth2 always
// sends them in the body (and retries, which burns single-use codes).
package oauthflow

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/hookscope/hookscope/internal/bindaddr"
)

// Profile is one registered OAuth application as the developer sees it in
// the service's settings, plus where the service lives.
type Profile struct {
	// Name identifies the profile in the store.
	Name string `json:"name"`
	// BaseURL is the API base ({base_url}); the token endpoint and the Data
	// API live under it.
	BaseURL string `json:"base_url"`
	// AuthURL is the web application ({auth_url}) serving /oauth/authorize.
	// Empty means BaseURL (the spec lists the path under both).
	AuthURL string `json:"auth_url"`
	// ClientID and ClientSecret are the application's credentials.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// RedirectURI must equal the one registered for the application,
	// byte for byte.
	RedirectURI string `json:"redirect_uri"`
	// Scopes are the permissions the developer expects to be granted;
	// the service grants what the application was registered with.
	Scopes []string `json:"scopes,omitempty"`
}

// authBase returns the address serving /oauth/authorize.
func (p Profile) authBase() string {
	if p.AuthURL != "" {
		return strings.TrimRight(p.AuthURL, "/")
	}
	return strings.TrimRight(p.BaseURL, "/")
}

// Validate reports the first missing or malformed field in plain words.
func (p Profile) Validate() error {
	if p.BaseURL == "" {
		return errors.New("profile: base URL is empty (the service's API address, e.g. https://api.example.com)")
	}
	for _, f := range []struct{ name, v string }{{"base URL", p.BaseURL}, {"auth URL", p.AuthURL}} {
		if f.v == "" {
			continue
		}
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("profile: %s %q is not an http(s) address", f.name, f.v)
		}
	}
	if p.ClientID == "" {
		return errors.New("profile: client ID is empty (copy it from the application's page in the service's settings)")
	}
	if p.RedirectURI == "" {
		return errors.New("profile: redirect URI is empty (use exactly the Redirect URI registered for the application)")
	}
	u, err := url.Parse(p.RedirectURI)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("profile: redirect URI %q is not an absolute URL", p.RedirectURI)
	}
	if u.Fragment != "" {
		return fmt.Errorf("profile: redirect URI %q has a #fragment; the service appends query parameters, so it cannot carry one", p.RedirectURI)
	}
	return nil
}

// loopbackHosts are the hosts a local listener can serve.
func isLoopbackHost(h string) bool {
	switch strings.ToLower(h) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// LocalRedirect reports whether the redirect URI can be served by a
// listener on this machine (http on localhost, 127.0.0.1 or [::1]) and, if
// so, the host, port and path to bind.
func (p Profile) LocalRedirect() (host string, port int, path string, ok bool) {
	u, err := url.Parse(p.RedirectURI)
	if err != nil || u.Scheme != "http" || !isLoopbackHost(u.Hostname()) {
		return "", 0, "", false
	}
	port = 80
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, "", false
		}
		port = n
	}
	path = u.Path
	if path == "" {
		path = "/"
	}
	return u.Hostname(), port, path, true
}

// Warning is one pre-flight finding.
type Warning struct {
	// Code is stable for tests and the UI (e.g. "port-busy").
	Code string `json:"code"`
	// Message says it in plain words, with the likely fix.
	Message string `json:"message"`
	// Blocking is true when the flow cannot succeed as configured.
	Blocking bool `json:"blocking"`
}

// Preflight checks a profile before the browser opens and explains the
// mistakes developers make most: a busy callback port, and redirect URIs
// that differ from the registered one in small ways the service does not
// forgive (it compares exactly).
func Preflight(p Profile) []Warning {
	var out []Warning
	if err := p.Validate(); err != nil {
		return []Warning{{Code: "invalid-profile", Message: err.Error(), Blocking: true}}
	}
	if p.ClientSecret == "" {
		out = append(out, Warning{Code: "no-secret", Message: "no client secret: the authorize step works, but the token exchange will be refused; set it from the application's page"})
	}
	u, _ := url.Parse(p.RedirectURI)
	host, port, path, local := p.LocalRedirect()
	switch {
	case local:
		out = append(out, Warning{Code: "exact-match", Message: fmt.Sprintf(
			"the service compares redirect_uri exactly with the registered Redirect URI: %q is not the same as the variants with localhost vs 127.0.0.1 vs [::1], another port, or a trailing slash added or removed; copy it from the application's page", p.RedirectURI)})
		if strings.EqualFold(host, "localhost") {
			out = append(out, Warning{Code: "localhost", Message: "redirect URI uses localhost: browsers may resolve it to 127.0.0.1 or [::1]; Hookscope listens on both, but the registered value must also say localhost"})
		}
		if path != "/" && strings.HasSuffix(path, "/") {
			out = append(out, Warning{Code: "trailing-slash", Message: fmt.Sprintf("redirect URI path %q ends with a slash: make sure the registered Redirect URI ends with one too", path)})
		}
		if err := probePort(host, port); err != nil {
			out = append(out, Warning{Code: "port-busy", Message: err.Error(), Blocking: true})
		}
	case u.Scheme == "https" && isLoopbackHost(u.Hostname()):
		out = append(out, Warning{Code: "https-loopback", Message: "redirect URI is https on this machine: Hookscope's callback listener speaks plain http; register an http://127.0.0.1:<port>/callback URI, or paste the redirected URL from the browser's address bar"})
	default:
		out = append(out, Warning{Code: "remote-redirect", Message: fmt.Sprintf("redirect URI %s is not on this machine: after approving, copy the full URL from the browser's address bar and paste it (or let the webhook receiver's tunnel serve /oauth/callback)", p.RedirectURI)})
	}
	return out
}

// probePort binds and releases the callback address to find out early
// whether something else holds it.
func probePort(host string, port int) error {
	ln, err := listenLoopback(host, port)
	if err != nil {
		return err
	}
	for _, l := range ln {
		l.Close()
	}
	return nil
}

// PortBusyError says the callback port is held by another program. It is
// deliberately not a state or protocol error: nothing reached the service.
type PortBusyError struct {
	Host string
	Port int
	Err  error
}

// Error names the port and the fix.
func (e *PortBusyError) Error() string {
	return fmt.Sprintf("callback port %d on %s is already in use by another program, so Hookscope cannot receive the redirect there; stop that program (find it with `lsof -i :%d` or `ss -ltnp 'sport = :%d'`) or register a redirect URI with a free port and use it here",
		e.Port, e.Host, e.Port, e.Port)
}

// Unwrap exposes the bind error.
func (e *PortBusyError) Unwrap() error { return e.Err }

// listenLoopback binds exactly the redirect URI's host and port. localhost
// binds 127.0.0.1 and, when available, [::1], because the browser may pick
// either.
func listenLoopback(host string, port int) ([]net.Listener, error) {
	addrs := []string{net.JoinHostPort(host, strconv.Itoa(port))}
	optional := map[string]bool{}
	if strings.EqualFold(host, "localhost") {
		v6 := net.JoinHostPort("::1", strconv.Itoa(port))
		addrs = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), v6}
		optional[v6] = true
	}
	var out []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			if optional[a] && !bindaddr.InUse(err) {
				continue // no IPv6 on this machine: 127.0.0.1 is enough
			}
			for _, o := range out {
				o.Close()
			}
			if bindaddr.InUse(err) {
				return nil, &PortBusyError{Host: host, Port: port, Err: err}
			}
			return nil, fmt.Errorf("listen for the callback on %s: %w", a, err)
		}
		out = append(out, l)
	}
	return out, nil
}
