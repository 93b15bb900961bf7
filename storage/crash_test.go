package storage

import (
	"bufio"
	"context"
	"database/sql"
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
	db, err := OpenWith(path, Options{Inbox: os.Getenv(crashHelperEnv+"_INBOX") != ""})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	if os.Getenv(crashHelperEnv+"_HOLD") != "" {
		// Keep the mover from committing: every ack from here on is in the
		// inbox only, so the parent's Open must recover all of them. The
		// first insert reserves the block of ids the rest use.
		id, err := db.InsertDelivery(context.Background(), delivery(0, "first"))
		if err != nil {
			fmt.Println("insert:", err)
			os.Exit(3)
		}
		fmt.Printf("%d first\n", id)
		if err := db.inbox.WaitMoved(id); err != nil {
			fmt.Println("move:", err)
			os.Exit(3)
		}
		other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(3)
		}
		conn, err := other.Conn(context.Background())
		if err == nil {
			_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
		}
		if err != nil {
			fmt.Println("hold the write lock:", err)
			os.Exit(3)
		}
	}
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
// store is opened again, with the inbox (the receiver's path) and without.
func TestKillNineLosesNothingAcked(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	t.Run("sqlite", func(t *testing.T) { killNine(t, false, false) })
	t.Run("inbox", func(t *testing.T) { killNine(t, true, false) })
	t.Run("inbox-only", func(t *testing.T) { killNine(t, true, true) })
}

// killNine runs the helper; inbox makes it receive through the inbox, and
// hold keeps its mover from committing, so the acks are in the inbox only.
func killNine(t *testing.T, inbox, hold bool) {
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+path)
	if inbox {
		cmd.Env = append(cmd.Env, crashHelperEnv+"_INBOX=1")
	}
	if hold {
		cmd.Env = append(cmd.Env, crashHelperEnv+"_HOLD=1")
	}
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
	// Opening the store recovers what the killed process left in its inbox.
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
	if !inbox {
		return
	}
	// Recovery ran once: opening again applies nothing twice.
	db.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if n, err := again.Count(context.Background(), Filter{}); err != nil || n != stored {
		t.Errorf("second open: %d deliveries (%v), want %d", n, err, stored)
	}
}
