package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/plural"
)

// formatHelp says in one line what each export format is for.
func formatHelp(f export.Format) string {
	switch f {
	case export.JSON:
		return "a folder of pretty JSON files, one per delivery, for reading"
	case export.Fixtures:
		return "a folder of test fixtures, one per event type, signed with the secret below"
	case export.Curl:
		return "a folder with replay.sh (curl, byte-exact bodies)"
	case export.HAR:
		return "one HAR 1.2 file: browser devtools, HTTP Toolkit, Hookscope import"
	case export.NDJSON:
		return "one file, a delivery per line, byte-exact (Hookscope import)"
	}
	return ""
}

// exportView is "Export selection…".
type exportView struct {
	win *mainWindow
	rs  replayStore

	Pick      *selectionPicker
	Format    *widget.Select
	FormatTip *widget.Label
	Out       *widget.Entry
	Browse    *widget.Button
	Overwrite *widget.Check
	Reveal    *widget.Check
	Secret    *widget.Entry
	Export    *widget.Button
	Result    *widget.Label

	// summary is the last finished export (tests read it).
	summary *export.Summary
	content fyne.CanvasObject
}

// openExport shows the "Export selection…" dialog.
func (m *mainWindow) openExport() *exportView {
	rs, ok := m.replayDeps()
	if !ok {
		return nil
	}
	v := newExportView(m, rs)
	m.showDialog("Export selection", v.content, fyne.NewSize(860, 560), nil)
	return v
}

func newExportView(m *mainWindow, rs replayStore) *exportView {
	v := &exportView{win: m, rs: rs}
	v.Pick = newSelectionPicker(m)
	var names []string
	for _, f := range export.Formats() {
		names = append(names, string(f))
	}
	v.FormatTip = widget.NewLabel("")
	v.FormatTip.Wrapping = fyne.TextWrapWord
	v.Out = widget.NewEntry()
	v.Out.SetPlaceHolder("folder or file to write")
	v.Browse = widget.NewButtonWithIcon("Choose…", theme.FolderOpenIcon(), v.choose)
	v.Overwrite = widget.NewCheck("write into a non-empty folder / over a file", nil)
	v.Reveal = widget.NewCheck("reveal credentials (Authorization, cookies, tokens) instead of [REDACTED]", nil)
	v.Secret = passwordEntry("secret to sign the fixtures with (written in no file)")
	v.Export = widget.NewButtonWithIcon("Export", theme.DocumentSaveIcon(), v.run)
	v.Export.Importance = widget.HighImportance
	v.Result = widget.NewLabel("")
	v.Result.Wrapping = fyne.TextWrapWord
	v.Format = widget.NewSelect(names, func(string) { v.formatChanged() })
	v.Format.SetSelected(string(export.HAR))

	form := widget.NewForm(
		widget.NewFormItem("Format", v.Format),
		widget.NewFormItem("", v.FormatTip),
		widget.NewFormItem("Write to", container.NewBorder(nil, nil, nil, v.Browse, v.Out)),
		widget.NewFormItem("", v.Overwrite),
		widget.NewFormItem("Credentials", v.Reveal),
		widget.NewFormItem("Fixtures secret", v.Secret),
	)
	v.content = container.NewVBox(v.Pick.content, form, container.NewHBox(v.Export), v.Result)
	return v
}

func (v *exportView) format() export.Format { return export.Format(v.Format.Selected) }

// formatChanged updates the tip, the secret and a default output path.
func (v *exportView) formatChanged() {
	f := v.format()
	v.FormatTip.SetText(formatHelp(f))
	if f == export.Fixtures {
		v.Secret.Enable()
	} else {
		v.Secret.Disable()
	}
	// Suggest a fresh path for the format unless the user typed one.
	if v.Out.Text == "" || strings.HasPrefix(filepath.Base(v.Out.Text), "hookscope-") {
		v.Out.SetText(defaultExportPath(f, time.Now()))
	}
}

