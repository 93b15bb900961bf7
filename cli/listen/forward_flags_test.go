package listen

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
)

// appSecret is the developer's app's own webhook secret (re-signing).
const appSecret = "whsec_app_dev"

// postStatus posts body signed with the service's secret and returns the
// status the service got, and the body.
func postStatus(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(inspector.SignatureHeader, inspector.Sign([]byte(listenSecret), []byte(body)))
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestListenPassThroughRelays: with --forward-mode pass-through the
// service gets the app's answer (200, 500 with its body), 504 when the
// app does not answer within --forward-timeout, and 502 when nothing
// listens on the route's port (a glob route listed first answers its
// messages).
func TestListenPassThroughRelays(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), "media.failed"):
			w.Header().Set("X-App", "yes")
			http.Error(w, "boom: cannot handle media.failed", http.StatusInternalServerError)
		case strings.Contains(string(b), "media.updated"):
			time.Sleep(1500 * time.Millisecond)
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer app.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := ln.Addr().String()
	ln.Close()
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	url, stop := startListenCLI(t, out, errOut, "--secret-env", "HS_SECRET", "--forward-mode", "pass-through", "--forward-timeout", "400ms",
		"--forward-to", "media.deleted=http://"+down+"/hook", "--forward-to", app.URL+"/hook")
	defer stop()
	for _, tc := range []struct {
		typ     string
		code    int
		bodyHas string
		lineHas string
		deliver int
	}{
		{"media.created", 200, `{"ok":true}`, "→ 200 in ", 1},
		{"media.failed", 500, "boom: cannot handle media.failed", "→ 500 in ", 2},
		{"media.updated", 504, "", "→ timeout", 3},
		{"media.deleted", 502, "", "→ refused", 4},
	} {
		code, body := postStatus(t, url, msg("h"+tc.typ, ev("0123456789abcde"+string(rune('0'+tc.deliver)), tc.typ, "m1", "2026-01-01T00:00:01Z")))
		if code != tc.code || !strings.Contains(body, tc.bodyHas) {
			t.Errorf("%s: the service got %d %q, want %d with %q", tc.typ, code, body, tc.code, tc.bodyHas)
		}
		out.WaitFor(t, tc.lineHas)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

// TestListenRoutesResignsAndKeepsBatchesWhole: two --forward-to routes,
// one by glob; a batch goes whole (byte-exact) to every route one of its
// events matches, a message of other types to the catch-all only; with
// --forward-resign-secret-env the apps verify the body with their own
// secret (a second receiver that knows only the app's secret), but only
// what verified with the service's secret: a forged delivery (no
// signature) reaches the app without one, and its attempt says so.
func TestListenRoutesResignsAndKeepsBatchesWhole(t *testing.T) {
	type got struct {
		body  string
		valid bool
	}
	var mu sync.Mutex
	apps := map[string][]got{}
	app := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			sig := r.Header.Get(inspector.SignatureHeader)
			res := inspector.Verify(sig, sig != "", b, [][]byte{[]byte(appSecret)})
			mu.Lock()
			apps[name] = append(apps[name], got{string(b), res.Status == inspector.SignatureValid})
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	media, all := app("media"), app("all")
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	url, stop := startListenCLI(t, out, errOut, "--json", "--secret-env", "HS_SECRET", "--forward-resign-secret-env", "APP_SECRET",
		"--forward-to", "media.*="+media.URL+"/media", "--forward-to", all.URL+"/all")
	defer stop()
	batch := msg("h1", ev("aaaaaaaaaaaaaaa1", "viewing_session.play", "m1", "2026-01-01T00:00:01Z"), ev("aaaaaaaaaaaaaaa2", "media.ready", "m1", "2026-01-01T00:00:02Z"))
	other := msg("h2", ev("aaaaaaaaaaaaaaa3", "viewing_session.play", "m2", "2026-01-01T00:00:03Z"))
	for _, b := range []string{batch, other} {
		if code, _ := postStatus(t, url, b); code != 200 {
			t.Fatalf("listen answered %d", code)
		}
	}
	forged := msg("h3", ev("aaaaaaaaaaaaaaa4", "viewing_session.play", "m3", "2026-01-01T00:00:04Z"))
	resp, err := http.Post(url, "text/plain", strings.NewReader(forged))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(apps["media"]) + len(apps["all"])
		mu.Unlock()
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apps got %d forwards, want 4:\n%s", n, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if m := apps["media"]; len(m) != 1 || m[0].body != batch || !m[0].valid {
		t.Errorf("the media app got %+v, want the whole batch, re-signed", m)
	}
	if a := apps["all"]; len(a) != 3 || a[0].body != batch || a[1].body != other || !a[0].valid || !a[1].valid || a[2].body != forged || a[2].valid {
		t.Errorf("the catch-all got %+v, want both in order, re-signed, then the forged one unsigned", a)
	}
	if !strings.Contains(out.String(), `"resigned":true`) || strings.Contains(out.String()+errOut.String(), appSecret) {
		t.Errorf("re-signing not said, or the app's secret printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `"not_resigned":"its own signature is missing`) {
		t.Errorf("the forged delivery's attempt does not say it went unsigned:\n%s", out.String())
	}
}
