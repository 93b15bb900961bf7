package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/hookscope/hookscope/internal/plural"
)

// tunnelLogs is a tunnel control that keeps a log (the station's does):
// cloudflared's recent lines, tokens redacted, with the supervisor's own
// ("hookscope: …": each start, each failed try and when the next is).
type tunnelLogs interface {
	Logs() []string
}

// tunnelLogFollow is how often an open log view looks for new lines.
const tunnelLogFollow = time.Second

// tunnelLogView is the "cloudflared log" dialog: the recent lines, newest
// last, in the line viewer (folded, searchable, a line copied at a time),
// with Copy all. While open it follows new lines, unless the user is
// searching or has picked a line.
type tunnelLogView struct {
	win *mainWindow
	src tunnelLogs
	// Code shows the lines.
	Code *codeView
	// CopyAll copies every line shown.
	CopyAll *widget.Button
	// Note says what the lines are and how many.
	Note *widget.Label

	lines   []string
	content fyne.CanvasObject
	dialog  dialog.Dialog
	// closed is set, and done closed, when the dialog closes.
	closed bool
	done   chan struct{}
}

func newTunnelLogView(win *mainWindow, src tunnelLogs) *tunnelLogView {
	v := &tunnelLogView{win: win, src: src, done: make(chan struct{})}
	v.Code = newCodeView(win.copy)
	v.Code.Find.SetPlaceHolder("Find in the log…")
	v.CopyAll = widget.NewButtonWithIcon("Copy all", theme.ContentCopyIcon(), func() {
		win.copy(strings.Join(v.lines, "\n")+"\n", "cloudflared log")
	})
	v.Note = widget.NewLabel("")
	v.Note.Wrapping = fyne.TextWrapWord
	v.content = container.NewBorder(container.NewBorder(nil, nil, nil, v.CopyAll, v.Note), nil, nil, nil, v.Code.content)
	return v
}

// set shows lines, scrolled to the newest.
func (v *tunnelLogView) set(lines []string) {
	v.lines = lines
	v.Note.SetText(fmt.Sprintf("The last %s from cloudflared and from Hookscope (hookscope: …), newest last; tokens are hidden.",
		plural.Count(len(lines), "line", "lines")))
	v.CopyAll.Disable()
	if len(lines) > 0 {
		v.CopyAll.Enable()
	}
	v.Code.setText([]byte(strings.Join(lines, "\n")), codePlain)
	v.Code.List.ScrollToBottom()
}

// follow reads the log again every tunnelLogFollow, off the UI goroutine,
// and shows it when it changed, until the dialog or the window closes.
func (v *tunnelLogView) follow() {
	if v.win.bridge.inline {
		return // tests refresh by hand
	}
	b := v.win.bridge
	go func() {
		t := time.NewTicker(tunnelLogFollow)
		defer t.Stop()
		for {
			select {
			case <-v.done:
				return
			case <-b.stop:
				return
			case <-t.C:
			}
			lines := v.src.Logs()
			b.do(func() {
				busy := v.Code.Find.Text != "" || v.Code.selected >= 0
				if !v.closed && !busy && !slices.Equal(lines, v.lines) {
					v.set(lines)
				}
			})
		}
	}()
}

// showTunnelLog opens the cloudflared log.
func (m *mainWindow) showTunnelLog() {
	src, ok := m.svc.Tunnel.(tunnelLogs)
	if !ok {
		return
	}
	v := newTunnelLogView(m, src)
	m.header.LogView = v
	v.set(src.Logs())
	v.dialog = dialog.NewCustom("cloudflared log", "Close", v.content, m.w)
	v.dialog.SetOnClosed(func() {
		v.closed = true
		close(v.done)
	})
	size := m.w.Canvas().Size()
	v.dialog.Resize(fyne.NewSize(min(1000, size.Width-40), min(620, size.Height-40)))
	v.dialog.Show()
	v.follow()
}
