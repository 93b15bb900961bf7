package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	hstorage "github.com/hookscope/hookscope/storage"
)

// storePrefKey is where the app's preferences remember a store chosen on
// the store problem screen (HOOKSCOPE_DB still wins).
const storePrefKey = "store.path"

// storeChooser opens the window's store off the UI goroutine (a locked
// store answers only after SQLite's busy timeout) and shows the main
// window, or, when the store cannot be opened, a screen that names the
// file, the reason and the fix, with Choose another store…, New store in
// a folder… and Quit. A window started from the desktop menu has no
// terminal for the one line it printed before.
type storeChooser struct {
	a    fyne.App
	w    fyne.Window
	boot *bridge
	// open opens the store at path and everything that runs on it
	// (off the UI goroutine).
	open func(path string) (*session, error)
	// opened builds the main window over s (UI goroutine).
	opened func(s *session)

	// View is the store problem screen, nil until a store failed;
	// failed is that store's path.
	View   *storeErrorView
	failed string

	mu sync.Mutex
	// sess is the session opened, set as soon as it is, so that Run
	// closes it even when the window was closed meanwhile.
	sess *session
	// err is the last failure, nil once a store opened.
	err error
	// stopped is set once the app's loop ended: an opening that finishes
	// later builds no window.
	stopped bool
}

// stop keeps openings that finish from now on from building a window.
func (c *storeChooser) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

// firstStore is the store to open first: HOOKSCOPE_DB (dbPath), else the
// one chosen on an earlier store problem screen, else the default ("").
func (c *storeChooser) firstStore(dbPath string) string {
	if dbPath != "" {
		return dbPath
	}
	return c.a.Preferences().String(storePrefKey)
}

// try opens path; remember keeps it for the next start once it opened.
func (c *storeChooser) try(path string, remember bool) {
	shown := path
	if shown == "" {
		shown, _ = hstorage.DefaultPath()
	}
	wait := widget.NewLabelWithStyle("Opening the store "+shown+" …", fyne.TextAlignCenter, fyne.TextStyle{Italic: true})
	wait.Wrapping = fyne.TextWrapBreak
	c.w.SetContent(container.NewCenter(wait))
	c.boot.Go(func() func() {
		s, err := c.open(path)
		c.mu.Lock()
		c.sess, c.err = s, err
		c.mu.Unlock()
		return func() {
			c.mu.Lock()
			stopped := c.stopped
			c.mu.Unlock()
			if stopped {
				return
			}
			if err != nil {
				c.failed = shown
				c.View = newStoreErrorView(shown, err, c.chooseFile, c.chooseFolder, c.a.Quit)
				c.w.SetContent(c.View.content)
				return
			}
			if remember {
				c.a.Preferences().SetString(storePrefKey, path)
			}
			c.opened(s)
		}
	})
}

// opened returns what was opened and the last failure.
func (c *storeChooser) result() (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess, c.err
}

// chooseFile picks an existing store file.
func (c *storeChooser) chooseFile() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil || r == nil {
			return
		}
		path := r.URI().Path()
		r.Close()
		c.try(path, true)
	}, c.w)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".db"}))
	d.SetTitleText("Choose a store file (.db)")
	d.SetConfirmText("Open store")
	c.fit(d)
}

// chooseFolder makes (or opens) hooks.db in a folder.
func (c *storeChooser) chooseFolder() {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil || u == nil {
			return
		}
		c.try(filepath.Join(u.Path(), "hooks.db"), true)
	}, c.w)
	d.SetTitleText("Choose a folder for a new store (hooks.db)")
	d.SetConfirmText("Use this folder")
	c.fit(d)
}

// fit shows a file dialog as large as the window allows, in the folder
// of the store that failed.
func (c *storeChooser) fit(d *dialog.FileDialog) {
	if c.failed != "" {
		if l, err := storage.ListerForURI(storage.NewFileURI(filepath.Dir(c.failed))); err == nil {
			d.SetLocation(l)
		}
	}
	s := c.w.Canvas().Size()
	d.Resize(fyne.NewSize(min(900, s.Width-20), min(620, s.Height-20)))
	d.Show()
}

