package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/sandbox"
)

// runCLI runs `hookscope <args>` in-process with sandbox as the only command.
func runCLI(ctx context.Context, env *cmdutil.Env, args []string) int {
	return cmdutil.RunCommand(ctx, env, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, args)
}

func TestSandboxCommandServesAndStops(t *testing.T) {
	apps := filepath.Join(t.TempDir(), "apps.json")
	extra := `[{"name":"Reader","description":"reads","client_id":"reader","client_secret":"reader-secret","redirect_uri":"http://127.0.0.1:9999/cb","scopes":["media:read"]}]`
	if err := os.WriteFile(apps, []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &clitest.Buffer{}, &clitest.Buffer{}
	env := &cmdutil.Env{Stdout: stdout, Stderr: stderr}
	done := make(chan int, 1)
	go func() {
		done <- runCLI(ctx, env, []string{"sandbox", "--addr", "127.0.0.1:0", "--json", "--apps", apps, "--host", "sandbox.test:443"})
	}()

	var summary struct {
		BaseURL string        `json:"base_url"`
		Apps    []sandbox.App `json:"apps"`
		Medias  []struct {
			HashedID string `json:"hashed_id"`
		} `json:"medias"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			if err := json.Unmarshal([]byte(line), &summary); err != nil {
				t.Fatalf("summary is not JSON: %v\n%s", err, line)
			}
			break
		}
		select {
		case code := <-done:
			t.Fatalf("sandbox exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no startup summary")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(summary.Apps) != 2 || summary.Apps[1].ClientID != "reader" || len(summary.Medias) == 0 {
		t.Fatalf("summary %+v", summary)
	}

	// The command serves a full flow.
	app := summary.Apps[0]
	b := sandbox.NewBrowser("manager@example.com", "manager")
	cb, err := b.Authorize(ctx, sandbox.AuthorizeURL(summary.BaseURL, app, nil))
	if err != nil || cb.Query().Get("code") == "" {
		t.Fatalf("authorize: %v %v", err, cb)
	}
	resp, err := http.Get(summary.BaseURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "sandbox-demo-client") {
		t.Fatalf("overview page lacks the app")
	}
	// --host names are answered; other names are not (DNS rebinding).
	for host, want := range map[string]int{"sandbox.test": 200, "rebind.example": http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest("GET", summary.BaseURL+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sandbox did not stop on cancel")
	}
	if strings.Contains(stderr.String(), cb.Query().Get("code")) {
		t.Fatal("the request log leaks an authorization code")
	}
}

func TestSandboxCommandText(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &clitest.Buffer{}
	env := &cmdutil.Env{Stdout: stdout, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "HOOK_SECRET" {
			return "s3cret-from-env"
		}
		return ""
	}}
	done := make(chan int, 1)
	go func() {
		done <- runCLI(ctx, env, []string{"sandbox", "--addr", "127.0.0.1:0", "--webhook-url", "http://127.0.0.1:1/hooks?token=abc", "--webhook-secret-env", "HOOK_SECRET"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary: %s", stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := stdout.String()
	for _, want := range []string{"base URL", "auth URL", "client_secret  sandbox-demo-secret", "owner@example.com", "k3j9x2m7pq", "signed with the secret given", "/sandbox/lifecycle"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, leak := range []string{"s3cret-from-env", "token=abc"} {
		if strings.Contains(out, leak) {
			t.Errorf("summary leaks %q", leak)
		}
	}
}

func TestSandboxCommandUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"remote without flag", []string{"--addr", "0.0.0.0:0"}, 2, "--allow-remote"},
		{"bad ttl", []string{"--token-ttl", "0s"}, 2, "--token-ttl"},
		{"two secrets", []string{"--webhook-url", "http://127.0.0.1:1/", "--webhook-secret", "a", "--webhook-secret-env", "B"}, 2, "not both"},
		{"secret without url", []string{"--webhook-secret", "a"}, 2, "need --webhook-url"},
		{"unset env", []string{"--webhook-url", "http://127.0.0.1:1/", "--webhook-secret-env", "NOPE"}, 2, "unset or empty"},
		{"bad url", []string{"--webhook-url", "127.0.0.1:8787"}, 2, "absolute http"},
		{"missing apps file", []string{"--addr", "127.0.0.1:0", "--apps", "/nonexistent/apps.json"}, 2, "--apps"},
		{"bad scope", []string{"--addr", "127.0.0.1:0", "--scopes", "media:write"}, 2, "media:write"},
		{"bad redirect", []string{"--addr", "127.0.0.1:0", "--redirect-uri", "/callback"}, 2, "not an absolute URL"},
		{"no port", []string{"--addr", "127.0.0.1"}, 2, "want host:port"},
		{"stray argument", []string{"now"}, 2, "unexpected argument"},
		{"host with a scheme", []string{"--host", "https://sandbox.test/"}, 2, "--host"},
		{"empty host", []string{"--host", ""}, 2, "--host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			env := &cmdutil.Env{Stdout: io.Discard, Stderr: &stderr}
			// Bounded: a case that wrongly passes validation would serve
			// until cancelled.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code := runCLI(ctx, env, append([]string{"sandbox"}, tc.args...))
			if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr.String(), tc.msg)
			}
		})
	}
	var help bytes.Buffer
	if code := runCLI(context.Background(), &cmdutil.Env{Stdout: &help, Stderr: io.Discard}, []string{"sandbox", "--help"}); code != 0 || !strings.Contains(help.String(), "Examples:") {
		t.Fatalf("--help: %d %s", code, help.String())
	}
}
