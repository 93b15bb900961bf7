package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/cli/mcp"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/storage"
)

// connect serves the store at path to an SDK client over the in-memory
// transport pair.
func connect(t *testing.T, path string, getenv map[string]string) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(path, &cmdutil.Env{Getenv: clitest.Getenv(getenv)})
	t.Cleanup(func() { srv.Close() })
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text, failing on a tool error unless
// wantErr.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, wantErr bool) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("%s: error %v, want %v: %s", name, res.IsError, wantErr, text.String())
	}
	return text.String()
}

func TestTools(t *testing.T) {
	path := clitest.SeedStore(t)
	var got atomic.Int32
	var lastSig atomic.Value
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		lastSig.Store(r.Header.Get(inspector.SignatureHeader))
	}))
	defer app.Close()
	cs := connect(t, path, map[string]string{"DEV_SECRET": "dev-secret"})

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "export,forward_again,list_deliveries,oauth_status,replay,resend_timeline,send_test_deliveries,show_delivery" {
		t.Errorf("tools: %v", names)
	}

	var listed struct {
		Deliveries []struct {
			ID    int64    `json:"id"`
			Types []string `json:"types"`
		} `json:"deliveries"`
	}
	out := call(t, cs, "list_deliveries", map[string]any{"where": `events.exists(e, e.type == "media.ready")`}, false)
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Deliveries) != 1 || listed.Deliveries[0].ID != 2 {
		t.Errorf("list: %v %s", err, out)
	}
	if out := call(t, cs, "list_deliveries", map[string]any{"where": `delivery.sig == "x"`}, true); !strings.Contains(out, "undefined field 'sig'") {
		t.Errorf("bad where: %s", out)
	}

	out = call(t, cs, "show_delivery", map[string]any{"id": 1}, false)
	if !strings.Contains(out, `"status": "valid"`) || !strings.Contains(out, "media.processing") {
		t.Errorf("show: %s", out)
	}
	call(t, cs, "show_delivery", map[string]any{"id": 99}, true)

	out = call(t, cs, "resend_timeline", map[string]any{}, false)
	if !strings.Contains(out, `"sentence": "nothing after a 2xx (n=3)"`) {
		t.Errorf("timeline: %s", out)
	}

	out = call(t, cs, "replay", map[string]any{"ids": []int64{1}, "target": app.URL, "resign_secret_env": "DEV_SECRET"}, false)
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, _ := db.Get(context.Background(), 1)
	if got.Load() != 1 || lastSig.Load() != inspector.Sign([]byte("dev-secret"), rec.Delivery.Body) || !strings.Contains(out, `"delivery_id": 1`) {
		t.Errorf("replay: %d sends, %s", got.Load(), out)
	}
	if out := call(t, cs, "replay", map[string]any{"ids": []int64{1}, "target": app.URL, "resign_secret_env": "NOPE"}, true); strings.Contains(out, "dev-secret") {
		t.Errorf("a secret in an error: %s", out)
	}

	out = call(t, cs, "forward_again", map[string]any{"ids": []int64{2}, "to": app.URL}, false)
	if got.Load() != 2 || !strings.Contains(out, `"kind": "again"`) {
		t.Errorf("forward again: %s", out)
	}

	file := filepath.Join(t.TempDir(), "media.ndjson")
	out = call(t, cs, "export", map[string]any{"where": `events.exists(e, e.type.startsWith("media."))`, "format": "ndjson", "path": file}, false)
	if b, err := os.ReadFile(file); err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(out, `"deliveries": 2`) {
		t.Errorf("export: %v %s", err, out)
	}

	out = call(t, cs, "send_test_deliveries", map[string]any{"to": app.URL, "types": []string{"media.ready", "media.updated"}, "secret_env": "DEV_SECRET"}, false)
	if got.Load() != 4 || strings.Count(out, `"status": 200`) != 2 {
		t.Errorf("send: %d, %s", got.Load(), out)
	}
	call(t, cs, "send_test_deliveries", map[string]any{"to": app.URL, "types": []string{"media.nope"}}, true)

	ctx := context.Background()
	if err := db.SaveProfile(ctx, oauthflow.Profile{Name: "dev", BaseURL: "https://api.example", ClientID: "cid", ClientSecret: "client-secret-value", RedirectURI: "http://127.0.0.1:8788/callback"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveToken(ctx, "dev", oauthflow.Token{AccessToken: "access-token-value", RefreshToken: "refresh-token-value", TokenType: "bearer",
		Scope: []string{"media:read"}, ObtainedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	out = call(t, cs, "oauth_status", map[string]any{}, false)
	if !strings.Contains(out, `"token": "valid"`) || !strings.Contains(out, `"refreshable": true`) || !strings.Contains(out, "media:read") {
		t.Errorf("oauth: %s", out)
	}
	for _, secret := range []string{"client-secret-value", "access-token-value", "refresh-token-value"} {
		if strings.Contains(out, secret) {
			t.Errorf("oauth_status shows a secret: %s", out)
		}
	}
}

// TestNoStoreYet: tools that need the store say there is none; the
// server still runs (an agent may start before anything was received).
func TestNoStoreYet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	cs := connect(t, path, nil)
	if out := call(t, cs, "list_deliveries", map[string]any{}, true); !strings.Contains(out, "no store at") {
		t.Errorf("%s", out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the store was created")
	}
}
