package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
)

// flowLayout places objects left to right at their minimum sizes and
// starts a new row when the next one does not fit, as text wraps. Its
// minimum width is its widest object, so a row of buttons never makes the
// window wider (an HBox too wide for its pane drew its buttons over the
// next pane); its minimum height is what the width it was last given
// needs, which Fyne asks again after each layout.
type flowLayout struct {
	// width is the width of the last layout, 0 before the first.
	width float32
}

// newFlow is a container of objs in a flowLayout.
func newFlow(objs ...fyne.CanvasObject) *fyne.Container {
	return container.New(&flowLayout{}, objs...)
}

// place calls at for each shown object with its position in a flow of the
// given width and returns the height the flow takes.
func (f *flowLayout) place(objs []fyne.CanvasObject, width float32, at func(o fyne.CanvasObject, pos fyne.Position, size fyne.Size)) float32 {
	pad := theme.Padding()
	x, y, rowH := float32(0), float32(0), float32(0)
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		m := o.MinSize()
		if x > 0 && x+m.Width > width {
			x, y = 0, y+rowH+pad
			rowH = 0
		}
		if at != nil {
			at(o, fyne.NewPos(x, y), m)
		}
		x += m.Width + pad
		rowH = max(rowH, m.Height)
	}
	return y + rowH
}

// MinSize is the widest object by the height the last width needed (one
// row before the first layout).
func (f *flowLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var w float32
	for _, o := range objs {
		if o.Visible() {
			w = max(w, o.MinSize().Width)
		}
	}
	width := f.width
	if width == 0 {
		width = 1 << 20
	}
	return fyne.NewSize(w, f.place(objs, max(width, w), nil))
}

// Layout wraps the objects at size's width.
func (f *flowLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	f.width = size.Width
	f.place(objs, size.Width, func(o fyne.CanvasObject, pos fyne.Position, s fyne.Size) {
		o.Move(pos)
		o.Resize(s)
	})
}
