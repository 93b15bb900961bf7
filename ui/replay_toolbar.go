package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// newBulkActions is the Deliveries toolbar row of actions on the filtered
// list: Replay selection…, Export…, Import… and Consumer check…, wrapping
// onto a second row in a narrow pane. Actions whose engine the window
// lacks (a store that keeps no replays, an engine that cannot ingest) are
// left out.
func newBulkActions(m *mainWindow) fyne.CanvasObject {
	row := newFlow()
	if _, ok := m.replayDeps(); ok {
		row.Add(widget.NewButtonWithIcon("Replay selection…", theme.MediaReplayIcon(), func() { m.openChaos() }))
		row.Add(widget.NewButtonWithIcon("Export…", theme.DocumentSaveIcon(), func() { m.openExport() }))
	}
	if _, ok := m.ingester(); ok {
		row.Add(widget.NewButtonWithIcon("Import…", theme.DownloadIcon(), func() { m.openImport() }))
	}
	row.Add(widget.NewButtonWithIcon("Consumer check…", theme.ConfirmIcon(), func() { m.openConsumerCheck() }))
	return row
}

// newReplayButton is the detail pane's "Replay…" action; nil when the
// store keeps no replays.
func newReplayButton(m *mainWindow) fyne.CanvasObject {
	if _, ok := m.replayDeps(); !ok {
		return layoutNothing()
	}
	return widget.NewButtonWithIcon("Replay…", theme.MediaReplayIcon(), func() { m.openReplay() })
}

// layoutNothing is an empty, invisible object for a left-out control.
func layoutNothing() fyne.CanvasObject {
	r := container.NewHBox()
	r.Hide()
	return r
}
