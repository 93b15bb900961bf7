package tunnel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// fakeBinary is the fake cloudflared, built once by TestMain. It is set
// before any test runs and never changed after.
var fakeBinary string

func TestMain(m *testing.M) {
	if os.Getenv("HOOKSCOPE_TUNNEL_HELPER") == "1" {
		os.Exit(helperParent())
	}
	dir, err := os.MkdirTemp("", "fakecloudflared")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	name := "cloudflared"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	fakeBinary = filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-o", fakeBinary, "./internal/fakecloudflared").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build fake cloudflared: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// helperParent plays Hookscope in TestKilledParentLeavesNoOrphan: it starts
// a supervised fake, says when it is ready and waits to be killed.
func helperParent() int {
	s := New(Config{Binary: os.Getenv("HELPER_BINARY"), LocalURL: "http://127.0.0.1:1", PollInterval: 20 * time.Millisecond})
	ready := make(chan struct{})
	s.Subscribe(func(e Event) {
		if e.Kind == StateChanged && e.Status.State == Ready {
			close(ready)
		}
	})
	if err := s.Start(context.Background()); err != nil {
		fmt.Println("error", err)
		return 1
	}
	<-ready
	fmt.Println(s.State().PID)
	select {}
}

// recorder collects a supervisor's events.
type recorder struct {
	ch chan Event
}

func record(s *Supervisor) *recorder {
	r := &recorder{ch: make(chan Event, 1000)}
	s.Subscribe(func(e Event) { r.ch <- e })
	return r
}

// waitFor returns the first event matching pred, failing the test after a
// generous timeout (the fake is fast; the timeout only guards against hangs).
func (r *recorder) waitFor(t *testing.T, what string, pred func(Event) bool) Event {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	var seen []string
	for {
		select {
		case e := <-r.ch:
			seen = append(seen, fmt.Sprintf("%d/%s/%q", e.Kind, e.Status.State, e.Status.Reason))
			if pred(e) {
				return e
			}
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s; events seen: %s", what, strings.Join(seen, ", "))
		}
	}
}

func isState(st State) func(Event) bool {
	return func(e Event) bool { return e.Kind == StateChanged && e.Status.State == st }
}

// fastBackoff restarts after 10 ms.
func fastBackoff() backoff.BackOff { return backoff.NewConstantBackOff(10 * time.Millisecond) }

// testConfig is a fast configuration for the fake.
func testConfig(t *testing.T, env ...string) Config {
	t.Helper()
	return Config{
		Binary:       fakeBinary,
		LocalURL:     "http://127.0.0.1:9",
		Backoff:      fastBackoff,
		GracePeriod:  2 * time.Second,
		PollInterval: 20 * time.Millisecond,
		Env:          env,
		Logf:         t.Logf,
	}
}

func startSupervisor(t *testing.T, cfg Config) (*Supervisor, *recorder) {
	t.Helper()
	s := New(cfg)
	r := record(s)
	if err := s.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s, r
}

func logsContain(s *Supervisor, sub string) bool {
	for _, l := range s.Logs() {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}
