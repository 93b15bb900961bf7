package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/plural"
)

// importView is "Import…": a HAR file, an NDJSON file or a fixtures
// folder goes through the running engine, so imported deliveries are
// analyzed (signature, dedupe, order, contract) like received ones and
// appear in the list live.
type importView struct {
	win *mainWindow
	ing export.Ingester

	Path       *widget.Entry
	FileButton *widget.Button
	DirButton  *widget.Button
	Import     *widget.Button
	Result     *widget.Label

	// report is the last finished import (tests read it).
	report  *export.ImportReport
	content fyne.CanvasObject
}

// openImport shows the Import dialog.
func (m *mainWindow) openImport() *importView {
	ing, ok := m.ingester()
	if !ok {
		return nil
	}
	v := newImportView(m, ing)
	m.showDialog("Import deliveries", v.content, fyne.NewSize(760, 340), nil)
	return v
}

func newImportView(m *mainWindow, ing export.Ingester) *importView {
	v := &importView{win: m, ing: ing}
	v.Path = widget.NewEntry()
	v.Path.SetPlaceHolder("/path/to/capture.har, hooks.ndjson or a fixtures folder")
	v.FileButton = widget.NewButtonWithIcon("File…", theme.FileIcon(), func() {
		dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
			if err == nil && r != nil {
				v.Path.SetText(r.URI().Path())
				_ = r.Close()
			}
		}, m.w).Show()
	})
	v.DirButton = widget.NewButtonWithIcon("Folder…", theme.FolderOpenIcon(), func() {
		dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				v.Path.SetText(u.Path())
			}
		}, m.w).Show()
	})
	v.Import = widget.NewButtonWithIcon("Import", theme.DownloadIcon(), v.run)
	v.Import.Importance = widget.HighImportance
	v.Result = widget.NewLabel("The format is detected: a folder is read as fixtures, a file with a top-level \"log\" as HAR, anything else as NDJSON. A bad file imports nothing. Signatures are checked with the secrets in Settings.")
	v.Result.Wrapping = fyne.TextWrapWord
	v.content = container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabel("Import from"), container.NewHBox(v.FileButton, v.DirButton), v.Path),
		container.NewHBox(v.Import),
		v.Result,
	)
	return v
}

// run imports off the UI goroutine.
func (v *importView) run() {
	path := strings.TrimSpace(v.Path.Text)
	if path == "" {
		v.Result.Importance = widget.DangerImportance
		v.Result.SetText(errors.New("choose a file or folder to import").Error())
		return
	}
	v.Import.Disable()
	v.Result.Importance = widget.MediumImportance
	v.Result.SetText("Importing…")
	ing := v.ing
	v.win.bridge.Go(func() func() {
		rep, err := export.Import(context.Background(), path, ing)
		return func() {
			v.Import.Enable()
			if err != nil {
				v.Result.Importance = widget.DangerImportance
				v.Result.SetText("Nothing imported: " + err.Error())
				return
			}
			v.report = rep
			msg := fmt.Sprintf("Imported %s (%s) from %s. They are analyzed now and appear in the list.", plural.Count(rep.Imported, "delivery", "deliveries"), rep.Format, rep.Path)
			if len(rep.Skipped) > 0 {
				n := min(len(rep.Skipped), 5)
				msg += "\nSkipped: " + strings.Join(rep.Skipped[:n], "; ")
				if len(rep.Skipped) > n {
					msg += fmt.Sprintf(" … and %d more", len(rep.Skipped)-n)
				}
			}
			v.Result.Importance = widget.SuccessImportance
			v.Result.SetText(msg)
			v.win.showStatus(fmt.Sprintf("Imported %s.", plural.Count(rep.Imported, "delivery", "deliveries")))
			v.win.refreshStats()
		}
	})
}
