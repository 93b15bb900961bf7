package export

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookscope/hookscope/inspector"
)

// shellQuote quotes s for a POSIX shell: single quotes, with each single
// quote closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeCurl writes replay.sh and one body file per delivery. Bodies go
// through --data-binary @file because it is the one way curl sends bytes
// exactly: a heredoc adds a newline and a shell string cannot hold NUL.
func writeCurl(opts Options, recs []*inspector.Record, sum *Summary) error {
	target := opts.Target
	if target == "" {
		target = DefaultTarget
	}
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
# %d webhook deliveries exported by Hookscope, replayed with curl.
# Usage: ./replay.sh [URL]    (default %s)
# Each delivery is sent with its original headers and its exact body bytes.
`, len(recs), RedactURL(target))
	if !opts.Reveal {
		b.WriteString("# Credential headers were redacted at export; signatures are kept.\n")
	}
	fmt.Fprintf(&b, `set -eu
URL="${1:-%s}"
DIR="$(cd "$(dirname "$0")" && pwd)"
`, strings.ReplaceAll(RedactURL(target), `"`, `%22`))
	for _, r := range recs {
		d := r.Delivery
		ext := "bin"
		if json.Valid(d.Body) {
			ext = "json"
		}
		name := fmt.Sprintf("bodies/delivery-%06d.%s", d.ID, ext)
		if err := writeInto(sum, opts.Out, name, d.Body, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&b, "\n# delivery %d, received %s", d.ID, d.ReceivedAt.UTC().Format("2006-01-02 15:04:05Z"))
		if r.Analysis != nil && len(r.Analysis.Events) > 0 {
			types := make([]string, len(r.Analysis.Events))
			for i, e := range r.Analysis.Events {
				types[i] = e.Type
			}
			fmt.Fprintf(&b, ": %s", strings.Join(types, ", "))
		}
		if d.Truncated {
			fmt.Fprintf(&b, " (TRUNCATED at the body cap: the body file holds only the first %d bytes)", len(d.Body))
		}
		b.WriteString("\ncurl -sS -X POST \"$URL\"")
		hop := ConnectionTokens(d.Headers)
		has := map[string]bool{}
		for _, h := range headersFor(d, opts.Reveal) {
			low := strings.ToLower(h.Name)
			has[low] = true
			// curl writes Host from the URL and Content-Length from the body.
			if low == "host" || low == "content-length" || IsHopByHop(h.Name) || hop[low] {
				continue
			}
			fmt.Fprintf(&b, " \\\n  -H %s", shellQuote(h.Name+": "+h.Value))
		}
		// Remove the headers curl adds on its own that the delivery did not carry.
		for _, own := range []string{"User-Agent", "Accept", "Content-Type"} {
			if !has[strings.ToLower(own)] {
				fmt.Fprintf(&b, " \\\n  -H %s", shellQuote(own+":"))
			}
		}
		fmt.Fprintf(&b, " \\\n  -H 'Expect:' \\\n  --data-binary @\"$DIR/%s\" \\\n  -w '\\n-> %%{http_code} in %%{time_total}s\\n'\n", name)
	}
	return writeInto(sum, opts.Out, "replay.sh", []byte(b.String()), 0o755)
}
