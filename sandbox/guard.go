package sandbox

import (
	"crypto/subtle"
	"net"
	"net/http"
	"slices"
	"strings"
)

// The sandbox hands out demo credentials, tokens and an overview page with
// client secrets, and its control endpoints act without a token. Other
// web pages the developer opens must not reach any of that:
//
//   - a page on another site must not make the browser act on the sandbox
//     (a cross-site POST to /sandbox/lifecycle, the login or consent
//     forms): Go's http.CrossOriginProtection refuses unsafe requests that
//     a browser marks cross-origin (Sec-Fetch-Site, else Origin against
//     Host), while programs that send neither (curl, Hookscope) pass;
//   - a page must not read the sandbox through a name of its own that it
//     points at 127.0.0.1 (DNS rebinding): only loopback names and
//     addresses, the host the sandbox was started on and Config.Hosts are
//     answered;
//   - every form carries an anti-forgery token: the login form one bound
//     to a cookie of this browser, the others the login session's.

// loginCookie holds the login form's anti-forgery token before there is a
// session (double submit: a page elsewhere can neither read nor set it).
const loginCookie = "sandbox_login"

// guard wraps h with the Host check and the cross-origin refusal.
func (s *Server) guard(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(s.refuseCrossOrigin))
	inner := cop.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowedHost(r.Host) {
			s.refuseHost(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// allowedHost reports whether a request's Host names this sandbox: a
// loopback name or address, the host it was started on or one of
// Config.Hosts, or (when remote access is allowed) any IP address, which
// no page can rebind. An empty Host (HTTP/1.0) is no browser's.
func (s *Server) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	switch {
	case host == "", host == "localhost", strings.HasSuffix(host, ".localhost"):
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || s.cfg.AllowRemote || slices.Contains(s.hosts, host)
	}
	return slices.Contains(s.hosts, host)
}

// refuseHost answers a request for a host name the sandbox does not go by.
func (s *Server) refuseHost(w http.ResponseWriter, r *http.Request) {
	s.cfg.Logf("refused %s %s: Host %q is not a name of this sandbox (DNS rebinding defence)", r.Method, r.URL.Path, r.Host)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_, _ = w.Write([]byte("This sandbox answers only to localhost, 127.0.0.1 and [::1], and to the host names it was started with (hookscope sandbox --host NAME). " +
		"The request named another host: a web page may have pointed a name of its own at this machine to read the sandbox's demo credentials.\n"))
}

// refuseCrossOrigin answers an unsafe request a browser sent from another
// site's page.
func (s *Server) refuseCrossOrigin(w http.ResponseWriter, r *http.Request) {
	s.cfg.Logf("refused %s %s: a cross-site request from a web page (Origin %q)", r.Method, r.URL.Path, r.Header.Get("Origin"))
	const why = "A web page on another site asked the browser to send this request; the sandbox takes form posts only from its own pages, and control requests only from programs such as curl or Hookscope."
	if r.URL.Path == "/oauth/authorize" {
		s.renderError(w, &pageError{status: http.StatusForbidden, title: "Cross-site request refused", message: why,
			hints: []string{"Open the authorization link itself in the browser, and use the sandbox's own pages."}})
		return
	}
	apiError(w, http.StatusForbidden, "cross_site_request", why)
}

// loginToken returns the login form's anti-forgery token for this browser,
// setting its cookie when the browser has none yet.
func (s *Server) loginToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	v := randomHex(16)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return v
}

// loginTokenOK reports whether a posted login form carries this browser's
// token.
func loginTokenOK(r *http.Request, posted string) bool {
	c, err := r.Cookie(loginCookie)
	return err == nil && c.Value != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(posted)) == 1
}
