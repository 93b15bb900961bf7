package forward

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"
	"unicode"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/redact"
	"github.com/hookscope/hookscope/rules"
)

// Route sends deliveries to one app URL: every delivery (a catch-all),
// the messages one of whose events has a type matching Glob, or the
// deliveries an expression chooses (Where).
type Route struct {
	// Glob matches event types with path.Match rules ("media.*",
	// "viewing_session.*.converted").
	Glob string
	// Where chooses deliveries by a condition (`where COND => URL`): an
	// expression, or a glob, compiled for rules.Arrival, the view the
	// receiver has of a delivery before its analysis (see Takes).
	Where *rules.Expr
	// Neither Glob nor Where makes a catch-all.
	Target *url.URL
	// name is the spec with the target's credentials redacted: what is
	// shown and stored.
	name string
}

// Name is the route as the user wrote it, credentials redacted; the store
// keys the route's queue by it.
func (r Route) Name() string { return r.name }

// CatchAll reports a route without a glob or a condition: it takes every
// delivery, malformed ones included (unless skipped).
func (r Route) CatchAll() bool { return r.Glob == "" && r.Where == nil }

// TargetName is the target URL with its credentials redacted.
func (r Route) TargetName() string { return redact.URL(r.Target.String()) }

// Host is the target's host:port as written, for messages ("nothing is
// listening on localhost:3000").
func (r Route) Host() string {
	if r.Target.Port() != "" {
		return r.Target.Host
	}
	if r.Target.Scheme == "https" {
		return net.JoinHostPort(r.Target.Hostname(), "443")
	}
	return net.JoinHostPort(r.Target.Hostname(), "80")
}

// Loopback reports a target on this machine; any other target sees the
// deliveries' bodies leave it.
func (r Route) Loopback() bool {
	h := strings.ToLower(r.Target.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Matches reports whether a message with these event types goes to a
// glob route or a catch-all (a Where route asks Takes).
func (r Route) Matches(types []string) bool {
	if r.Glob == "" {
		return true
	}
	for _, t := range types {
		if ok, _ := path.Match(r.Glob, t); ok {
			return true
		}
	}
	return false
}

// Takes reports whether d goes to a Where route: its condition on what
// is known of d on arrival, the signature judged by verify (nil: by no
// secret). Routing does not wait for analysis (the ack queue sends what
// is stored, in order, and pass-through routes before the answer), so a
// route sees the same of a delivery in both modes. A condition that fails
// on d (a payload key it lacks) does not take it.
func (r Route) Takes(d *inspector.Delivery, verify func(*inspector.Delivery) inspector.SignatureResult) bool {
	if r.Where == nil {
		return false
	}
	ok, err := r.Where.Eval(rules.Input{Record: &inspector.Record{Delivery: d}, Verify: verify})
	return ok && err == nil
}

// routeExample is how a route is written, for error messages.
const routeExample = "expected a URL such as http://localhost:3000/webhooks (or localhost:3000/webhooks), GLOB=URL such as 'media.*=http://localhost:3000/media', or 'where CONDITION => URL' such as 'where delivery.path == \"/media\" => localhost:3000/media'"

// whereWord starts a route chosen by a condition.
const whereWord = "where"

// isWhere reports a where route's first word (before its condition).
func isWhere(word string) bool { return strings.EqualFold(word, whereWord) }

// firstWord returns s's first run of non-space characters and where it
// ends.
func firstWord(s string) (word string, end int) {
	end = strings.IndexFunc(s, unicode.IsSpace)
	if end < 0 {
		end = len(s)
	}
	return s[:end], end
}

// SplitRoutes splits a list of routes separated by white space (the
// window's Forward to field) into specs: a URL or GLOB=URL is one word; a
// where route runs from "where" to the URL after its arrow, spaces and
// all.
func SplitRoutes(field string) []string {
	var out []string
	rest := field
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			return out
		}
		word, end := firstWord(rest)
		if isWhere(word) {
			end = len(rest)
			if _, tail, found := rules.CutArrow(rest[len(word):]); found {
				target := strings.TrimLeftFunc(tail, unicode.IsSpace)
				_, n := firstWord(target)
				end = len(rest) - len(target) + n
			}
		}
		out = append(out, rest[:end])
		rest = rest[end:]
	}
}

