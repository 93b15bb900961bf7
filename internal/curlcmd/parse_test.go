package curlcmd

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// roundTrip writes c into a script as the curl export does and reads it
// back.
func roundTrip(t testing.TB, c Command) Parsed {
	t.Helper()
	script := "#!/bin/sh\n# a comment\nset -eu\nif [ $# -gt 0 ]; then HOOKSCOPE_URL=$1; fi\n\n# delivery 7, received 2026-03-02 09:30:01Z: media.ready\n" + c.String() + "\n"
	ps, err := ParseScript(script)
	if err != nil {
		t.Fatalf("ParseScript: %v\n%s", err, script)
	}
	if len(ps) != 1 {
		t.Fatalf("%d commands read back from:\n%s", len(ps), script)
	}
	return ps[0]
}

// TestParseScriptReadsWhatStringWrites: every form String writes (quotes
// in values, an empty header, removed headers, bodies inline and piped
// from printf with NUL bytes, a leading dash, backslashes and percents)
// reads back to the same request.
func TestParseScriptReadsWhatStringWrites(t *testing.T) {
	bodies := map[string][]byte{
		"json":      []byte(`{"a":"it's \"quoted\" \\ 100% $HOME ` + "`x`" + `","b":"\u00e9"}`),
		"binary":    []byte("\xff\xfe\x00bin\x00\x80\r\n%d\\0\\n"),
		"dash":      []byte("-n -e x"),
		"big":       bytes.Repeat([]byte(`{"k":"v\\n%s'"}`+"\n"), 5000),
		"empty":     {},
		"newlines":  []byte("\n\nline\n\n"),
		"nul-start": []byte("\x00\x00x"),
		"octal":     []byte("\x00123\x007"),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			c := Command{Options: []string{"-sS"}, Method: "PUT",
				URLWord: DefaultVar("HOOKSCOPE_URL", `http://127.0.0.1:8787/web"hooks}`) + Quote("?x=1&y='2'"),
				Headers: []Header{{"X-Dup", "1"}, {"x-dup", "2"}, {"X-Empty", ""}, {"X-Odd", `a'b"c$d: e`}},
				Remove:  []string{"Accept", "Expect"},
				Body:    body, SendBody: true, After: []string{`-w '\n-> %{http_code} in %{time_total}s\n'`}}
			p := roundTrip(t, c)
			if !bytes.Equal(p.Body, body) || !p.SendBody {
				t.Errorf("body %q, want %q", p.Body, body)
			}
			if p.Method != "PUT" || p.URL != `http://127.0.0.1:8787/web%22hooks%7D?x=1&y='2'` {
				t.Errorf("method %q URL %q", p.Method, p.URL)
			}
			if !reflect.DeepEqual(p.Headers, c.Headers) || !reflect.DeepEqual(p.Remove, c.Remove) {
				t.Errorf("headers %q remove %q", p.Headers, p.Remove)
			}
			if p.Comment != "delivery 7, received 2026-03-02 09:30:01Z: media.ready" {
				t.Errorf("comment %q", p.Comment)
			}
			if again := (Command{Options: p.Options, Method: p.Method, URL: p.URL, Headers: p.Headers, Remove: p.Remove, Body: p.Body, SendBody: p.SendBody, After: p.After}); !strings.Contains(again.String(), "-w '\\n-> %{http_code}") {
				t.Errorf("-w did not survive: %s", again.String())
			}
		})
	}
}

// TestParseScriptRefuses: what Hookscope never writes is an error naming
// the line, not a guess.
func TestParseScriptRefuses(t *testing.T) {
	for _, script := range []string{
		"curl -sS \"$URL\"\n",
		"curl -sS 'http://h/' --data-binary @-\n",
		"printf '%s' | curl 'http://h/' --data-binary @-\n",
		"curl -k 'http://h/'\n",
		"curl 'http://h/\n",
		"curl \"${U:-http://h/}\" -H 'Bad'\n",
		"\n\ncurl `id`\n",
	} {
		if ps, err := ParseScript(script); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %v, %+v", script, err, ps)
		}
	}
}

// FuzzParseScript: whatever a request holds, its command reads back to it.
func FuzzParseScript(f *testing.F) {
	f.Add("POST", "X-A", "v'1", []byte(`{"a":1}`), "q=1")
	f.Add("", "X-B", "", []byte("\x00-%\\"), "")
	f.Fuzz(func(t *testing.T, method, name, value string, body []byte, query string) {
		if strings.ContainsAny(method+name, " \t\r\n:;'\"\\$`|#\x00") || strings.ContainsAny(value, "\r\n\x00") || name == "" ||
			strings.ContainsAny(query, "\x00") || strings.HasPrefix(method, "-") || strings.HasPrefix(value, " ") {
			return
		}
		c := Command{Method: method, URLWord: DefaultVar("U", "http://h/p") + Quote("?"+query),
			Headers: []Header{{name, value}}, Body: body, SendBody: true}
		p := roundTrip(t, c)
		if !bytes.Equal(p.Body, body) || p.Method != method || p.URL != "http://h/p?"+query || len(p.Headers) != 1 || p.Headers[0] != (Header{name, value}) {
			t.Fatalf("read back %+v from %s", p, c.String())
		}
	})
}
