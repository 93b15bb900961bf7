package checkconsumer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// runCLI runs `hookscope <args>` in-process with check-consumer as the only command.
func runCLI(t *testing.T, env map[string]string, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, env, args...)
}

func TestCheckConsumerCommand(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		if inspector.Verify(sig, sig != "", b, [][]byte{[]byte("k")}).Status != inspector.SignatureValid {
			w.WriteHeader(401)
		}
	}))
	defer good.Close()
	r := runCLI(t, map[string]string{"S": "k"}, "check-consumer", "--to", good.URL, "--secret-env", "S", "--seed", "1")
	if r.Code != 0 || !strings.Contains(r.Stdout, "22 passed, 0 warnings, 0 failed") {
		t.Errorf("good consumer: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	naive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer naive.Close()
	r = runCLI(t, nil, "check-consumer", "--to", naive.URL, "--secret", "k", "--json")
	var rep struct {
		OK     bool `json:"ok"`
		Failed int  `json:"failed"`
		Cases  []struct {
			Name    string `json:"name"`
			Verdict string `json:"verdict"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, r.Stdout)
	}
	if r.Code != 1 || rep.OK || rep.Failed != 2 || !strings.Contains(r.Stderr, "2 of 22 cases failed") {
		t.Errorf("naive consumer: exit %d, %+v, %s", r.Code, rep, r.Stderr)
	}
	if r := runCLI(t, nil, "check-consumer", "--to", naive.URL); r.Code != 2 {
		t.Errorf("no secret: exit %d", r.Code)
	}
}

// TestCheckConsumerProgress: each case is reported on standard error as it
// finishes (plain lines when the output is not a terminal, one rewritten
// line on a terminal), and --fail-fast stops at the first failed case.
func TestCheckConsumerProgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		if inspector.Verify(sig, sig != "", b, [][]byte{[]byte("k")}).Status != inspector.SignatureValid {
			w.WriteHeader(401)
			return
		}
		if m, _ := inspector.DecodeMessage(b); m != nil && m.Events[0].Type == catalog.TypeMediaReady {
			http.Error(w, "boom", 500)
		}
	}))
	defer srv.Close()
	secret := map[string]string{"S": "k"}

	r := runCLI(t, secret, "check-consumer", srv.URL, "--secret-env", "S", "--seed", "1")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 1 || len(lines) != 23 || !strings.HasPrefix(lines[0], "1/22 PASS type:media.created: 200 in ") ||
		!strings.HasPrefix(lines[2], "3/22 FAIL type:media.ready: 500 in ") || !strings.HasPrefix(lines[21], "22/22 PASS missing-signature: 401 in ") ||
		lines[22] != "hookscope check-consumer: 3 of 22 cases failed" {
		t.Errorf("piped: exit %d, stderr:\n%s", r.Code, r.Stderr)
	}

	r = runCLI(t, secret, "check-consumer", srv.URL, "--secret-env", "S", "--seed", "1", "--fail-fast")
	lines = strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 1 || len(lines) != 4 || lines[3] != "hookscope check-consumer: 1 of 3 cases failed (stopped at the first failure; 19 cases not run)" ||
		!strings.Contains(r.Stdout, "Stopped at the first failed case: 19 cases not run.") {
		t.Errorf("--fail-fast: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	var out, errb bytes.Buffer
	env := &cmdutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, IsTerminal: true, Getenv: func(k string) string { return secret[k] }}
	code := cmdutil.RunCommand(context.Background(), env, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) },
		[]string{"check-consumer", srv.URL, "--secret-env", "S", "--seed", "1", "--fail-fast"})
	progress := errb.String()
	if code != 1 || !strings.Contains(progress, "\r\033[K1/22 type:media.created: waiting for the answer (0 passed, 0 failed so far)") ||
		!strings.Contains(progress, "\r\033[K3/22 type:media.ready: waiting for the answer (2 passed, 0 failed so far)") ||
		!strings.Contains(progress, "\r\033[Khookscope check-consumer: 1 of 3 cases failed") || strings.Contains(progress, "PASS") {
		t.Errorf("terminal: exit %d, stderr %q", code, progress)
	}
}
