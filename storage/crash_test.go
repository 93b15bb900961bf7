package storage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const crashHelperEnv = "HOOKSCOPE_STORAGE_CRASH_HELPER"

// TestCrashHelper is the child process of TestKillNineLosesNothingAcked:
// it inserts from many goroutines forever and prints "<id> <token>" for
// every insert that returned, exactly when a receiver would ack.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv(crashHelperEnv)
	if path == "" {
		t.Skip("helper process for TestKillNineLosesNothingAcked")
	}
	db, err := Open(path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := 0; ; i++ {
				token := fmt.Sprintf("g%d-%d", g, i)
				id, err := db.InsertDelivery(context.Background(), delivery(i, token))
				if err != nil {
					fmt.Println("insert:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%d %s\n", id, token)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestKillNineLosesNothingAcked kills a writing process with SIGKILL and
// checks that every insert it had acknowledged is in the store once the
// store is opened again, byte-exact.
func TestKillNineLosesNothingAcked(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int64]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		id, token, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil {
			continue // test framework chatter
		}
		if _, dup := acked[n]; dup {
			t.Errorf("id %d acked twice", n)
		}
		acked[n] = token
		if len(acked) == 300 {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("helper acked only %d inserts before exiting", len(acked))
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored, err := db.Count(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if stored < int64(len(acked)) {
		t.Errorf("%d deliveries stored, %d acked", stored, len(acked))
	}
	for id, token := range acked {
		rec, err := db.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("acked delivery %d lost: %v", id, err)
		}
		if string(rec.Delivery.Body) != token {
			t.Fatalf("delivery %d body %q, want %q", id, rec.Delivery.Body, token)
		}
	}
	t.Logf("%d acked inserts survived SIGKILL (%d stored)", len(acked), stored)
}
