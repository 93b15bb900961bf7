package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// houseTheme is Fyne's default theme with the light variant's status and
// hint colours dark enough to read as text on its white background (WCAG
// AA, 4.5:1): Fyne's own green, amber and grey are 1.5:1, 2.2:1 and 3.5:1
// there, so "Saved.", a warning or a form hint could hardly be read. The
// input border (text fields, and the outline of unchecked checkboxes and
// radios) is darkened in light and lightened in dark to stand out 3:1 from
// the field and the background (WCAG 1.4.11, UI component boundaries):
// Fyne's own are barely visible.
type houseTheme struct{ fyne.Theme }

func newHouseTheme() fyne.Theme { return houseTheme{theme.DefaultTheme()} }

// Color darkens the light variant's text colours and sets both variants'
// input border.
func (t houseTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if v == theme.VariantLight {
		switch n {
		case theme.ColorNameSuccess:
			return color.NRGBA{R: 0x1a, G: 0x7f, B: 0x37, A: 0xff}
		case theme.ColorNameWarning:
			return color.NRGBA{R: 0x9a, G: 0x67, B: 0x00, A: 0xff}
		case theme.ColorNameError:
			return color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
		case theme.ColorNamePlaceHolder:
			return color.NRGBA{R: 0x6e, G: 0x6e, B: 0x6e, A: 0xff}
		case theme.ColorNameInputBorder:
			return color.NRGBA{R: 0x86, G: 0x86, B: 0x86, A: 0xff}
		}
	}
	if v == theme.VariantDark && n == theme.ColorNameInputBorder {
		return color.NRGBA{R: 0x74, G: 0x74, B: 0x78, A: 0xff}
	}
	return t.Theme.Color(n, v)
}
