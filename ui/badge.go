package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	plurals "github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/storage"
)

// badge is a small status pill: a tinted rounded box with a coloured icon
// and a word. Status is never told by colour alone, so it reads in both
// themes and for colour-blind users.
type badge struct {
	widget.BaseWidget
	Text     string
	Icon     fyne.Resource
	Color    fyne.ThemeColorName
	minWidth float32
}

func newBadge(minWidth float32) *badge {
	b := &badge{minWidth: minWidth}
	b.ExtendBaseWidget(b)
	b.Hide() // until set gives it a text
	return b
}

// set changes the badge; an empty text hides it.
func (b *badge) set(text string, icon fyne.Resource, c fyne.ThemeColorName) {
	if b.Text == text && b.Icon == icon && b.Color == c {
		return
	}
	b.Text, b.Icon, b.Color = text, icon, c
	if text == "" {
		b.Hide()
		return
	}
	b.Show()
	b.Refresh()
}

func (b *badge) CreateRenderer() fyne.WidgetRenderer {
	r := &badgeRenderer{b: b, bg: canvas.NewRectangle(color.Transparent), img: canvas.NewImageFromResource(nil), txt: canvas.NewText("", color.Black)}
	r.img.FillMode = canvas.ImageFillContain
	r.txt.TextStyle = fyne.TextStyle{Bold: true}
	r.Refresh()
	return r
}

type badgeRenderer struct {
	b   *badge
	bg  *canvas.Rectangle
	img *canvas.Image
	txt *canvas.Text
}

const badgePad = 5

func (r *badgeRenderer) iconSize() float32 { return r.txt.TextSize + 2 }

func (r *badgeRenderer) Layout(s fyne.Size) {
	r.bg.Resize(s)
	r.bg.Move(fyne.NewPos(0, 0))
	is := r.iconSize()
	x := float32(badgePad)
	if r.b.Icon != nil {
		r.img.Resize(fyne.NewSquareSize(is))
		r.img.Move(fyne.NewPos(x, (s.Height-is)/2))
		x += is + 3
	}
	ts := r.txt.MinSize()
	r.txt.Resize(ts)
	r.txt.Move(fyne.NewPos(x, (s.Height-ts.Height)/2))
}

func (r *badgeRenderer) MinSize() fyne.Size {
	ts := r.txt.MinSize()
	w := ts.Width + 2*badgePad
	if r.b.Icon != nil {
		w += r.iconSize() + 3
	}
	return fyne.NewSize(max(w, r.b.minWidth), ts.Height+4)
}

func (r *badgeRenderer) Refresh() {
	th := r.b.Theme()
	v := fyne.CurrentApp().Settings().ThemeVariant()
	name := r.b.Color
	if name == "" {
		name = theme.ColorNameDisabled
	}
	c := th.Color(name, v)
	if c == nil {
		c = color.Gray{Y: 0x80}
	}
	cr, cg, cb, _ := c.RGBA()
	r.bg.FillColor = color.NRGBA{R: uint8(cr >> 8), G: uint8(cg >> 8), B: uint8(cb >> 8), A: 0x38}
	r.bg.StrokeColor = c
	r.bg.StrokeWidth = 1
	r.bg.CornerRadius = 5
	r.txt.Text = r.b.Text
	r.txt.Color = th.Color(theme.ColorNameForeground, v)
	r.txt.TextSize = th.Size(theme.SizeNameCaptionText) + 1
	if r.b.Icon != nil {
		r.img.Resource = theme.NewColoredResource(r.b.Icon, name)
		r.img.Show()
	} else {
		r.img.Hide()
	}
	r.bg.Refresh()
	r.img.Refresh()
	r.txt.Refresh()
}

func (r *badgeRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.bg, r.img, r.txt}
}

func (r *badgeRenderer) Destroy() {}

// signatureLook is how a signature verdict is shown.
func signatureLook(s inspector.SignatureStatus) (string, fyne.Resource, fyne.ThemeColorName) {
	switch s {
	case inspector.SignatureValid:
		return "valid", theme.ConfirmIcon(), theme.ColorNameSuccess
	case inspector.SignatureInvalid:
		return "invalid", theme.CancelIcon(), theme.ColorNameError
	case inspector.SignatureMissing:
		return "missing", theme.QuestionIcon(), theme.ColorNameWarning
	case inspector.SignatureUnverified:
		return "unverified", theme.VisibilityOffIcon(), theme.ColorNameDisabled
	}
	return "pending", theme.HistoryIcon(), theme.ColorNameDisabled
}

// dedupeLook is how a delivery's dedupe status is shown: "N duplicates"
// counts the delivery's events that are later copies of an event received
// before (docs/ui.md), never which copy an event is.
func dedupeLook(s storage.Summary) (string, fyne.Resource, fyne.ThemeColorName) {
	switch {
	case !s.Analyzed || s.EventCount == 0:
		return "", nil, ""
	case s.Divergent:
		return "divergent", theme.WarningIcon(), theme.ColorNameError
	case s.Duplicates > 0:
		return plurals.S(s.Duplicates, "duplicate"), theme.ContentCopyIcon(), theme.ColorNamePrimary
	}
	return "new", theme.ContentAddIcon(), theme.ColorNameSuccess
}

// problemsLook is how a problem count is shown.
func problemsLook(n int) (string, fyne.Resource, fyne.ThemeColorName) {
	if n == 0 {
		return "", nil, ""
	}
	return plurals.S(n, "problem"), theme.ErrorIcon(), theme.ColorNameWarning
}

// capMin reports a small fixed minimum size for its child and gives it all
// the room there is. TextGrid (Fyne 2.7) reports its whole text's width as
// its minimum even when it scrolls, which would widen the window to the
// longest body line.
type capMin struct{ min fyne.Size }

func (c capMin) MinSize([]fyne.CanvasObject) fyne.Size { return c.min }

func (c capMin) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

func capped(o fyne.CanvasObject) fyne.CanvasObject {
	return container.New(capMin{min: fyne.NewSize(120, 80)}, o)
}
