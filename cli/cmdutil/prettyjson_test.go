package cmdutil

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/pretty"
)

// TestPrintJSON: pretty JSON in tidwall/pretty's layout, &, < and > kept,
// coloured only on a terminal, and still the same JSON.
func TestPrintJSON(t *testing.T) {
	v := map[string]any{"url": "https://a.example/?x=1&y=<2>", "scopes": []string{"read", "write"}, "n": 3}
	compact, _ := json.Marshal(v)
	for _, term := range []bool{false, true} {
		var out bytes.Buffer
		if err := PrintJSON(&Env{Stdout: &out, IsTerminal: term}, v); err != nil {
			t.Fatal(err)
		}
		got := out.Bytes()
		if colour := bytes.Contains(got, []byte("\x1b[")); colour != term {
			t.Errorf("terminal %v: colour %v:\n%s", term, colour, got)
		}
		if term {
			got = pretty.Ugly(stripANSI(got))
		}
		if !term && (!bytes.Contains(got, []byte(`"scopes": ["read", "write"]`)) || !bytes.Contains(got, []byte("&y=<2>"))) {
			t.Errorf("layout:\n%s", got)
		}
		var back map[string]any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("terminal %v: not JSON: %v\n%s", term, err, got)
		}
		if b, _ := json.Marshal(back); !bytes.Equal(b, compact) {
			t.Errorf("terminal %v: %s, want %s", term, b, compact)
		}
	}
}

// stripANSI removes colour escape sequences.
func stripANSI(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] == 0x1b {
			for i < len(b) && b[i] != 'm' {
				i++
			}
			continue
		}
		out = append(out, b[i])
	}
	return out
}

// TestPrettyBody: JSON is pretty and coloured on a terminal; anything
// else, or any body on a pipe, stays exactly as received.
func TestPrettyBody(t *testing.T) {
	for _, tc := range []struct {
		body     string
		terminal bool
		same     bool
	}{
		{`{"a":1,"b":[1,2]}`, true, false},
		{`{"a":1,"b":[1,2]}`, false, true},
		{`<html>oops</html>`, true, true},
		{``, true, true},
	} {
		got := PrettyBody(&Env{IsTerminal: tc.terminal}, []byte(tc.body))
		if same := string(got) == tc.body; same != tc.same {
			t.Errorf("%q (terminal %v): %q", tc.body, tc.terminal, got)
		}
		if !tc.same && (!bytes.Contains(got, []byte("\x1b[")) || !json.Valid(pretty.Ugly(stripANSI(got)))) {
			t.Errorf("%q: not coloured JSON: %q", tc.body, got)
		}
	}
}
