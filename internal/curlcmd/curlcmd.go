// Package curlcmd writes HTTP requests as curl command lines for POSIX
// shells (sh, dash, bash, zsh). It is the one shell quoting and the one curl
// builder of Hookscope: the window's and the OAuth tab's "Copy as curl",
// the curl export and the OAuth transcripts all write through it.
package curlcmd

import (
	"fmt"
	"strings"
)

// Quote returns s as one POSIX shell word: in single quotes, where every
// byte stands for itself; a single quote inside ends the quoting, is
// escaped with a backslash, and the quoting starts again. A shell word
// cannot hold a NUL byte; Command sends such bodies another way.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DefaultVar returns a shell word that expands to the environment variable
// name when it is set and not empty, else to def: "${name:-def}". Bytes of
// def that the shell would expand inside double quotes, and the closing
// brace, are percent-encoded, so def must be a URL.
func DefaultVar(name, def string) string {
	var b strings.Builder
	b.WriteString(`"${` + name + `:-`)
	for i := 0; i < len(def); i++ {
		switch c := def[i]; c {
		case '"', '$', '`', '\\', '}':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(`}"`)
	return b.String()
}

// Header is one request header.
type Header struct {
	Name  string
	Value string
}

// Command is one HTTP request to be written as a curl command.
type Command struct {
	// Options are written right after "curl", as they are (say "-sS").
	Options []string
	// Method, when set, is written as -X Method.
	Method string
	// URL is the request URL; it is quoted when written. URLWord, when
	// set, is written instead, as it is: a shell word the caller built
	// (for example DefaultVar followed by a quoted query).
	URL     string
	URLWord string
	// Headers are sent in this order. An empty value is written in curl's
	// form for it (-H 'Name;'), since -H 'Name:' removes a header.
	Headers []Header
	// Remove names headers curl adds on its own that must not be sent.
	Remove []string
	// Body is sent byte-exact when SendBody is set (an empty Body then
	// goes as Content-Length: 0).
	Body     []byte
	SendBody bool
	// After are options written last, each on its own line, as they are.
	After []string
}

// maxArgBody is the largest body written as a command-line argument of
// curl. Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN);
// larger bodies, any with a NUL byte, and any starting with '@' (which
// --data-binary takes for a file name to read) are piped in from printf, a
// shell built-in, which has no such limit.
const maxArgBody = 64 << 10

// String renders the command: one line per header and body, joined by
// backslash-newline, so it can be pasted into a shell or a script.
func (c Command) String() string {
	var b strings.Builder
	piped := c.SendBody && (len(c.Body) > maxArgBody || strings.IndexByte(string(c.Body), 0) >= 0 || strings.HasPrefix(string(c.Body), "@"))
	if piped {
		b.WriteString("printf " + printfFormat(c.Body) + " |\n  ")
	}
	b.WriteString("curl")
	for _, o := range c.Options {
		b.WriteString(" " + o)
	}
	if c.Method != "" {
		b.WriteString(" -X " + c.Method)
	}
	if c.URLWord != "" {
		b.WriteString(" " + c.URLWord)
	} else {
		b.WriteString(" " + Quote(c.URL))
	}
	const next = " \\\n  "
	for _, h := range c.Headers {
		if h.Value == "" {
			b.WriteString(next + "-H " + Quote(h.Name+";"))
			continue
		}
		b.WriteString(next + "-H " + Quote(h.Name+": "+h.Value))
	}
	for _, name := range c.Remove {
		b.WriteString(next + "-H " + Quote(name+":"))
	}
	switch {
	case piped:
		b.WriteString(next + "--data-binary @-")
	case c.SendBody:
		b.WriteString(next + "--data-binary " + Quote(string(c.Body)))
	}
	for _, o := range c.After {
		b.WriteString(next + o)
	}
	return b.String()
}

// printfFormat returns body as a quoted printf format that prints exactly
// body: backslash and percent are doubled, NUL is written as \000 and a
// leading '-' as \055 (so printf does not take it for an option).
func printfFormat(body []byte) string {
	var b strings.Builder
	b.Grow(len(body) + len(body)/8 + 2)
	b.WriteByte('\'')
	for i, c := range body {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '%':
			b.WriteString("%%")
		case c == 0:
			b.WriteString(`\000`)
		case c == '-' && i == 0:
			b.WriteString(`\055`)
		case c == '\'':
			b.WriteString(`'\''`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