// storeErrorView is the store problem screen.
type storeErrorView struct {
	// Reason says what is wrong, Fix what to do; Details is the error as
	// returned, selectable for a bug report.
	Reason, Fix, Details *widget.Label
	Choose, NewStore     *widget.Button
	Quit                 *widget.Button
	content              fyne.CanvasObject
}

func newStoreErrorView(path string, err error, choose, newStore, quit func()) *storeErrorView {
	reason, fix := storeProblem(path, err)
	v := &storeErrorView{}
	title := widget.NewLabelWithStyle("Hookscope cannot open its store", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameSubHeadingText
	file := widget.NewLabelWithStyle(path, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	file.Selectable = true
	file.Wrapping = fyne.TextWrapBreak
	v.Reason = factLabel(reason, widget.DangerImportance)
	v.Fix = factLabel(fix, widget.MediumImportance)
	v.Details = widget.NewLabelWithStyle(err.Error(), fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	v.Details.Wrapping = fyne.TextWrapBreak
	v.Details.SizeName = theme.SizeNameCaptionText
	v.Choose = widget.NewButtonWithIcon("Choose another store…", theme.FolderOpenIcon(), choose)
	v.Choose.Importance = widget.HighImportance
	v.NewStore = widget.NewButtonWithIcon("New store in a folder…", theme.FolderNewIcon(), newStore)
	v.Quit = widget.NewButtonWithIcon("Quit", theme.LogoutIcon(), quit)
	form := container.New(layout.NewFormLayout(),
		widget.NewLabelWithStyle("Store", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}), file,
		widget.NewLabelWithStyle("Problem", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}), v.Reason,
		widget.NewLabelWithStyle("What to do", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}), v.Fix,
		widget.NewLabelWithStyle("Details", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}), v.Details,
	)
	buttons := container.NewHBox(v.Choose, v.NewStore, layout.NewSpacer(), v.Quit)
	body := container.NewVBox(container.NewBorder(nil, nil, widget.NewIcon(theme.NewErrorThemedResource(theme.ErrorIcon())), nil, title), form, widget.NewSeparator(), buttons)
	v.content = container.NewVScroll(container.NewPadded(body))
	return v
}

// sqliteCoded is an SQLite error with its result code (the driver's).
type sqliteCoded interface{ Code() int }

// SQLite's primary result codes the screen tells apart.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadOnly = 8
	sqliteCantOpen = 14
)

// storeProblem says in words why the store at path did not open, and
// what to do about it.
func storeProblem(path string, err error) (reason, fix string) {
	dir := filepath.Dir(path)
	var code sqliteCoded
	primary := -1
	if errors.As(err, &code) {
		primary = code.Code() & 0xff
	}
	other := " Or choose another store (your deliveries stay in this one)."
	switch {
	case errors.Is(err, hstorage.ErrDamaged):
		return "The file is damaged: it is not a store Hookscope can read.",
			fmt.Sprintf("Move it aside and keep it: `hookscope export rescued.ndjson --salvage --db %s` reads every delivery that can still be read. Then start Hookscope again for a new store, or choose another one.", path)
	case errors.Is(err, fs.ErrPermission), primary == sqliteReadOnly, primary == sqliteCantOpen:
		return "Hookscope may not write there: the folder or the file is read-only for you.",
			fmt.Sprintf("Give yourself write permission on %s and the files in it (the store, and its -wal and -shm files beside it), then start Hookscope again.%s", dir, other)
	case primary == sqliteBusy, primary == sqliteLocked:
		return "Another program holds the store locked.",
			"Close the program that has it open (a SQLite tool, a backup, another Hookscope that is stuck), then start Hookscope again." + other
	}
	return "It could not be opened: " + firstLine(err.Error()),
		"Fix what the details below say and start Hookscope again." + other
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