// ParseRoute reads one route: a URL, GLOB=URL, or `where COND => URL`
// (COND an expression, or a glob, compiled for rules.Arrival). A URL
// without a scheme is http (localhost:3000/webhooks, as Stripe's CLI
// takes it). A condition that does not compile is an error wrapping
// rules.CompileErrors, whose columns count in the whole spec.
func ParseRoute(spec string) (Route, error) {
	return parseRoute(spec, nil)
}

// parseRoute is ParseRoute with the compiler of conditions (nil: made when
// needed).
func parseRoute(spec string, c *rules.Compiler) (Route, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Route{}, fmt.Errorf("empty forward route: %s", routeExample)
	}
	if word, _ := firstWord(spec); isWhere(word) {
		return parseWhere(spec, len(word), c)
	}
	glob, raw := "", spec
	// GLOB=URL, unless the '=' is the URL's own (a query): a glob holds no
	// '/' or ':' (event types look like media.updated), and only a URL
	// starts with a scheme.
	lower := strings.ToLower(spec)
	scheme := strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
	if g, u, ok := strings.Cut(spec, "="); ok && !scheme && (!strings.ContainsAny(g, "/:") || strings.Contains(u, "://")) {
		glob, raw = strings.TrimSpace(g), strings.TrimSpace(u)
		if glob == "" {
			return Route{}, fmt.Errorf("forward route %q: the event-type glob before '=' is empty; %s", redact.URL(spec), routeExample)
		}
		if strings.ContainsAny(glob, " \t/") {
			return Route{}, fmt.Errorf("forward route: glob %q cannot contain spaces or '/': event types look like media.updated", glob)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return Route{}, fmt.Errorf("forward route: glob %q is malformed (%v): use * and ? as in media.* or viewing_session.*", glob, err)
		}
	}
	u, err := ParseTarget(raw)
	if err != nil {
		return Route{}, fmt.Errorf("forward route: %w; %s", err, routeExample)
	}
	if u.Fragment != "" {
		u.Fragment = ""
	}
	r := Route{Glob: glob, Target: u}
	r.name = r.TargetName()
	if glob != "" {
		r.name = glob + "=" + r.name
	}
	return r, nil
}

// parseWhere reads `where COND => URL`; the condition starts at byte
// start of spec.
func parseWhere(spec string, start int, c *rules.Compiler) (Route, error) {
	cond, raw, found := rules.CutArrow(spec[start:])
	if !found {
		return Route{}, fmt.Errorf("forward route %q: a where route needs '=> URL' after its condition: %s", spec, routeExample)
	}
	if c == nil {
		var err error
		if c, err = rules.NewCompiler(rules.Arrival); err != nil {
			return Route{}, err
		}
	}
	where, err := c.Condition(cond)
	if err != nil {
		var ce rules.CompileErrors
		if errors.As(err, &ce) {
			err = ce.Within(spec, spec[:start])
		}
		return Route{}, fmt.Errorf("forward route: its condition: %w", err)
	}
	u, err := ParseTarget(raw)
	if err != nil {
		return Route{}, fmt.Errorf("forward route: %w; %s", err, routeExample)
	}
	u.Fragment = ""
	r := Route{Where: where, Target: u}
	r.name = fmt.Sprintf("%s %s %s %s", whereWord, strings.TrimSpace(cond), rules.Arrow, r.TargetName())
	return r, nil
}

