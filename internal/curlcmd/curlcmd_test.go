package curlcmd

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":          "''",
		"plain":     "'plain'",
		"it's":      `'it'\''s'`,
		"$HOME `x`": "'$HOME `x`'",
		"a\nb":      "'a\nb'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestStringLayout(t *testing.T) {
	c := Command{Options: []string{"-sS"}, Method: "POST", URL: "http://h/p?q='1'",
		Headers: []Header{{"X-A", "1"}, {"X-Empty", ""}}, Remove: []string{"Accept"},
		Body: []byte(`{"n":"it's"}`), SendBody: true, After: []string{"-w '%{http_code}'"}}
	want := "curl -sS -X POST 'http://h/p?q='\\''1'\\''' \\\n  -H 'X-A: 1' \\\n  -H 'X-Empty;' \\\n  -H 'Accept:' \\\n  --data-binary '{\"n\":\"it'\\''s\"}' \\\n  -w '%{http_code}'"
	if got := c.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	c = Command{URLWord: DefaultVar("HOOKSCOPE_URL", `http://h/a"$b}`) + Quote("?x=1"), Body: []byte("\x00"), SendBody: true}
	want = "printf '\\000' |\n  curl \"${HOOKSCOPE_URL:-http://h/a%22%24b%7D}\"'?x=1' \\\n  --data-binary @-"
	if got := c.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestShellsSendTheExactBytes runs commands through every POSIX shell
// installed, with real curl, and compares what a server received.
func TestShellsSendTheExactBytes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	var shells []string
	for _, sh := range []string{"sh", "dash", "bash", "zsh"} {
		if _, err := exec.LookPath(sh); err == nil {
			shells = append(shells, sh)
		}
	}
	type got struct {
		method, uri string
		header      http.Header
		body        []byte
	}
	var mu sync.Mutex
	var last got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = got{r.Method, r.RequestURI, r.Header.Clone(), b}
		mu.Unlock()
	}))
	defer srv.Close()

	big := bytes.Repeat([]byte(`{"k":"v\\n%s'"}`+"\n"), 20000) // ~300 KiB: over the argument limit
	bodies := map[string][]byte{
		"json":      []byte(`{"a":"it's \"quoted\" \\ 100% $HOME ` + "`x`" + `","b":"\u00e9"}`),
		"binary":    []byte("\xff\xfe\x00bin\x00\x80\r\n%d\\0"),
		"dash":      []byte("-n -e x"),
		"big":       big,
		"empty":     {},
		"newlines":  []byte("\n\nline\n\n"),
		"nul-start": []byte("\x00\x00x"),
	}
	dir := t.TempDir()
	// A body starting with '@' is not a file name to curl's --data-binary.
	other := filepath.Join(dir, "other-file")
	if err := os.WriteFile(other, []byte("not the body"), 0o600); err != nil {
		t.Fatal(err)
	}
	bodies["at-file"] = []byte("@" + other)
	bodies["at-stdin"] = []byte("@-")
	for _, sh := range shells {
		for name, body := range bodies {
			c := Command{Options: []string{"-sS"}, Method: "POST",
				URLWord: DefaultVar("HOOKSCOPE_TEST_URL", srv.URL+"/default") + Quote("?x=1&y='2'"),
				Headers: []Header{{"X-Dup", "1"}, {"x-dup", "2"}, {"X-Empty", ""}, {"X-Odd", `a'b"c$d`}},
				Remove:  []string{"User-Agent", "Accept", "Content-Type", "Expect"},
				Body:    body, SendBody: true}
			// A file, as a script or a paste would be: "sh -c" would
			// pass the command as one argument, under the argument limit.
			script := filepath.Join(dir, "cmd.sh")
			if err := os.WriteFile(script, []byte(c.String()+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(sh, script).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", sh, name, err, out)
			}
			mu.Lock()
			g := last
			mu.Unlock()
			if !bytes.Equal(g.body, body) {
				t.Errorf("%s %s: server got %d bytes, want %d", sh, name, len(g.body), len(body))
			}
			if g.method != "POST" || g.uri != "/default?x=1&y='2'" {
				t.Errorf("%s %s: %s %s", sh, name, g.method, g.uri)
			}
			if !slices.Equal(g.header.Values("X-Dup"), []string{"1", "2"}) || g.header.Get("X-Odd") != `a'b"c$d` {
				t.Errorf("%s %s: headers %v", sh, name, g.header)
			}
			if v, ok := g.header["X-Empty"]; !ok || len(v) != 1 || v[0] != "" {
				t.Errorf("%s %s: X-Empty = %q", sh, name, v)
			}
			for _, h := range []string{"User-Agent", "Accept", "Content-Type", "Expect"} {
				if _, ok := g.header[h]; ok {
					t.Errorf("%s %s: curl still sent %s", sh, name, h)
				}
			}
		}
	}
	// The variable, when set, replaces the default.
	c := Command{URLWord: DefaultVar("HOOKSCOPE_TEST_URL", "http://127.0.0.1:1/unused") + Quote("?q=1")}
	cmd := exec.Command("sh", "-c", c.String())
	cmd.Env = append(cmd.Environ(), "HOOKSCOPE_TEST_URL="+srv.URL+"/other")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with HOOKSCOPE_TEST_URL: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if last.method != "GET" || last.uri != "/other?q=1" || strings.Contains(last.uri, "unused") {
		t.Fatalf("with the variable set: %s %s", last.method, last.uri)
	}
}
