package station_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
)

// childEnv makes the test binary a station process (see child): the
// assembly the window and listen run, without their faces.
const childEnv = "HOOKSCOPE_STATION_CHILD"

// child runs a station on $DB forwarding to $APP until SIGINT, printing
// its receiver URL.
func child() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rs, err := forward.ParseRoutes([]string{os.Getenv("APP")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := station.Open(ctx, station.Config{DBPath: os.Getenv("DB"), Addr: "127.0.0.1:0",
		Forward: &forward.Config{Routes: rs, Policy: forward.Policy{Timeout: 30 * time.Second}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("listening http://%s/webhooks\n", st.Addr())
	<-ctx.Done()
	if err := st.Close(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type childProc struct {
	cmd *exec.Cmd
	url string
}

func startChild(t *testing.T, db, app string) *childProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "DB="+db, "APP="+app)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				line <- u
			}
		}
	}()
	select {
	case u := <-line:
		return &childProc{cmd: cmd, url: u}
	case <-time.After(30 * time.Second):
		t.Fatal("the station process did not start")
	}
	return nil
}

func (c *childProc) kill(t *testing.T) {
	t.Helper()
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

func (c *childProc) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("station process did not stop cleanly: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("station process did not stop within 30 s")
	}
}

// TestKill9WithForwardsPending: a station process acks deliveries while
// the app holds the first one unanswered (so the rest wait in the queue),
// is killed with SIGKILL, and restarts on the same store: every
// acknowledged delivery reaches the app, in order, and the one that was
// under way at the kill comes again marked as a re-forward (the others
// are not).
func TestKill9WithForwardsPending(t *testing.T) {
	if testing.Short() {
		t.Skip("runs station processes")
	}
	app := newRawApp(t, "")
	hold := make(chan struct{})
	app.setAnswer(func([]byte) (int, string, time.Duration) {
		<-hold
		return 200, "ok", 0
	})
	db := filepath.Join(t.TempDir(), "crash.db")
	p := startChild(t, db, app.url("/hook"))
	g := simulate.New(7)
	var want []string
	for range 20 {
		b := message(g, "media.ready")
		if code, _ := post(t, p.url, b, nil); code != 200 {
			t.Fatalf("ack %d", code)
		}
		want = append(want, string(b))
	}
	app.waitFor(t, "got the first delivery", 10*time.Second, func(r [][]byte) bool { return len(r) >= 1 })
	p.kill(t)
	close(hold)

	p = startChild(t, db, app.url("/hook"))
	app.waitFor(t, "got all 20 after the restart", 20*time.Second, func(r [][]byte) bool { return len(r) >= 21 })
	time.Sleep(300 * time.Millisecond)
	got := app.bodies()
	// The first came twice: once before the kill, once after.
	if !slices.Equal(got[1:], want) || got[0] != want[0] {
		t.Fatalf("the app got %d bodies; want the first, then all 20 in order", len(got))
	}
	p.stop(t)

	s, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id := int64(1); id <= 20; id++ {
		as, err := s.ForwardAttempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 1 || !as[0].OK() {
			t.Fatalf("delivery %d: %d attempts recorded (%+v)", id, len(as), as)
		}
		if re := as[0].Reforward; re != (id == 1) {
			t.Errorf("delivery %d: reforward %v", id, re)
		}
	}
}

// TestRestartResumesQueue: a clean stop with deliveries waiting for a
// dead app leaves them owed; the next run sends them first, with no
// re-forward mark (nothing was under way), then new ones.
func TestRestartResumesQueue(t *testing.T) {
	app := newRawApp(t, "")
	addr := app.ln.Addr().String()
	app.close()
	db := filepath.Join(t.TempDir(), "h.db")
	rs := routes(t, "http://"+addr+"/")
	st, err := station.Open(context.Background(), station.Config{DBPath: db, Addr: "127.0.0.1:0", Forward: &forward.Config{Routes: rs}})
	if err != nil {
		t.Fatal(err)
	}
	g := simulate.New(8)
	var want []string
	for range 5 {
		b := message(g, "media.ready")
		post(t, "http://"+st.Addr()+"/", b, nil)
		want = append(want, string(b))
	}
	time.Sleep(400 * time.Millisecond)
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	app = newRawApp(t, addr)
	st = open(t, db, &forward.Config{Routes: rs})
	b := message(g, "media.ready")
	post(t, "http://"+st.Addr()+"/", b, nil)
	want = append(want, string(b))
	app.waitFor(t, "got all 6", 15*time.Second, func(r [][]byte) bool { return len(r) >= 6 })
	if got := app.bodies(); !slices.Equal(got, want) {
		t.Fatalf("got %d bodies, want the 5 owed then the new one", len(got))
	}
	waitAttempts(t, st, 1, 2)
	as, _ := st.Forwarder().Attempts(context.Background(), 1)
	for _, a := range as {
		if a.Reforward {
			t.Errorf("attempt %d of delivery 1 marked re-forward after a clean stop: %+v", a.Number, a)
		}
	}
}
