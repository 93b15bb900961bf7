package forwardagain_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/forwardagain"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

func newCmd(env *cmdutil.Env) *cobra.Command { return forwardagain.NewCmd(env, nil) }

// app records what it is sent and answers status.
type app struct {
	mu     sync.Mutex
	bodies []string
	sigs   []string
	status int
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.bodies = append(a.bodies, string(b))
	a.sigs = append(a.sigs, r.Header.Get(inspector.SignatureHeader))
	a.mu.Unlock()
	w.WriteHeader(a.status)
}

func TestForwardAgain(t *testing.T) {
	path := clitest.SeedStore(t)
	a := &app{status: 200}
	srv := httptest.NewServer(a)
	defer srv.Close()

	// A store that never forwarded needs --to.
	res := clitest.Run(t, newCmd, nil, "forward-again", "1", "--db", path)
	if res.Code != 2 || !strings.Contains(res.Stderr, "give --to URL") {
		t.Fatalf("no route: exit %d %s", res.Code, res.Stderr)
	}
	res = clitest.Run(t, newCmd, map[string]string{"DEV": "dev-secret"}, "forward-again", "1", "2", "--db", path, "--to", srv.URL+"/hooks", "--resign-secret-env", "DEV", "--json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	var at struct {
		DeliveryID int64  `json:"delivery_id"`
		Kind       string `json:"kind"`
		Status     int    `json:"status"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &at); err != nil || len(lines) != 2 || at.DeliveryID != 2 || at.Kind != "again" || at.Status != 200 {
		t.Errorf("attempts: %v %s", err, res.Stdout)
	}
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, _ := db.Get(context.Background(), 1)
	if len(a.bodies) != 2 || a.bodies[0] != string(rec.Delivery.Body) || a.sigs[0] != inspector.Sign([]byte("dev-secret"), rec.Delivery.Body) {
		t.Errorf("the app got %d bodies, signature %q", len(a.bodies), a.sigs)
	}
	if as, _ := db.ForwardAttempts(context.Background(), 1); len(as) != 1 || as[0].Kind != "again" {
		t.Errorf("recorded: %+v", as)
	}
	// The app's refusal is a failure (exit 1), still recorded.
	a.status = 500
	res = clitest.Run(t, newCmd, nil, "forward-again", "3", "--db", path, "--to", srv.URL+"/hooks")
	if res.Code != 1 || !strings.Contains(res.Stdout, "delivery 3 →") || !strings.Contains(res.Stderr, "not taken") {
		t.Errorf("500: exit %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	// The store's own routes, as listen left them.
	a.status = 200
	if _, err := db.ClaimRoute(context.Background(), srv.URL+"/from-store", "listen", time.Now(), time.Second); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseRoute(context.Background(), srv.URL+"/from-store", "listen", false); err != nil {
		t.Fatal(err)
	}
	res = clitest.Run(t, newCmd, nil, "forward-again", "2", "--db", path)
	if res.Code != 0 || !strings.Contains(res.Stdout, "/from-store") {
		t.Errorf("store's route: exit %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	if r := clitest.Run(t, newCmd, nil, "forward-again", "2", "--db", path, "--route", "nope"); r.Code != 1 || !strings.Contains(r.Stderr, "its routes: "+srv.URL) {
		t.Errorf("unknown route: exit %d %s", r.Code, r.Stderr)
	}
	for _, args := range [][]string{{"forward-again"}, {"forward-again", "x"}, {"forward-again", "1", "--route", "a", "--to", srv.URL}} {
		if r := clitest.Run(t, newCmd, nil, append(args, "--db", path)...); r.Code != 2 {
			t.Errorf("%v: exit %d", args, r.Code)
		}
	}
}
