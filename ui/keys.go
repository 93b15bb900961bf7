package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// keyHelp is the Deliveries tab's keyboard, for the help dialog and
// docs/ui.md: the keys work when no text field has the focus.
var keyHelp = []struct{ keys, does string }{
	{"↓ or j, ↑ or k", "the next, the previous delivery (alone)"},
	{"Shift+↓, Shift+↑", "add the next, the previous delivery to the selection"},
	{"Click", "show one delivery"},
	{"Ctrl+click", "add a delivery to the selection, or take it out"},
	{"Shift+click", "select the deliveries from the last clicked one to this one"},
	{"Ctrl+A", "select every delivery the filter matches, loaded or not"},
	{"Escape", "clear the selection"},
	{"Delete", "delete the selection, or the delivery shown (asks first)"},
	{"Home", "jump to the newest delivery (the Newest button)"},
	{"Ctrl+F", "search (the search field)"},
	{"Ctrl+C", "copy the body of the delivery shown"},
	{"?", "this list"},
}

// typedKey handles the list's keys; false leaves the key to the list.
func (v *deliveriesView) typedKey(ev *fyne.KeyEvent) bool {
	shift := v.mods()&fyne.KeyModifierShift != 0
	switch ev.Name {
	case fyne.KeyUp:
		if shift {
			v.extend(-1)
		} else {
			v.move(-1)
		}
	case fyne.KeyDown:
		if shift {
			v.extend(1)
		} else {
			v.move(1)
		}
	case fyne.KeyHome:
		v.newest()
	case fyne.KeyEscape:
		v.clearSelection()
	case fyne.KeyDelete:
		v.deleteKey()
	default:
		return false
	}
	return true
}

// typedRune handles j, k and ?; false leaves the rune to the list.
func (v *deliveriesView) typedRune(r rune) bool {
	switch r {
	case 'j':
		v.move(1)
	case 'k':
		v.move(-1)
	case 'J':
		v.extend(1)
	case 'K':
		v.extend(-1)
	case '?':
		v.win.showKeys()
	default:
		return false
	}
	return true
}

// deleteKey deletes the selection, or the delivery shown; both ask first.
func (v *deliveriesView) deleteKey() {
	if !v.sel.empty() {
		v.Bulk.confirmDelete()
		return
	}
	v.Detail.confirmDelete()
}

// listShortcuts adds the window's shortcuts for the list: Ctrl+A (when no
// text field takes it: a field selects its text).
func (m *mainWindow) listShortcuts(c fyne.Canvas) {
	c.AddShortcut(&fyne.ShortcutSelectAll{}, func(fyne.Shortcut) {
		if m.Tabs.Selected() == m.deliveriesTab {
			m.deliveries.selectAll()
		}
	})
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyA, Modifier: fyne.KeyModifierSuper}, func(fyne.Shortcut) {
		if m.Tabs.Selected() == m.deliveriesTab {
			m.deliveries.selectAll()
		}
	})
}

// showKeys shows the keyboard help.
func (m *mainWindow) showKeys() {
	rows := container.New(layout.NewFormLayout())
	for _, k := range keyHelp {
		rows.Add(widget.NewLabelWithStyle(k.keys, fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}))
		rows.Add(widget.NewLabel(k.does))
	}
	note := widget.NewLabel("The keys work when the list has the focus (click a row) or no text field has it.")
	note.Wrapping = fyne.TextWrapWord
	m.showDialog("Keyboard", container.NewVScroll(container.NewVBox(rows, note)), fyne.NewSize(620, 520), nil)
}
