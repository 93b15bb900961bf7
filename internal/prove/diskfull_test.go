package prove

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector/simulate"
)

// smallDisk mounts a tmpfs of size MiB on a new directory and returns it;
// the test is skipped where that is not allowed (not root, no mount).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file until the disk is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// The fault run of issues 18 and 24: the disk fills under load, with
// forwarding on, and frees again. The listener answers 503 while it
// cannot store (never a 200 for a delivery it did not store), says so
// once per change of state (not once per request), answers 200 again as
// soon as there is room, forwards nothing it could not record (after a
// restart no delivery reaches the app twice), and stops on SIGTERM.
func TestDiskFullAndFreedAgain(t *testing.T) {
	bin := hookscopeBin(t)
	disk := smallDisk(t, 160)
	db := filepath.Join(disk, "full.db")
	app := &holdingApp{hold: true} // the first forward stays under way
	app.cond = sync.NewCond(&app.mu)
	srv := httptest.NewServer(app)
	defer srv.Close()
	args := []string{"--db", db, "--forward-to", srv.URL + "/hook"}
	p := startListen(t, bin, t.TempDir(), nil, args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("listen's stderr:\n%s", p.stderr())
		}
	})
	g := simulate.New(17)
	post := func() (int, int64, string) {
		body := string(Body(g, 64<<10))
		resp, err := http.Post(p.url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		id, _ := strconv.ParseInt(resp.Header.Get("X-Hookscope-Delivery"), 10, 64)
		return resp.StatusCode, id, body
	}
	var acked []int64
	var bodies []string
	ack := func(code int, id int64, body string) {
		if code == http.StatusOK {
			acked = append(acked, id)
			bodies = append(bodies, body)
		}
	}
	for range 3 {
		ack(post())
	}
	app.waitBodies(t, 1, 10*time.Second)
	filler := fill(t, disk)
	// SQLite writes into pages and WAL frames it holds already until they
	// are used up; then the answer is 503.
	refused := 0
	for i := 0; refused < 100; i++ {
		if i > 2000 {
			t.Fatalf("still acknowledging after %d posts to a full disk", i)
		}
		code, id, body := post()
		switch code {
		case http.StatusOK:
			ack(code, id, body)
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("answer %d on a full disk", code)
		}
	}
	// The app answers the forward under way: it cannot be recorded, so
	// nothing more is sent while the disk is full.
	app.release()
	time.Sleep(time.Second)
	if got := app.waitBodies(t, 1, time.Second); len(got) != 1 {
		t.Errorf("the app got %d deliveries while their attempts could not be recorded, want the 1 under way", len(got))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Room again: the next request is stored and answered 200.
	if code, id, body := post(); code != http.StatusOK {
		t.Fatalf("answered %d right after the disk was freed\nstderr: %s", code, p.stderr())
	} else {
		ack(code, id, body)
	}
	for range 3 {
		ack(post())
	}
	// Everything acknowledged is analyzed, before and after the fault.
	p.waitIDs(t, acked, 60*time.Second)
	app.waitBodies(t, len(acked), 30*time.Second)
	p.stopWith(t, syscall.SIGTERM)
	stderr := p.stderr()
	// One line each time the state changes: SQLite's room held already can
	// take a few more commits after the first refusal, so the store may
	// fail, work and fail again once.
	failed, again := strings.Count(stderr, "cannot store deliveries since"), strings.Count(stderr, "storing deliveries again")
	if failed < 1 || failed > 2 || again != failed {
		t.Errorf("%d lines saying the store failed, %d saying it works again:\n%s", failed, again, stderr)
	}
	if n := strings.Count(stderr, "forward: cannot record attempts in the store since"); n != 1 || strings.Count(stderr, "forward: recording attempts again") != 1 {
		t.Errorf("the forward fault is not said once each way:\n%s", stderr)
	}
	if lines := strings.Count(stderr, "\n"); lines > 16 {
		t.Errorf("%d lines on stderr for one fault:\n%s", lines, stderr)
	}
	// A restart sends nothing again: every attempt that reached the app
	// was recorded.
	p = startListen(t, bin, t.TempDir(), nil, args...)
	time.Sleep(time.Second)
	p.stop(t)
	got := app.waitBodies(t, len(acked), time.Second)
	seen := map[string]int{}
	for _, b := range got {
		seen[b]++
	}
	for i, b := range bodies {
		if seen[b] != 1 {
			t.Errorf("acked delivery %d reached the app %d times", acked[i], seen[b])
		}
	}
	if len(got) != len(acked) {
		t.Errorf("the app got %d bodies for %d acked deliveries", len(got), len(acked))
	}
	t.Logf("%d acknowledged, %d refused; stderr:\n%s", len(acked), refused, stderr)
}