// defaultExportPath is a new name in the home folder.
func defaultExportPath(f export.Format, now time.Time) string {
	dir, err := os.UserHomeDir()
	if err != nil {
		dir = os.TempDir()
	}
	name := "hookscope-" + now.Format("20060102-150405")
	switch f {
	case export.HAR:
		name += ".har"
	case export.NDJSON:
		name += ".ndjson"
	default:
		name += "-" + string(f)
	}
	return filepath.Join(dir, name)
}

// choose opens the folder or file picker for the format.
func (v *exportView) choose() {
	if v.format().IsFolder() {
		d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				v.Out.SetText(filepath.Join(u.Path(), filepath.Base(defaultExportPath(v.format(), time.Now()))))
			}
		}, v.win.w)
		d.Show()
		return
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil || w == nil {
			return
		}
		// The picker creates the file; the export replaces it.
		path := w.URI().Path()
		_ = w.Close()
		v.Out.SetText(path)
		v.Overwrite.SetChecked(true)
	}, v.win.w)
	d.SetFileName(filepath.Base(defaultExportPath(v.format(), time.Now())))
	d.Show()
}

// run exports the selection off the UI goroutine.
func (v *exportView) run() {
	f, limit, extra, err := v.Pick.pick()
	out := strings.TrimSpace(v.Out.Text)
	if err == nil && out == "" {
		err = errors.New("choose where to write the export")
	}
	if err != nil {
		v.Result.Importance = widget.DangerImportance
		v.Result.SetText(err.Error())
		return
	}
	opts := export.Options{Format: v.format(), Out: out, Overwrite: v.Overwrite.Checked, Reveal: v.Reveal.Checked,
		Target: v.win.localURL(), Version: v.win.svc.Version}
	if opts.Format == export.Fixtures && v.Secret.Text != "" {
		opts.Secret = []byte(v.Secret.Text)
	}
	v.Export.Disable()
	v.Result.Importance = widget.MediumImportance
	v.Result.SetText("Exporting…")
	store, rs := v.win.svc.Store, v.rs
	v.win.bridge.Go(func() func() {
		ctx := context.Background()
		opts.Target = curlTarget(ctx, store, opts.Target)
		recs, err := loadSelection(ctx, store, rs, f, limit, extra)
		var sum *export.Summary
		if err == nil {
			sum, err = export.Export(ctx, export.Records(recs...), opts)
		}
		return func() {
			v.Export.Enable()
			if err != nil {
				v.Result.Importance = widget.DangerImportance
				v.Result.SetText("Nothing written: " + err.Error())
				return
			}
			v.summary = sum
			v.Result.Importance = widget.SuccessImportance
			v.Result.SetText(exportSummaryText(sum, opts.Reveal))
			v.win.showStatus(fmt.Sprintf("Exported %s to %s.", plural.Count(sum.Deliveries, "delivery", "deliveries"), sum.Out))
		}
	})
}

// curlTarget is the default URL of curl commands, the same for the curl
// export and the detail pane's "Copy as curl": the consumer last replayed
// to, else local (the receiver's URL). It reads the store: call it off the
// UI goroutine.
func curlTarget(ctx context.Context, store Store, local string) string {
	if last, err := replay.LastTarget(ctx, store); err == nil && last != "" {
		return last
	}
	return local
}

func exportSummaryText(s *export.Summary, reveal bool) string {
	msg := fmt.Sprintf("Wrote %s of %s (%s) to %s.", plural.Count(len(s.Files), "file", "files"), plural.Count(s.Deliveries, "delivery", "deliveries"), s.Format, s.Out)
	if !reveal {
		msg += " Credentials are redacted."
	}
	if len(s.Skipped) > 0 {
		n := min(len(s.Skipped), 5)
		msg += "\nLeft out: " + strings.Join(s.Skipped[:n], "; ")
		if len(s.Skipped) > n {
			msg += fmt.Sprintf(" … and %d more", len(s.Skipped)-n)
		}
	}
	return msg
}
