package prove

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// The fault run of issue 18: the disk fills under load and frees again.
// The listener answers 503 while it cannot store, says so once (not once
// per request), stores and analyzes again once there is room, and stops
// cleanly on a signal.
func TestDiskFullAndFreedAgain(t *testing.T) {
	bin := hookscopeBin(t)
	disk := smallDisk(t, 160)
	db := filepath.Join(disk, "full.db")
	p := startListen(t, bin, t.TempDir(), nil, "--db", db)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("listen's stderr:\n%s", p.stderr())
		}
	})
	body := []byte(`{"hook_uuid":"h","events":[]}` + strings.Repeat(" ", 64<<10))
	post := func() (int, int64) {
		resp, err := http.Post(p.url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		id, _ := strconv.ParseInt(resp.Header.Get("X-Hookscope-Delivery"), 10, 64)
		return resp.StatusCode, id
	}
	var acked []int64
	ack := func(code int, id int64) {
		if code == http.StatusOK {
			acked = append(acked, id)
		}
	}
	for range 3 {
		ack(post())
	}
	filler := fill(t, disk)
	// The inbox writes into space it holds already, so acks go on until
	// that is used up; then the answer is 503.
	refused := 0
	for i := 0; refused < 100; i++ {
		if i > 2000 {
			t.Fatalf("still acknowledging after %d posts to a full disk", i)
		}
		code, id := post()
		switch code {
		case http.StatusOK:
			ack(code, id)
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("answer %d on a full disk", code)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, id := post()
		if code == http.StatusOK {
			ack(code, id)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d 20 s after the disk was freed\nstderr: %s", code, p.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 3 {
		ack(post())
	}
	// Everything acknowledged is analyzed, before and after the fault.
	p.waitIDs(t, acked, 60*time.Second)
	p.stop(t)
	stderr := p.stderr()
	// One line each time the state changes: the inbox's spare segment
	// (space it held already) can take a few more batches after the first
	// refusal, so the store may fail, work and fail again once.
	failed, again := strings.Count(stderr, "cannot store deliveries since"), strings.Count(stderr, "storing deliveries again")
	if failed < 1 || failed > 2 || again != failed {
		t.Errorf("%d lines saying the store failed, %d saying it works again:\n%s", failed, again, stderr)
	}
	if lines := strings.Count(stderr, "\n"); lines > 12 {
		t.Errorf("%d lines on stderr for one fault:\n%s", lines, stderr)
	}
	t.Logf("%d acknowledged, %d refused; stderr:\n%s", len(acked), refused, stderr)
}
