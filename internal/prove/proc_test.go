package prove

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hookscopeBin builds the binary once per test into the test's temp dir.
// The Go build cache makes the second build of a run a link only.
func hookscopeBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin, err := BuildHookscope(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// listenProc is a running `hookscope listen --json`.
type listenProc struct {
	cmd *exec.Cmd
	url string

	mu     sync.Mutex
	out    bytes.Buffer // every stdout line
	errb   bytes.Buffer
	ids    map[int64]bool // delivery ids printed (analyzed)
	idSeen chan struct{}  // pulsed on every printed delivery
	done   chan struct{}  // stdout closed
}

// startListen starts the listener and waits for its "listening" line.
func startListen(t *testing.T, bin, home string, env []string, args ...string) *listenProc {
	t.Helper()
	return startProc(t, bin, home, env, append([]string{"listen", "--json", "--addr", "127.0.0.1:0"}, args...)...)
}

// startProc starts a hookscope command that prints --json lines, the
// first naming its URL "listening" (listen, relay), and waits for it.
func startProc(t *testing.T, bin, home string, env []string, args ...string) *listenProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = ChildEnv(home, env...)
	p := &listenProc{cmd: cmd, ids: map[int64]bool{}, idSeen: make(chan struct{}, 1), done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &p.mu, b: &p.errb}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	listening := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var v struct {
				Listening  string `json:"listening"`
				DeliveryID int64  `json:"delivery_id"`
			}
			json.Unmarshal(line, &v)
			p.mu.Lock()
			p.out.Write(line)
			p.out.WriteByte('\n')
			if v.DeliveryID > 0 {
				p.ids[v.DeliveryID] = true
			}
			p.mu.Unlock()
			if v.Listening != "" {
				listening <- v.Listening
			}
			if v.DeliveryID > 0 {
				select {
				case p.idSeen <- struct{}{}:
				default:
				}
			}
		}
	}()
	select {
	case p.url = <-listening:
	case <-p.done:
		t.Fatalf("hookscope %s exited before listening: %s", args[0], p.stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("hookscope %s did not start within 30 s: %s", args[0], p.stderr())
	}
	return p
}

func (p *listenProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *listenProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

// kill sends SIGKILL: no handler, no flush, no goodbye.
func (p *listenProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	<-p.done
}

// stop sends SIGINT and waits for a clean exit.
func (p *listenProc) stop(t *testing.T) {
	t.Helper()
	p.stopWith(t, os.Interrupt)
}

// stopWith sends sig and waits for a clean exit.
func (p *listenProc) stopWith(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() { werr <- p.cmd.Wait() }()
	select {
	case err := <-werr:
		if err != nil {
			t.Fatalf("listen did not stop cleanly: %v\nstderr: %s", err, p.stderr())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Signal(syscall.SIGKILL)
		t.Fatalf("listen did not stop within 30 s of SIGINT")
	}
	<-p.done
}

// waitIDs waits until the listener has printed every id in want.
func (p *listenProc) waitIDs(t *testing.T, want []int64, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		p.mu.Lock()
		missing := 0
		for _, id := range want {
			if !p.ids[id] {
				missing++
			}
		}
		p.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-p.idSeen:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("after %v the restarted listener still had not analyzed %d of %d recovered deliveries", within, missing, len(want))
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
