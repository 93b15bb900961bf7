package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/storage"
)

// codedErr is an SQLite error as the driver returns it: with a code.
type codedErr int

func (e codedErr) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codedErr) Code() int     { return int(e) }

func TestStoreProblemSaysWhyAndWhatToDo(t *testing.T) {
	const path = "/home/dev/.local/share/hookscope/hooks.db"
	tests := []struct {
		name        string
		err         error
		reason, fix string
	}{
		{"damaged", fmt.Errorf("open store %s: %w (file is not a database (26))", path, storage.ErrDamaged), "damaged", "--salvage --db " + path},
		{"no permission", &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}, "read-only", "write permission on /home/dev/.local/share/hookscope"},
		{"read-only folder", fmt.Errorf("create migrations table: %w", codedErr(1544)), "read-only", "-wal and -shm"},
		{"locked", fmt.Errorf("create migrations table: %w", codedErr(5)), "locked", "Close the program"},
		{"other", errors.New("disk I/O error"), "disk I/O error", "choose another store"},
	}
	for _, tc := range tests {
		reason, fix := storeProblem(path, tc.err)
		if !strings.Contains(reason, tc.reason) || !strings.Contains(fix, tc.fix) {
			t.Errorf("%s: reason %q, fix %q; want %q and %q in them", tc.name, reason, fix, tc.reason, tc.fix)
		}
	}
}

// TestStoreProblemScreenThenAnotherStore: a store that cannot be opened
// shows the screen (file, reason, fix) instead of no window; another store
// chosen there opens the window and is remembered.
func TestStoreProblemScreenThenAnotherStore(t *testing.T) {
	a := test.NewTempApp(t)
	w := a.NewWindow("Hookscope")
	w.Resize(fyne.NewSize(960, 640))
	bad := fmt.Errorf("open store /ro/hooks.db: %w", &fs.PathError{Op: "open", Path: "/ro/hooks.db", Err: fs.ErrPermission})
	var opened *session
	c := &storeChooser{a: a, w: w, boot: newBridge(nil, true),
		open: func(path string) (*session, error) {
			if path == "/ro/hooks.db" {
				return nil, bad
			}
			return &session{}, nil
		},
		opened: func(s *session) { opened = s },
	}
	c.try(c.firstStore("/ro/hooks.db"), false)
	if c.View == nil || w.Content() != c.View.content || opened != nil {
		t.Fatal("no store problem screen")
	}
	texts := strings.Join(labelTexts(c.View.content), "\n")
	for _, want := range []string{"/ro/hooks.db", "read-only", "write permission on /ro"} {
		if !strings.Contains(texts, want) {
			t.Errorf("the screen does not say %q:\n%s", want, texts)
		}
	}
	if w.Content().MinSize().Width > 960 {
		t.Errorf("the screen needs %.0f px", w.Content().MinSize().Width)
	}
	if _, err := c.result(); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Run would return %v", err)
	}
	c.try("/home/dev/other.db", true) // what Choose another store… does with the file picked
	if opened == nil {
		t.Fatal("the chosen store did not open the window")
	}
	if got := a.Preferences().String(storePrefKey); got != "/home/dev/other.db" {
		t.Fatalf("remembered %q", got)
	}
	if got := c.firstStore(""); got != "/home/dev/other.db" {
		t.Fatalf("next start opens %q", got)
	}
	if got := c.firstStore("/env/hooks.db"); got != "/env/hooks.db" {
		t.Fatalf("HOOKSCOPE_DB lost to the remembered store: %q", got)
	}
}
