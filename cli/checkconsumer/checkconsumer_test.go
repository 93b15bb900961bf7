package checkconsumer

import (
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
