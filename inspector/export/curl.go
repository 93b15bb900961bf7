package export

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/curlcmd"
	"github.com/hookscope/hookscope/internal/redact"
)

// URLVar is the environment variable that, when set, replaces the target
// of a delivery's curl command (the export script sets it from its first
// argument).
const URLVar = "HOOKSCOPE_URL"

// CurlOptions say how CurlCommand writes a delivery.
type CurlOptions struct {
	// Target is the URL the command posts to unless URLVar is set (credentials
	// in it are redacted); the delivery's query string is added to either.
	Target string
	// Reveal keeps credential headers and query parameters as they are.
	Reveal bool
}

// CurlCommand is a delivery as a curl command: the window's "Copy as curl"
// copies it, and the curl export's script is a list of them, so both send
// the same request. It sends the stored body byte-exact (inline, or piped
// from printf when it is large or holds NUL bytes), the delivery's method,
// query string and headers in their order (credentials redacted unless
// o.Reveal); not Host and Content-Length, which curl writes, nor hop-by-hop
// headers. Headers curl would add on its own (Accept, a default User-Agent
// and Content-Type, Expect) are removed.
func CurlCommand(d *inspector.Delivery, o CurlOptions) string {
	target := o.Target
	if target == "" {
		target = DefaultTarget
	}
	target = redact.URL(target)
	word := curlcmd.DefaultVar(URLVar, target)
	if q := QueryFor(d, o.Reveal); q != "" {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		word += curlcmd.Quote(sep + q)
	}
	method := d.Method
	if method == "" {
		method = http.MethodPost
	}
	c := curlcmd.Command{
		Options:  []string{"-sS"},
		Method:   method,
		URLWord:  word,
		Body:     d.Body,
		SendBody: len(d.Body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch,
		After:    []string{`-w '\n-> %{http_code} in %{time_total}s\n'`},
	}
	hop := ConnectionTokens(d.Headers)
	has := map[string]bool{}
	for _, h := range HeadersFor(d, o.Reveal) {
		low := strings.ToLower(h.Name)
		has[low] = true
		if low == "host" || low == "content-length" || low == "expect" || IsHopByHop(h.Name) || hop[low] {
			continue
		}
		c.Headers = append(c.Headers, curlcmd.Header{Name: h.Name, Value: h.Value})
	}
	for _, own := range []string{"User-Agent", "Accept", "Content-Type"} {
		if !has[strings.ToLower(own)] {
			c.Remove = append(c.Remove, own)
		}
	}
	c.Remove = append(c.Remove, "Expect")
	return c.String()
}

// Redacts reports whether exporting d without revealing credentials
// changes any of its headers or its query string.
func Redacts(d *inspector.Delivery) bool {
	for _, h := range d.Headers {
		if redact.Header(h.Name, h.Value) != h.Value {
			return true
		}
	}
	return redact.Query(d.Query) != d.Query
}

// writeCurl writes replay.sh: one CurlCommand per delivery, each carrying
// its body, with the script's first argument as the target.
func writeCurl(opts Options, recs []*inspector.Record, sum *Summary) error {
	target := opts.Target
	if target == "" {
		target = DefaultTarget
	}
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
# %d webhook deliveries exported by Hookscope, replayed with curl.
# Usage: ./replay.sh [URL]    (default %s; or set %s)
# Each delivery is sent with its method, query string, original headers and
# its exact body bytes, to URL with the delivery's query string added.
`, len(recs), redact.URL(target), URLVar)
	if !opts.Reveal {
		b.WriteString("# Credential headers and query parameters were redacted at export; signatures are kept.\n")
	}
	fmt.Fprintf(&b, "set -eu\nif [ $# -gt 0 ]; then %s=$1; fi\n", URLVar)
	for _, r := range recs {
		d := r.Delivery
		fmt.Fprintf(&b, "\n# delivery %d, received %s", d.ID, d.ReceivedAt.UTC().Format("2006-01-02 15:04:05Z"))
		if r.Analysis != nil && len(r.Analysis.Events) > 0 {
			types := make([]string, len(r.Analysis.Events))
			for i, e := range r.Analysis.Events {
				types[i] = e.Type
			}
			fmt.Fprintf(&b, ": %s", oneLine(strings.Join(types, ", ")))
		}
		if d.Truncated {
			fmt.Fprintf(&b, " (TRUNCATED at the body cap: only the first %d bytes are sent)", len(d.Body))
		}
		b.WriteString("\n" + CurlCommand(d, CurlOptions{Target: target, Reveal: opts.Reveal}) + "\n")
	}
	return writeInto(sum, opts.Out, curlScript, []byte(b.String()), scriptMode)
}

// oneLine keeps text from the body (event types) on its comment line: a
// line break there would make the rest a command of the script.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// curlScript is the file of a curl export folder.
const curlScript = "replay.sh"

// receivedRE finds the arrival time in a command's comment ("# delivery
// 12, received 2026-03-02 09:30:01Z: …").
var receivedRE = regexp.MustCompile(`received (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z)`)

// readCurl reads a curl export's replay.sh back: each command as the
// request curl would send to the script's default URL — Host first, the
// headers in their order, Content-Length last (curl writes both), the
// body byte for byte — with the arrival time from its comment. What the
// export left out stays out: the original Host and path (the target's are
// taken), hop-by-hop headers, revealed credentials.
func readCurl(path string) ([]*inspector.Delivery, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	cmds, err := curlcmd.ParseScript(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	var out []*inspector.Delivery
	for i, c := range cmds {
		u, err := url.Parse(c.URL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%s: command %d: the URL %q is not an absolute URL", filepath.Base(path), i+1, c.URL)
		}
		method := c.Method
		if method == "" {
			method = http.MethodGet
			if c.SendBody {
				method = http.MethodPost
			}
		}
		hs := []inspector.Header{{Name: "Host", Value: u.Host}}
		for _, h := range c.Headers {
			hs = append(hs, inspector.Header{Name: h.Name, Value: h.Value})
		}
		if c.SendBody {
			hs = append(hs, inspector.Header{Name: "Content-Length", Value: strconv.Itoa(len(c.Body))})
		}
		p := u.Path
		if p == "" {
			p = "/"
		}
		d := &inspector.Delivery{Method: method, Path: p, Query: u.RawQuery, Headers: hs, Body: c.Body,
			BodyLength: int64(len(c.Body)), RemoteAddr: "import", Status: 200,
			Truncated: strings.Contains(c.Comment, "(TRUNCATED")}
		if m := receivedRE.FindStringSubmatch(c.Comment); m != nil {
			d.ReceivedAt, _ = time.Parse("2006-01-02 15:04:05Z", m[1])
		}
		out = append(out, d)
	}
	return out, nil
}
