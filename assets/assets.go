// Package assets holds Hookscope's bundled resources: the application icon
// as PNG (for the window and FyneApp.toml) and SVG (the source).
package assets

import _ "embed"

//go:embed icon.png
var iconPNG []byte

//go:embed icon.svg
var iconSVG []byte

// IconPNG returns the 512×512 application icon. The slice is shared: do
// not modify it.
func IconPNG() []byte { return iconPNG }

// IconSVG returns the icon's vector source.
func IconSVG() []byte { return iconSVG }
