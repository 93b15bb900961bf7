package storage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const orderHelperEnv = "HOOKSCOPE_STORAGE_ORDER_HELPER"

// TestOrderHelper is the second process of TestNewestFirstAcrossProcesses:
// it opens the store (the inbox is the first process's) and inserts one
// delivery per line read, printing its id.
func TestOrderHelper(t *testing.T) {
	path := os.Getenv(orderHelperEnv)
	if path == "" {
		t.Skip("helper process for TestNewestFirstAcrossProcesses")
	}
	db, err := OpenWith(path, Options{Inbox: true})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		id, err := db.InsertDelivery(context.Background(), delivery(0, sc.Text()))
		if err != nil {
			fmt.Println("insert:", err)
			os.Exit(3)
		}
		fmt.Println(id)
	}
	db.Close()
	os.Exit(0)
}

// Two processes write to one store, taking turns: one receives through
// the inbox, the other inserts directly (a second listener, an import).
// The store's newest-first list must show their deliveries in the order
// they were stored.
func TestNewestFirstAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	a := openInboxDB(t, path)
	defer a.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrderHelper$")
	cmd.Env = append(os.Environ(), orderHelperEnv+"="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	out := bufio.NewScanner(outPipe)
	var order []string
	for i := range 6 {
		tag := fmt.Sprintf("inbox-%d", i)
		if _, err := a.InsertDelivery(ctx, delivery(i, tag)); err != nil {
			t.Fatal(err)
		}
		order = append(order, tag)
		tag = fmt.Sprintf("direct-%d", i)
		fmt.Fprintln(in, tag)
		if !out.Scan() || strings.HasPrefix(out.Text(), "open") || strings.HasPrefix(out.Text(), "insert") {
			t.Fatalf("second process: %q", out.Text())
		}
		order = append(order, tag)
	}
	in.Close()
	// Everything the first process acked is in SQLite once moved.
	if err := a.inbox.WaitMoved(1 << 62); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var got []string
	for {
		rows, err := a.List(ctx, Filter{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, s := range rows {
			rec, err := a.Get(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(rec.Delivery.Body))
		}
		if len(got) == len(order) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := slices.Clone(order)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("newest first lists\n %v\nwant\n %v", got, want)
	}
}