// ParseTarget reads an app's URL: http or https with a host; without a
// scheme it is http ("localhost:3000/webhooks").
func ParseTarget(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("no target URL given")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("target URL %q: %w", redact.URL(raw), err)
	}
	if u.Scheme = strings.ToLower(u.Scheme); u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target URL %q: the scheme must be http or https", redact.URL(raw))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("target URL %q has no host", redact.URL(raw))
	}
	if h := u.Hostname(); strings.ContainsAny(h, "*?[]{}\\!$&'()+,;=") {
		return nil, fmt.Errorf("target URL %q: %q is not a host name", redact.URL(raw), h)
	}
	return u, nil
}

// PointsAt reports whether r's target is the receiver listening on addr
// (host:port as bound) or reached through the public hostname publicHost
// (the tunnel's, "" for none): its own loopback names (localhost,
// 127.0.0.1, [::1]) or its bound address on the same port, or any of
// this machine's addresses when it listens on all of them. Forwarding
// there would send each delivery back to the receiver without end.
func (r Route) PointsAt(addr, publicHost string) bool {
	host := strings.ToLower(strings.TrimSuffix(r.Target.Hostname(), "."))
	if publicHost != "" && strings.EqualFold(host, strings.TrimSuffix(publicHost, ".")) {
		return true
	}
	bindHost, bindPort, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, port, _ := net.SplitHostPort(r.Host())
	if port != bindPort {
		return false
	}
	bound := net.ParseIP(bindHost)
	wildcard := bindHost == "" || (bound != nil && bound.IsUnspecified())
	// What a loopback name or address reaches: a receiver bound to
	// loopback or to every address.
	local := wildcard || bindHost == "localhost" || (bound != nil && bound.IsLoopback())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return local
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return false
	case ip.IsLoopback(), ip.IsUnspecified():
		return local
	case bound != nil && bound.Equal(ip):
		return true
	case wildcard:
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// ParseRoutes reads every route, in order (the first matching one answers
// the service in pass-through). Two routes with the same name get "#2",
// "#3" appended, so each keeps its own queue.
func ParseRoutes(specs []string) ([]Route, error) {
	var out []Route
	seen := map[string]int{}
	var c *rules.Compiler
	for _, s := range specs {
		if word, _ := firstWord(strings.TrimSpace(s)); isWhere(word) && c == nil {
			var err error
			if c, err = rules.NewCompiler(rules.Arrival); err != nil {
				return nil, err
			}
		}
		r, err := parseRoute(s, c)
		if err != nil {
			return nil, err
		}
		seen[r.name]++
		if n := seen[r.name]; n > 1 {
			r.name = fmt.Sprintf("%s#%d", r.name, n)
		}
		out = append(out, r)
	}
	return out, nil
}

// ParseHeader reads an added header, "Name: value". Headers that frame
// the message or belong to one connection are Hookscope's to write.
func ParseHeader(s string) (inspector.Header, error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return inspector.Header{}, fmt.Errorf("forward header %q: expected 'Name: value', such as 'X-Debug: 1'", s)
	}
	h := inspector.Header{Name: name, Value: strings.TrimSpace(value)}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return h, fmt.Errorf("forward header name %q contains %q, which HTTP does not allow in a name", name, c)
		}
	}
	if strings.ContainsAny(h.Value, "\r\n\x00") {
		return h, fmt.Errorf("forward header %s: the value contains a line break or NUL", name)
	}
	switch {
	case strings.EqualFold(name, "Host"), strings.EqualFold(name, "Content-Length"), export.IsHopByHop(name):
		return h, fmt.Errorf("forward header %s: Hookscope sets it for each target and connection; it cannot be added", name)
	}
	return h, nil
}

// ParseHeaders reads every added header.
func ParseHeaders(specs []string) ([]inspector.Header, error) {
	var out []inspector.Header
	var errs []error
	for _, s := range specs {
		h, err := ParseHeader(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, h)
	}
	return out, errors.Join(errs...)
}
