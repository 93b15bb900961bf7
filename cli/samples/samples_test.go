package samples

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// runSamplesCLI runs `hookscope <args>` in-process with samples as the only command.
func runSamplesCLI(t *testing.T, getenv map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r := clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, getenv, args...)
	return r.Code, r.Stdout, r.Stderr
}

func TestSamplesUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		phrase string
	}{
		{[]string{"samples"}, "the folder to write the samples to is required"},
		{[]string{"samples", "--out", "x", "--type", "nope"}, "valid types"},
		{[]string{"samples", "a", "--out", "b"}, "disagree"},
		{[]string{"samples", "a", "b"}, "too many arguments"},
	} {
		code, _, errOut := runSamplesCLI(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.phrase) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errOut)
		}
	}
}

func TestSamples(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "samples")
	code, out, errOut := runSamplesCLI(t, map[string]string{"K": "test-secret"}, "samples", "--out", dir, "--secret-env", "K", "--seed", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "wrote 17 samples") {
		t.Errorf("output %q", out)
	}
	// index.json as docs/catalog.md describes it.
	var idx struct {
		UserAgent string `json:"user_agent"`
		Signed    bool   `json:"signed"`
		Samples   []struct {
			Type, Body, Headers, Signature string
		} `json:"samples"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Samples) != 17 || !idx.Signed {
		t.Fatalf("index %s: %v", b, err)
	}
	for _, s := range idx.Samples {
		body, err := os.ReadFile(filepath.Join(dir, s.Body))
		if err != nil {
			t.Fatal(err)
		}
		var headers map[string]string
		hb, _ := os.ReadFile(filepath.Join(dir, s.Headers))
		if err := json.Unmarshal(hb, &headers); err != nil {
			t.Fatalf("%s: %v", s.Headers, err)
		}
		sig := headers["X-Service-Signature"]
		if v := inspector.Verify(sig, true, body, [][]byte{[]byte("test-secret")}); v.Status != inspector.SignatureValid || sig != s.Signature {
			t.Errorf("%s: %s", s.Type, v.Reason)
		}
		if headers["Content-Length"] != strconv.Itoa(len(body)) || headers["User-Agent"] != "Service-Webhooks/0.0.47" {
			t.Errorf("%s headers %v", s.Type, headers)
		}
		if !bytes.Contains(body, []byte("\n  \"events\": [")) {
			t.Errorf("%s is not pretty", s.Body)
		}
		m, err := inspector.DecodeMessage(body)
		if err != nil || len(m.Events) != 1 {
			t.Fatalf("%s: %v", s.Body, err)
		}
		if e := catalog.DecodeEvent(m.Events[0].Raw); e.Type != s.Type || len(e.Problems) != 0 {
			t.Errorf("%s: %s %+v", s.Body, e.Type, e.Problems)
		}
	}
	// Without a secret there is no signature header at all.
	dir2 := t.TempDir()
	if code, _, errOut := runSamplesCLI(t, nil, "samples", "--out", dir2, "--type", "media.ready"); code != 0 {
		t.Fatal(errOut)
	}
	hb, _ := os.ReadFile(filepath.Join(dir2, "media.ready.headers.json"))
	if bytes.Contains(hb, []byte("Signature")) {
		t.Errorf("unsigned headers file has a signature: %s", hb)
	}
}
