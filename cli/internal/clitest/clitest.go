// Package clitest holds what the command packages' tests share: running a
// command in-process, output buffers safe to read while a command writes,
// and a seeded store.
package clitest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// Buffer collects output written from several goroutines and lets a test
// wait for it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines are the complete and partial lines written so far.
func (b *Buffer) Lines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// WaitLines waits until n lines were written and returns them; the
// time-out only guards against hangs.
func (b *Buffer) WaitLines(t testing.TB, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ls := b.Lines(); len(ls) >= n {
			return ls
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("wanted %d lines, got:\n%s", n, b.String())
	return nil
}

// WaitFor waits until the output contains want; the time-out only guards
// against hangs.
func (b *Buffer) WaitFor(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %q:\n%s", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Result is a finished command run.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs `hookscope <args>` in-process on a tree holding only the
// command newCmd builds, with an empty stdin and getenv as the
// environment.
func Run(t testing.TB, newCmd func(*cmdutil.Env) *cobra.Command, getenv map[string]string, args ...string) Result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cmdutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return getenv[k] }}
	code := cmdutil.RunCommand(context.Background(), env, newCmd, args)
	return Result{code, out.String(), errb.String()}
}

// CaptureSecret signs the deliveries SeedStore stores.
const CaptureSecret = "capture-secret-A1"

// SeedStore makes a store holding analyzed deliveries: a two-event batch
// (1), a media.ready (2), a live_event.registration (3), each signed with
// CaptureSecret. It returns the store's path.
func SeedStore(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hooks.db")
	db, err := storage.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := simulate.New(21)
	msgs := []simulate.Message{
		g.Message(g.Event(catalog.TypeMediaCreated), g.Event(catalog.TypeMediaProcessing)),
		g.Message(g.Event(catalog.TypeMediaReady)),
		g.Message(g.Event(catalog.TypeLiveEventRegistration)),
	}
	ctx := context.Background()
	for _, m := range msgs {
		body := m.Body()
		hs := append([]inspector.Header{{Name: "Host", Value: "abc.trycloudflare.com"}}, m.Headers([]byte(CaptureSecret))...)
		if _, err := db.InsertDelivery(ctx, &inspector.Delivery{Method: "POST", Path: "/webhooks", Headers: hs, Body: body,
			BodyLength: int64(len(body)), Status: 200, RemoteAddr: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	eng := inspector.NewEngine(db, inspector.Options{Secrets: [][]byte{[]byte(CaptureSecret)}})
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// Parse executes cmd on args as its own root, silently, and returns the
// error: with a runF that records its Options, a parsing test sees what
// the command would run with, or the usage error it answers.
func Parse(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(cmdutil.FlagError)
	return cmd.Execute()
}

// Getenv is an environment lookup over a map.
func Getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// ParseCase is one row of a parsing table: the arguments, and either a
// check of the Options they give (Want) or the usage error they must give
// (Err, a part of its message).
type ParseCase[O any] struct {
	Args []string
	Want func(*O) bool
	Err  string
}

// ParseTable runs each case through the command newCmd builds around a
// runF that records its Options, so parsing and validation are checked
// without running anything.
func ParseTable[O any](t *testing.T, newCmd func(runF func(context.Context, *O) error) *cobra.Command, cases []ParseCase[O]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.Join(tc.Args, " "), func(t *testing.T) {
			var got *O
			err := Parse(newCmd(func(_ context.Context, o *O) error { got = o; return nil }), tc.Args...)
			if tc.Err != "" {
				if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tc.Err) || got != nil {
					t.Fatalf("err %v, want a usage error with %q", err, tc.Err)
				}
				return
			}
			if err != nil || got == nil || !tc.Want(got) {
				t.Fatalf("err %v, options %+v", err, got)
			}
		})
	}
}
