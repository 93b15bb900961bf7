package ui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// An event card shows a value whole up to cardValueLines lines and
// cardValueBytes bytes; past either, it shows the value's start and a
// Show all button that opens the value in the line viewer. Fyne lays a
// wrapped label out by measuring it at every break candidate, so a
// 3,800-line transcript on a card took a minute and a 5 MiB string
// gigabytes.
const (
	cardValueLines = 4
	cardValueBytes = 400
)

// clipText returns s cut to at most lines lines and n bytes (at a rune
// boundary, without its trailing line break), and whether anything was
// cut. It reads only the part it keeps.
func clipText(s string, lines, n int) (string, bool) {
	cut := min(len(s), n)
	if nl := nthIndex(s[:cut], '\n', lines); nl >= 0 {
		cut = nl
	}
	if cut == len(s) {
		return s, false
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], "\r\n"), true
}

// nthIndex is the index of the nth c in s, -1 when s has fewer.
func nthIndex(s string, c byte, nth int) int {
	off := 0
	for range nth {
		i := strings.IndexByte(s[off:], c)
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// clipped is s cut as clipText cuts it, with "…" when it was cut: for
// texts that are short in all but odd cases (summaries, messages quoting
// a name), which Copy event and the JSON tab show whole.
func clipped(s string) string {
	if c, cut := clipText(s, cardValueLines, cardValueBytes); cut {
		return c + "…"
	}
	return s
}

// sizeWords says how big a value is: "3,800 lines, 293.2 KiB".
func sizeWords(s string) string {
	lines := int64(strings.Count(s, "\n") + 1)
	return fmt.Sprintf("%s, %s", plural.Count(int(lines), "line", "lines"), human.Bytes(int64(len(s))))
}

// cardValue shows one typed field's value on an event card: whole when
// short, else its first lines and a button opening all of it in the line
// viewer (label names it there).
func (d *detailView) cardValue(label, value string) fyne.CanvasObject {
	if _, cut := clipText(value, cardValueLines, cardValueBytes); !cut {
		return selectable(value)
	}
	return d.longText(label, value, false)
}

// longText shows value wrapped, whole up to the card bounds, else its
// start and Show all; mono sets it in the monospace font.
func (d *detailView) longText(label, value string, mono bool) fyne.CanvasObject {
	head, cut := clipText(value, cardValueLines, cardValueBytes)
	style := fyne.TextStyle{Monospace: mono}
	if !cut {
		l := widget.NewLabelWithStyle(value, fyne.TextAlignLeading, style)
		l.Wrapping = fyne.TextWrapBreak // digests and tokens have no spaces
		return l
	}
	l := widget.NewLabelWithStyle(head+" …", fyne.TextAlignLeading, style)
	l.Wrapping = fyne.TextWrapWord
	if mono {
		l.Wrapping = fyne.TextWrapBreak
	}
	all := widget.NewButtonWithIcon("Show all ("+sizeWords(value)+")", theme.VisibilityIcon(), func() { d.showValue(label, value) })
	all.Importance = widget.LowImportance
	return container.NewVBox(l, container.NewHBox(all))
}

// showValue opens a value in the line viewer, in a dialog sized to the
// window.
func (d *detailView) showValue(label, value string) {
	d.ValueView.Find.SetText("")
	d.ValueView.setText([]byte(value), codePlain)
	dlg := dialog.NewCustomWithoutButtons(label, d.ValueView.content, d.win.w)
	copyAll := widget.NewButtonWithIcon("Copy value", theme.ContentCopyIcon(), func() { d.win.copy(value, label) })
	dlg.SetButtons([]fyne.CanvasObject{copyAll, widget.NewButton("Close", dlg.Hide)})
	s := d.win.w.Canvas().Size()
	dlg.Resize(fyne.NewSize(min(900, s.Width-40), min(620, s.Height-40)))
	d.valueDialog = dlg
	dlg.Show()
}
