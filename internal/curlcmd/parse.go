package curlcmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Parsed is one command read back from a script of commands String wrote.
type Parsed struct {
	// Command holds what the command sends: Method, URL (the URL word as
	// the shell expands it, a "${NAME:-default}" taken as its default),
	// Headers, Remove, Body and SendBody (a body piped from printf is
	// decoded), Options and After.
	Command
	// Comment is the text of the comment lines right before the command,
	// without their '#', joined by newlines.
	Comment string
}

// ParseScript reads the commands of a POSIX shell script that String's
// commands were written into (the curl export's replay.sh): every
// pipeline that is a curl command, or printf piped into one. Other
// commands (set, if … fi, assignments) are passed over. It reads the
// shell forms String writes — single and double quotes, backslash-newline,
// "${NAME:-default}", comments, printf's escapes — and refuses what it
// cannot read faithfully (another expansion, a curl option String never
// writes) with an error naming the line.
func ParseScript(script string) ([]Parsed, error) {
	toks, err := tokenize(script)
	if err != nil {
		return nil, err
	}
	var out []Parsed
	var comments []string
	var pipeline [][]string
	var cur []string
	line := 1
	flush := func() error {
		if len(cur) > 0 {
			pipeline = append(pipeline, cur)
			cur = nil
		}
		if len(pipeline) == 0 {
			return nil
		}
		p, ok, err := parsePipeline(pipeline)
		pipeline = nil
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if ok {
			p.Comment = strings.Join(comments, "\n")
			out = append(out, p)
		}
		comments = nil
		return nil
	}
	for _, t := range toks {
		switch t.kind {
		case tokWord:
			cur = append(cur, t.text)
		case tokPipe:
			if len(cur) == 0 {
				return nil, fmt.Errorf("line %d: a pipe with no command before it", t.line)
			}
			pipeline = append(pipeline, cur)
			cur = nil
		case tokComment:
			if len(cur) == 0 && len(pipeline) == 0 {
				comments = append(comments, t.text)
			}
		case tokEnd:
			if len(cur) == 0 && len(pipeline) > 0 {
				continue // a newline after a pipe continues the pipeline
			}
			if err := flush(); err != nil {
				return nil, err
			}
			line = t.line + 1
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// parsePipeline reads "curl …" or "printf FORMAT | curl … --data-binary
// @-"; ok is false for any other command.
func parsePipeline(p [][]string) (Parsed, bool, error) {
	var piped []byte
	hasPipe := false
	switch {
	case len(p) == 2 && p[0][0] == "printf" && p[1][0] == "curl":
		if len(p[0]) != 2 {
			return Parsed{}, false, errors.New("printf must have exactly one argument, the body as its format")
		}
		b, err := unprintf(p[0][1])
		if err != nil {
			return Parsed{}, false, err
		}
		piped, hasPipe = b, true
	case len(p) == 1 && p[0][0] == "curl":
	default:
		for _, c := range p {
			if c[0] == "curl" {
				return Parsed{}, false, fmt.Errorf("a curl command in a pipeline other than printf | curl")
			}
		}
		return Parsed{}, false, nil
	}
	args := p[len(p)-1][1:]
	var c Command
	next := func(i *int, opt string) (string, error) {
		if *i+1 >= len(args) {
			return "", fmt.Errorf("%s without its value", opt)
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-X":
			v, err := next(&i, a)
			if err != nil {
				return Parsed{}, false, err
			}
			c.Method = v
		case a == "-H":
			v, err := next(&i, a)
			if err != nil {
				return Parsed{}, false, err
			}
			name, value, colon := strings.Cut(v, ":")
			switch {
			case !colon && strings.HasSuffix(v, ";"):
				c.Headers = append(c.Headers, Header{Name: strings.TrimSuffix(v, ";")})
			case !colon:
				return Parsed{}, false, fmt.Errorf("-H %q is not a header", v)
			case value == "":
				c.Remove = append(c.Remove, name)
			default:
				c.Headers = append(c.Headers, Header{Name: name, Value: strings.TrimPrefix(value, " ")})
			}
		case a == "--data-binary":
			v, err := next(&i, a)
			if err != nil {
				return Parsed{}, false, err
			}
			c.SendBody = true
			if v == "@-" {
				if !hasPipe {
					return Parsed{}, false, errors.New("--data-binary @- reads a body no printf pipes in")
				}
				c.Body = piped
			} else {
				c.Body = []byte(v)
			}
		case a == "-w":
			v, err := next(&i, a)
			if err != nil {
				return Parsed{}, false, err
			}
			c.After = append(c.After, "-w "+Quote(v))
		case a == "-sS" || a == "-s" || a == "-S":
			c.Options = append(c.Options, a)
		case strings.HasPrefix(a, "-"):
			return Parsed{}, false, fmt.Errorf("curl option %s is not one Hookscope writes", a)
		case c.URL == "":
			c.URL = a
		default:
			return Parsed{}, false, fmt.Errorf("a second URL %q", a)
		}
	}
	if c.URL == "" {
		return Parsed{}, false, errors.New("a curl command without a URL")
	}
	if hasPipe && !c.SendBody {
		return Parsed{}, false, errors.New("printf pipes a body that curl does not read (no --data-binary @-)")
	}
	return Parsed{Command: c}, true, nil
}

// unprintf returns what printf prints for format given no arguments:
// the escapes \\ \a \b \f \n \r \t \v and \NNN (octal), and %%.
func unprintf(format string) ([]byte, error) {
	out := make([]byte, 0, len(format))
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch c {
		case '%':
			if i+1 < len(format) && format[i+1] == '%' {
				out = append(out, '%')
				i++
				continue
			}
			return nil, errors.New("printf format has a conversion (%) with no argument")
		case '\\':
			if i+1 >= len(format) {
				return nil, errors.New("printf format ends with a lone backslash")
			}
			i++
			e := format[i]
			// The one-letter escapes, each at the same index as its byte.
			if k := strings.IndexByte(`\abfnrtv`, e); k >= 0 {
				out = append(out, "\\\a\b\f\n\r\t\v"[k])
				continue
			}
			if e < '0' || e > '7' {
				return nil, fmt.Errorf("printf escape \\%c is not one Hookscope writes", e)
			}
			n, j := 0, i
			for ; j < len(format) && j < i+3 && format[j] >= '0' && format[j] <= '7'; j++ {
				n = n*8 + int(format[j]-'0')
			}
			if n > 0xff {
				return nil, fmt.Errorf("printf escape \\%s is over a byte", format[i:j])
			}
			out = append(out, byte(n))
			i = j - 1
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

type tokKind int

const (
	tokWord    tokKind = iota
	tokPipe            // |
	tokEnd             // a newline or ;
	tokComment         // # to the end of the line
)

type token struct {
	kind tokKind
	text string
	line int
}

// tokenize splits a script into words, pipes, command ends and comments,
// applying the shell's quoting: single quotes, double quotes (where only
// "${NAME:-default}" is expanded, to its default), backslash escapes and
// backslash-newline continuations.
func tokenize(s string) ([]token, error) {
	var toks []token
	var w strings.Builder
	inWord := false
	line := 1
	end := func() {
		if inWord {
			toks = append(toks, token{kind: tokWord, text: w.String(), line: line})
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("line %d: the script ends with a backslash", line)
			}
			i++
			if s[i] == '\n' {
				line++
				continue
			}
			w.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("line %d: a single quote that is not closed", line)
			}
			q := s[i+1 : i+1+j]
			w.WriteString(q)
			line += strings.Count(q, "\n")
			inWord = true
			i += j + 1
		case c == '"':
			n, err := doubleQuoted(s[i+1:], &w)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			line += strings.Count(s[i+1:i+1+n], "\n")
			inWord = true
			i += n
		case c == '#' && !inWord:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				j = len(s) - i
			}
			toks = append(toks, token{kind: tokComment, text: strings.TrimPrefix(s[i+1:i+j], " "), line: line})
			i += j - 1
		case c == ' ' || c == '\t':
			end()
		case c == '\n' || c == ';':
			end()
			toks = append(toks, token{kind: tokEnd, line: line})
			if c == '\n' {
				line++
			}
		case c == '|':
			end()
			toks = append(toks, token{kind: tokPipe, line: line})
		case c == '`':
			return nil, fmt.Errorf("line %d: a command substitution Hookscope does not write", line)
		case c == '$' && i+1 < len(s) && s[i+1] != '#' && s[i+1] != '1' && s[i+1] != ' ':
			// Outside double quotes String writes no expansion; "$#" and
			// "$1" are the script's own argument handling, passed over.
			return nil, fmt.Errorf("line %d: an unquoted expansion Hookscope does not write", line)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return toks, nil
}

// doubleQuoted reads the inside of a double-quoted word from s (just after
// its opening quote) into w and returns how many bytes it used, the
// closing quote included. Only "${NAME:-default}" is expanded, to its
// default: the value the script's variable has when it is unset.
func doubleQuoted(s string, w *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
				i++
				if s[i] != '\n' {
					w.WriteByte(s[i])
				}
				continue
			}
			w.WriteByte(c)
		case '`':
			return 0, errors.New("a command substitution Hookscope does not write")
		case '$':
			if !strings.HasPrefix(s[i:], "${") {
				return 0, errors.New("an expansion other than ${NAME:-default}")
			}
			j := strings.IndexByte(s[i:], '}')
			inner := ""
			if j > 0 {
				inner = s[i+2 : i+j]
			}
			name, def, ok := strings.Cut(inner, ":-")
			if j < 0 || !ok || name == "" || strings.ContainsAny(def, "$`\"\\") {
				return 0, fmt.Errorf("an expansion other than ${NAME:-default}: %s", strconv.Quote(s[i:min(len(s), i+40)]))
			}
			w.WriteString(def)
			i += j
		default:
			w.WriteByte(c)
		}
	}
	return 0, errors.New("a double quote that is not closed")
}
