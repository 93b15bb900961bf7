package rawhttp

import (
	"fmt"
	"net/http"
	"strings"
)

// Diagnose says in plain words why net/http refuses a request with this
// head, for the refusals whose answer gives no reason ("400 Bad Request").
// It names header fields and positions, never a header's value (a value may
// be a credential), except Content-Length and Transfer-Encoding, whose
// values are the reason. complete says whether head is a whole header
// block. It returns "" when it finds nothing wrong (in a head that is not
// complete, that may be all that was wrong).
func Diagnose(head []byte, complete bool) string {
	line, fields := Parse(head)
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	switch {
	case line == "" && complete:
		return "the request line is empty"
	case !ok1 || !ok2:
		if !complete && !strings.Contains(string(head), "\n") {
			return "the request line did not end"
		}
		return "the request line is not METHOD TARGET HTTP/x.y"
	case !isToken(method):
		return "the method is not a token"
	case target == "":
		return "the request target is empty"
	}
	major, _, ok := http.ParseHTTPVersion(proto)
	if !ok || major != 1 {
		return fmt.Sprintf("the protocol %q is not HTTP/1.x", truncate(proto, 16))
	}
	lines := strings.Split(string(head), "\n")
	for i, l := range lines[1:] {
		n := i + 2 // the line's number in the head
		l = strings.TrimSuffix(l, "\r")
		if l == "" {
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			if n == 2 {
				return "the first header line starts with a blank (a folded line with nothing to continue)"
			}
			continue
		}
		name, value, found := strings.Cut(l, ":")
		switch {
		case !found:
			return fmt.Sprintf("line %d has no colon", n)
		case strings.TrimRight(name, " \t") != name && isToken(strings.TrimRight(name, " \t")):
			return fmt.Sprintf("line %d: a blank between the name %s and its colon", n, name)
		case !isToken(name):
			return fmt.Sprintf("line %d: the header name is not a token", n)
		}
		for j := 0; j < len(value); j++ {
			if c := value[j]; c < 0x20 && c != '\t' || c == 0x7f {
				return fmt.Sprintf("line %d: header %s has the control byte 0x%02x at byte %d of its value", n, name, c, j)
			}
		}
	}
	var te, cl []string
	hosts := 0
	for _, f := range fields {
		switch {
		case asciiEqualFold(f.Name, "Transfer-Encoding"):
			te = append(te, f.Value)
		case asciiEqualFold(f.Name, "Content-Length"):
			cl = append(cl, strings.Trim(f.Value, " \t"))
		case asciiEqualFold(f.Name, "Host"):
			hosts++
		}
	}
	for _, v := range cl[min(1, len(cl)):] {
		if v != cl[0] {
			return fmt.Sprintf("Content-Length is given %d times with different values (%s)", len(cl), truncate(strings.Join(cl, ", "), 80))
		}
	}
	if len(cl) > 0 && strings.Trim(cl[0], "0123456789") != "" || len(cl) > 0 && cl[0] == "" {
		return fmt.Sprintf("Content-Length %q is not a number", truncate(cl[0], 40))
	}
	if len(te) > 1 || len(te) == 1 && !asciiEqualFold(te[0], "chunked") {
		return fmt.Sprintf("Transfer-Encoding %q: only a single \"chunked\" is supported", truncate(strings.Join(te, ", "), 60))
	}
	if hosts > 1 {
		return fmt.Sprintf("Host is given %d times", hosts)
	}
	if hosts == 0 && proto == "HTTP/1.1" && complete {
		return "HTTP/1.1 requires a Host header and there is none"
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
