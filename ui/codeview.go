package ui

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// codeMode is how a codeView reads its text.
type codeMode int

const (
	// codePlain shows the text as it is, folded to the view's width.
	codePlain codeMode = iota
	// codeJSON is codePlain with JSON colouring (the text must be valid
	// JSON, as pretty-printed by the catalogue).
	codeJSON
	// codeHex shows the bytes as a hex dump, 16 bytes a row.
	codeHex
	// codeDiff is codePlain with a unified diff's lines coloured: added
	// ("+"), removed ("-") and hunk headers ("@@").
	codeDiff
)

// hexRowBytes is how many bytes one hex dump row shows (hex.Dump's width).
const hexRowBytes = 16

// minFoldColumns keeps a very narrow pane readable: below it rows are cut
// off at the right edge instead of folded into a few characters each.
const minFoldColumns = 24

// codeView shows a large text the way a developer tool's response viewer
// does: a virtualized list of monospace rows with line numbers, long lines
// folded at the view's width, JSON coloured, a find bar and a copy of the
// selected line. Only the visible rows exist as objects, so a 10 MiB body
// costs what a 1 KiB one does plus one pass over its bytes to find the
// line starts; Fyne's TextGrid and Entry lay out every line instead.
type codeView struct {
	// List holds one item per visual row; selecting a row picks the line
	// Copy line copies.
	List *widget.List
	// Find searches the text (ASCII case-insensitive); Enter goes to the
	// next match.
	Find     *widget.Entry
	FindPrev *widget.Button
	FindNext *widget.Button
	// FindInfo says which match is shown ("3 of 17") or "no match".
	FindInfo *widget.Label
	// CopyLine copies the whole line (unfolded) of the selected row.
	CopyLine *widget.Button
	// Info describes the text: lines, size and folding.
	Info *widget.Label

	copyText func(s, what string)
	content  fyne.CanvasObject

	mode codeMode
	text []byte
	// received is the size of the bytes text was formatted from (a
	// pretty-printed body), -1 when text is them.
	received int
	// lines are the starts of the logical lines (text modes), built on
	// first use so a tab never shown costs nothing.
	lines   []int32
	maxLine int // longest line in bytes
	indexed bool
	// rows are the starts of the visual rows: lines itself when no line
	// is longer than cols, else lines with the long ones cut at rune
	// boundaries every cols runes.
	rows []int32
	// rowState is the JSON lexer state at the start of each row, kept
	// only when some line was folded (a row can start inside a string).
	rowState []uint8
	cols     int
	// foldedAt is the column count rows were computed for; 0 before.
	foldedAt int

	selected int // row, -1 when none
	// match is the shown find match [matchAt, matchAt+len(query)), -1 none.
	matchAt int
	query   []byte
	lowered []byte // ASCII-lowercased text for find, made on first search

	// created counts row objects made by the list: tests use it to check
	// that only visible rows are built.
	created int

	// measured once per theme size: width of a monospace cell and the
	// height of a row.
	textSize, cellW, rowH float32
}

// newCodeView makes an empty view; copyText puts text on the clipboard
// and reports it (the window's copy).
func newCodeView(copyText func(s, what string)) *codeView {
	v := &codeView{copyText: copyText, selected: -1, matchAt: -1}
	v.measure()
	v.List = widget.NewList(v.length, v.createRow, v.updateRow)
	v.List.HideSeparators = true
	v.List.OnSelected = func(id widget.ListItemID) {
		v.selected = id
		v.CopyLine.Enable()
	}
	v.List.OnUnselected = func(widget.ListItemID) {
		v.selected = -1
		v.CopyLine.Disable()
	}
	v.Find = widget.NewEntry()
	v.Find.SetPlaceHolder("Find in body…")
	v.Find.OnChanged = func(string) { v.find(true, 0) }
	v.Find.OnSubmitted = func(string) { v.find(false, 1) }
	v.FindPrev = widget.NewButtonWithIcon("", theme.MoveUpIcon(), func() { v.find(false, -1) })
	v.FindNext = widget.NewButtonWithIcon("", theme.MoveDownIcon(), func() { v.find(false, 1) })
	v.FindPrev.Importance = widget.LowImportance
	v.FindNext.Importance = widget.LowImportance
	v.FindInfo = widget.NewLabel("")
	v.CopyLine = widget.NewButtonWithIcon("Line", theme.ContentCopyIcon(), v.copySelectedLine)
	v.CopyLine.Disable()
	v.Info = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
	v.Info.Truncation = fyne.TextTruncateEllipsis

	// Rows sit edge to edge like in an editor: the list's gap between
	// items is the theme padding, set to zero inside the view.
	rows := container.New(&codeLayout{v: v}, container.NewThemeOverride(v.List, codeTheme{}))
	bar := container.NewBorder(nil, nil, nil,
		container.NewHBox(v.FindPrev, v.FindNext, v.FindInfo, v.CopyLine), v.Find)
	v.content = container.NewBorder(bar, v.Info, nil, nil, rows)
	return v
}

// measure sizes a monospace cell and a row from the current theme.
func (v *codeView) measure() {
	// The body text size: at one point smaller, the GL painter cuts off
	// the monospace underscore (its text textures end at the descent).
	size := theme.TextSize()
	style := fyne.TextStyle{Monospace: true}
	v.textSize = size
	v.cellW = fyne.MeasureText("0000000000", size, style).Width / 10
	v.rowH = float32(math.Ceil(float64(fyne.MeasureText("0Mgy", size, style).Height))) + 2
}

// setText shows text in mode, scrolled to the top. The text is kept, not
// copied: callers must not change it afterwards.
func (v *codeView) setText(text []byte, mode codeMode) {
	if len(text) > math.MaxInt32 {
		text = text[:math.MaxInt32] // offsets are int32; no body cap allows this
	}
	v.text, v.mode, v.received = text, mode, -1
	v.lines, v.rows, v.rowState, v.lowered = nil, nil, nil, nil
	v.indexed, v.foldedAt, v.maxLine = false, 0, 0
	v.selected, v.matchAt = -1, -1
	v.CopyLine.Disable()
	v.List.UnselectAll()
	v.Find.SetText("")
	v.FindInfo.SetText("")
	v.ensure()
	v.List.Refresh()
	v.List.ScrollToTop()
}

// setFormatted shows text formatted from received bytes (pretty JSON): the
// footer gives the size as received, which is what was sent.
func (v *codeView) setFormatted(text []byte, mode codeMode, received int) {
	v.setText(text, mode)
	v.received = received
	v.updateInfo()
}

// ensure builds the line index and the rows for the current width.
func (v *codeView) ensure() {
	if v.mode == codeHex {
		v.indexed = true
		v.updateInfo()
		return
	}
	if !v.indexed {
		v.indexed = true
		v.lines, v.maxLine = indexLines(v.text)
	}
	cols := v.cols
	if cols <= 0 {
		cols = 100 // until the first layout says how wide the view is
	}
	if cols != v.foldedAt {
		v.foldedAt = cols
		v.rows, v.rowState = foldRows(v.text, v.lines, v.maxLine, cols, v.mode == codeJSON)
		v.updateInfo()
	}
}

// indexLines returns the start of every line of text and the longest
// line's length in bytes.
func indexLines(text []byte) ([]int32, int) {
	lines := make([]int32, 1, bytes.Count(text, []byte{'\n'})+1)
	maxLen, start := 0, 0
	for {
		i := bytes.IndexByte(text[start:], '\n')
		if i < 0 {
			break
		}
		maxLen = max(maxLen, i)
		start += i + 1
		lines = append(lines, int32(start))
	}
	return lines, max(maxLen, len(text)-start)
}

// JSON lexer states at a row start, enough to colour a row that begins in
// the middle of a folded string.
const (
	jsonNormal uint8 = iota
	jsonString
	jsonEscape
)

func jsonStep(st, b uint8) uint8 {
	switch st {
	case jsonString:
		switch b {
		case '\\':
			return jsonEscape
		case '"':
			return jsonNormal
		}
		return jsonString
	case jsonEscape:
		return jsonString
	}
	if b == '"' {
		return jsonString
	}
	return jsonNormal
}

// foldRows cuts the lines into rows of at most cols runes, never inside a
// character. When no line is that long the rows are the lines themselves.
func foldRows(text []byte, lines []int32, maxLine, cols int, json bool) ([]int32, []uint8) {
	if maxLine <= cols { // bytes >= runes, so nothing needs folding
		return lines, nil
	}
	rows := make([]int32, 0, len(lines)+(len(text)-len(lines))/cols)
	var states []uint8
	if json {
		states = make([]uint8, 0, cap(rows))
	}
	for li, s := range lines {
		start := int(s)
		end := lineEnd(text, lines, li)
		rows = append(rows, s)
		if json {
			states = append(states, jsonNormal) // pretty JSON never breaks a line inside a string
		}
		if end-start <= cols {
			continue
		}
		n, st := 0, jsonNormal
		for i := start; i < end; {
			if n == cols {
				rows = append(rows, int32(i))
				if json {
					states = append(states, st)
				}
				n = 0
			}
			b := text[i]
			size := 1
			if b >= utf8.RuneSelf {
				_, size = utf8.DecodeRune(text[i:end])
			}
			if json {
				st = jsonStep(st, b)
			}
			i += size
			n++
		}
	}
	return rows, states
}

// lineEnd is where line li ends, without its newline.
func lineEnd(text []byte, lines []int32, li int) int {
	if li+1 < len(lines) {
		return int(lines[li+1]) - 1
	}
	return len(text)
}

// length is the list's row count.
func (v *codeView) length() int {
	v.ensure()
	if v.mode == codeHex {
		return (len(v.text) + hexRowBytes - 1) / hexRowBytes
	}
	return len(v.rows)
}

// Rows is how many rows the view has (for tests and the info line).
func (v *codeView) Rows() int { return v.length() }

// rowSpan is the byte range row r shows (text modes) and its line index.
func (v *codeView) rowSpan(r int) (start, end, line int) {
	start = int(v.rows[r])
	line = sort.Search(len(v.lines), func(i int) bool { return int(v.lines[i]) > start }) - 1
	end = lineEnd(v.text, v.lines, line)
	if r+1 < len(v.rows) && int(v.rows[r+1]) <= end {
		end = int(v.rows[r+1]) // a folded row ends where the next begins
	}
	return start, end, line
}

// RowText is what row r shows, without its line number.
func (v *codeView) RowText(r int) string {
	v.ensure()
	if r < 0 || r >= v.length() {
		return ""
	}
	if v.mode == codeHex {
		return hexRow(v.text, r)
	}
	start, end, _ := v.rowSpan(r)
	return displayText(v.text[start:end])
}

// hexRow renders row r of a hex dump in hex.Dump's format.
func hexRow(b []byte, r int) string {
	off := r * hexRowBytes
	chunk := b[off:min(off+hexRowBytes, len(b))]
	s := strings.TrimRight(hex.Dump(chunk), "\n")
	return fmt.Sprintf("%08x", off) + s[8:]
}

// displayText is a row as drawn: tabs as spaces and no carriage return,
// which a text object would show as boxes.
func displayText(b []byte) string {
	s := string(bytes.TrimSuffix(b, []byte{'\r'}))
	if strings.IndexByte(s, '\t') >= 0 {
		s = strings.ReplaceAll(s, "\t", "    ")
	}
	return s
}

// codeLayout gives the list the view's size and refolds the rows when the
// width changes how many columns fit. Its minimum is small so a long line
// never widens the window.
type codeLayout struct{ v *codeView }

func (l *codeLayout) MinSize([]fyne.CanvasObject) fyne.Size { return fyne.NewSize(120, 80) }

func (l *codeLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	l.v.resized(size.Width)
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

// resized refolds for a new width, keeping the selected row and the top
// row on the same text.
func (v *codeView) resized(width float32) {
	if v.mode == codeHex || width <= 0 {
		return
	}
	cols := max(minFoldColumns, int((width-v.gutterWidth()-2*v.cellW)/v.cellW))
	if cols == v.cols {
		return
	}
	v.cols = cols
	if !v.indexed || v.maxLine <= min(cols, v.foldedAt) {
		return // the rows do not change
	}
	topAt, selAt := -1, -1
	if len(v.rows) > 0 {
		top := min(len(v.rows)-1, int(v.List.GetScrollOffset()/v.rowH))
		topAt = int(v.rows[top])
		if v.selected >= 0 && v.selected < len(v.rows) {
			selAt = int(v.rows[v.selected])
		}
	}
	v.ensure()
	v.List.Refresh()
	if selAt >= 0 {
		v.List.Select(v.rowAt(selAt))
	}
	if topAt >= 0 {
		v.List.ScrollToOffset(float32(v.rowAt(topAt)) * v.rowH)
	}
}

// rowAt is the row showing byte offset off.
func (v *codeView) rowAt(off int) int {
	if v.mode == codeHex {
		return off / hexRowBytes
	}
	return max(0, sort.Search(len(v.rows), func(i int) bool { return int(v.rows[i]) > off })-1)
}

// gutterWidth is the width of the line number column.
func (v *codeView) gutterWidth() float32 {
	if v.mode == codeHex {
		return 0
	}
	digits := len(fmt.Sprint(max(1, len(v.lines))))
	return float32(digits+2) * v.cellW
}

func (v *codeView) updateInfo() {
	size := human.Bytes(int64(len(v.text)))
	if v.received >= 0 && v.received != len(v.text) {
		size = fmt.Sprintf("%s as received, %s formatted", human.Bytes(int64(v.received)), human.Bytes(int64(len(v.text))))
	}
	switch {
	case v.mode == codeHex:
		rows := (len(v.text) + hexRowBytes - 1) / hexRowBytes
		v.Info.SetText(fmt.Sprintf("%s · %s rows of %d bytes · offsets in hex", size, human.Count(int64(rows)), hexRowBytes))
	case len(v.rows) > len(v.lines):
		v.Info.SetText(fmt.Sprintf("%s · %s · long lines folded at %d columns (copies are unfolded)", size, plural.Count(len(v.lines), "line", "lines"), v.foldedAt))
	default:
		v.Info.SetText(fmt.Sprintf("%s · %s", size, plural.Count(len(v.lines), "line", "lines")))
	}
}

// copySelectedLine copies the selected row's whole line.
func (v *codeView) copySelectedLine() {
	if v.selected < 0 || v.selected >= v.length() {
		return
	}
	if v.mode == codeHex {
		v.copyText(hexRow(v.text, v.selected), fmt.Sprintf("hex row at offset %#x", v.selected*hexRowBytes))
		return
	}
	_, _, line := v.rowSpan(v.selected)
	start, end := int(v.lines[line]), lineEnd(v.text, v.lines, line)
	v.copyText(string(bytes.TrimSuffix(v.text[start:end], []byte{'\r'})), fmt.Sprintf("line %d", line+1))
}

// find moves to a match of the query: the first one when the query
// changed (restart), else the next (dir 1) or previous (dir -1) one.
func (v *codeView) find(restart bool, dir int) {
	q := asciiLower([]byte(v.Find.Text))
	if len(q) == 0 {
		v.query, v.matchAt = nil, -1
		v.FindInfo.SetText("")
		v.List.Refresh()
		return
	}
	if v.lowered == nil {
		v.lowered = asciiLower(v.text)
	}
	if !bytes.Equal(q, v.query) {
		restart = true
	}
	v.query = q
	at := -1
	switch {
	case restart || v.matchAt < 0:
		at = bytes.Index(v.lowered, q)
	case dir >= 0:
		if i := bytes.Index(v.lowered[v.matchAt+1:], q); i >= 0 {
			at = v.matchAt + 1 + i
		} else {
			at = bytes.Index(v.lowered, q) // wrap around
		}
	default:
		if i := bytes.LastIndex(v.lowered[:v.matchAt], q); i >= 0 {
			at = i
		} else {
			at = bytes.LastIndex(v.lowered, q)
		}
	}
	v.matchAt = at
	if at < 0 {
		v.FindInfo.SetText("no match")
		v.List.Refresh()
		return
	}
	total := bytes.Count(v.lowered, q)
	nth := bytes.Count(v.lowered[:at], q) + 1
	v.FindInfo.SetText(fmt.Sprintf("%d of %d", nth, total))
	v.ensure()
	row := v.rowAt(at)
	v.List.Select(row)
	// A match sits a third down the view, with its context around it,
	// rather than at whichever edge the list would scroll it to.
	v.List.ScrollToOffset(max(0, float32(row)*v.rowH-v.List.Size().Height/3))
	v.List.Refresh()
}

// asciiLower lower-cases ASCII letters only, so offsets in the result are
// offsets in b (Unicode case mapping can change a character's length).
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// codeRow is one visual row: a line number and coloured runs of text,
// plus a highlight behind a find match. Rows are reused as the list
// scrolls, and positions are set when a row is bound.
type codeRow struct {
	widget.BaseWidget
	h    float32
	num  *canvas.Text
	mark *canvas.Rectangle
	runs []*canvas.Text
	objs []fyne.CanvasObject
}

// CreateRenderer draws the row's current objects.
func (r *codeRow) CreateRenderer() fyne.WidgetRenderer { return &codeRowRenderer{r: r} }

// MinSize is one row high and narrow, so a long line never widens the list.
func (r *codeRow) MinSize() fyne.Size { return fyne.NewSize(60, r.h) }

type codeRowRenderer struct{ r *codeRow }

func (rr *codeRowRenderer) Destroy()                     {}
func (rr *codeRowRenderer) Layout(fyne.Size)             {}
func (rr *codeRowRenderer) MinSize() fyne.Size           { return rr.r.MinSize() }
func (rr *codeRowRenderer) Objects() []fyne.CanvasObject { return rr.r.objs }
func (rr *codeRowRenderer) Refresh()                     { canvas.Refresh(rr.r) }

func (v *codeView) createRow() fyne.CanvasObject {
	v.created++
	r := &codeRow{h: v.rowH, num: canvas.NewText("", color.Black), mark: canvas.NewRectangle(color.Transparent)}
	r.num.TextStyle = fyne.TextStyle{Monospace: true}
	r.num.TextSize = v.textSize
	r.mark.Hide()
	r.objs = []fyne.CanvasObject{r.mark, r.num}
	r.ExtendBaseWidget(r)
	return r
}

// token kinds for colouring.
type tokenKind uint8

const (
	tokPlain tokenKind = iota
	tokKey
	tokString
	tokNumber
	tokLiteral
	tokDim
	tokAdded
	tokRemoved
)

// diffLineKind colours a line of a unified diff by its first character
// (the whole line, folded rows included); other modes stay plain.
func diffLineKind(mode codeMode, line []byte) tokenKind {
	if mode != codeDiff || len(line) == 0 {
		return tokPlain
	}
	switch {
	case bytes.HasPrefix(line, []byte("+++")), bytes.HasPrefix(line, []byte("---")), line[0] == '@':
		return tokDim
	case line[0] == '+':
		return tokAdded
	case line[0] == '-':
		return tokRemoved
	}
	return tokPlain
}

type token struct {
	from, to int
	kind     tokenKind
}

func (v *codeView) updateRow(id widget.ListItemID, o fyne.CanvasObject) {
	r, ok := o.(*codeRow)
	if !ok || id >= v.length() {
		return
	}
	th := v.List.Theme()
	variant := fyne.CurrentApp().Settings().ThemeVariant()
	var toks []token
	var src []byte
	var start int
	x := float32(0)
	if v.mode == codeHex {
		s := hexRow(v.text, id)
		src = []byte(s)
		// hex.Dump pads a short last row, so the printable column always
		// starts len(chunk)+2 characters from the end ("|..ab|").
		ascii := len(s) - min(hexRowBytes, len(v.text)-id*hexRowBytes) - 2
		toks = []token{{0, 8, tokDim}, {8, ascii, tokPlain}, {ascii, len(s), tokDim}}
		r.num.Hide()
		x = v.cellW
	} else {
		var end, line int
		start, end, line = v.rowSpan(id)
		src = v.text[start:end]
		if int(v.lines[line]) == start {
			r.num.Text = fmt.Sprint(line + 1)
		} else {
			r.num.Text = "" // a folded continuation has no number of its own
		}
		r.num.Color = th.Color(theme.ColorNamePlaceHolder, variant)
		gw := v.gutterWidth()
		w := fyne.MeasureText(r.num.Text, v.textSize, r.num.TextStyle).Width
		r.num.Move(fyne.NewPos(gw-v.cellW-w, 1))
		r.num.Resize(fyne.NewSize(w, v.rowH-2))
		r.num.Show()
		r.num.Refresh()
		x = gw
		if v.mode == codeJSON {
			st := jsonNormal
			if v.rowState != nil {
				st = v.rowState[id]
			}
			toks = jsonTokens(v.text, start, end, st)
		} else {
			toks = []token{{start, end, diffLineKind(v.mode, v.text[v.lines[line]:end])}}
		}
		for i := range toks { // make offsets relative to src
			toks[i].from -= start
			toks[i].to -= start
		}
	}

	// The find match, when it touches this row, gets a highlight behind it.
	r.mark.Hide()
	if v.matchAt >= 0 && v.mode != codeHex {
		a, b := v.matchAt-start, v.matchAt+len(v.query)-start
		if b > 0 && a < len(src) {
			a, b = max(a, 0), min(b, len(src))
			mx := x + fyne.MeasureText(displayText(src[:a]), v.textSize, fyne.TextStyle{Monospace: true}).Width
			mw := fyne.MeasureText(displayText(src[a:b]), v.textSize, fyne.TextStyle{Monospace: true}).Width
			c := th.Color(theme.ColorNameWarning, variant)
			r.mark.FillColor = withAlpha(c, 0x70)
			r.mark.Move(fyne.NewPos(mx, 0))
			r.mark.Resize(fyne.NewSize(mw, v.rowH))
			r.mark.Show()
		}
	}
	r.mark.Refresh()

	used := 0
	for _, t := range toks {
		if t.from >= t.to {
			continue
		}
		if used == len(r.runs) {
			txt := canvas.NewText("", color.Black)
			txt.TextStyle = fyne.TextStyle{Monospace: true}
			txt.TextSize = v.textSize
			r.runs = append(r.runs, txt)
			r.objs = append(r.objs, txt)
		}
		txt := r.runs[used]
		used++
		txt.Text = displayText(src[t.from:t.to])
		txt.Color = th.Color(tokenColor(t.kind), variant)
		w := fyne.MeasureText(txt.Text, v.textSize, txt.TextStyle).Width
		txt.Move(fyne.NewPos(x, 1))
		txt.Resize(fyne.NewSize(w, v.rowH-2))
		txt.Show()
		txt.Refresh()
		x += w
	}
	for _, txt := range r.runs[used:] {
		txt.Hide()
	}
	r.Refresh()
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

// tokenColor maps a token to a theme colour, so dark mode works too.
func tokenColor(k tokenKind) fyne.ThemeColorName {
	switch k {
	case tokKey:
		return theme.ColorNamePrimary
	case tokString:
		return theme.ColorNameSuccess
	case tokNumber:
		return theme.ColorNameWarning
	case tokLiteral:
		return theme.ColorNameHyperlink
	case tokDim:
		return theme.ColorNamePlaceHolder
	case tokAdded:
		return theme.ColorNameSuccess
	case tokRemoved:
		return theme.ColorNameError
	}
	return theme.ColorNameForeground
}

// jsonTokens splits text[start:end] (one row of pretty JSON that begins in
// lexer state st) into coloured runs; neighbours of one kind are merged.
func jsonTokens(text []byte, start, end int, st uint8) []token {
	var out []token
	add := func(a, b int, k tokenKind) {
		if a >= b {
			return
		}
		if n := len(out); n > 0 && out[n-1].kind == k && out[n-1].to == a {
			out[n-1].to = b
			return
		}
		out = append(out, token{a, b, k})
	}
	i := start
	if st != jsonNormal { // the row continues a folded string
		j := stringEnd(text, i, end, st)
		add(i, j, stringKind(text, i, st))
		i = j
	}
	for i < end {
		c := text[i]
		switch {
		case c == '"':
			j := stringEnd(text, i+1, end, jsonString)
			add(i, j, stringKind(text, i+1, jsonString))
			i = j
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < end && strings.IndexByte("0123456789.eE+-", text[j]) >= 0 {
				j++
			}
			add(i, j, tokNumber)
			i = j
		case c == 't' || c == 'f' || c == 'n':
			j := i + 1
			for j < end && 'a' <= text[j] && text[j] <= 'z' {
				j++
			}
			add(i, j, tokLiteral)
			i = j
		default:
			j := i + 1
			for j < end && strings.IndexByte("\"-0123456789tfn", text[j]) < 0 {
				j++
			}
			add(i, j, tokPlain)
			i = j
		}
	}
	return out
}

// stringEnd is the offset just past the string that i is inside (in
// lexer state st), or end when it closes on a later row.
func stringEnd(text []byte, i, end int, st uint8) int {
	for ; i < end; i++ {
		st = jsonStep(st, text[i])
		if st == jsonNormal {
			return i + 1
		}
	}
	return end
}

// keyLookahead bounds the scan for a string's closing quote when deciding
// whether it is a key: a value of megabytes is not scanned per row.
const keyLookahead = 64 << 10

// stringKind says whether the string that i is inside is an object key
// (followed by a colon) or a value.
func stringKind(text []byte, i int, st uint8) tokenKind {
	limit := min(len(text), i+keyLookahead)
	for ; i < limit; i++ {
		if text[i] == '\n' {
			return tokString
		}
		st = jsonStep(st, text[i])
		if st == jsonNormal {
			for j := i + 1; j < limit; j++ {
				switch text[j] {
				case ' ', '\t':
					continue
				case ':':
					return tokKey
				}
				return tokString
			}
			return tokString
		}
	}
	return tokString
}

// codeTheme is the app theme with no gap between list rows and square
// selection corners, so the code view reads like an editor.
type codeTheme struct{}

func (codeTheme) current() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (t codeTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	return t.current().Color(n, v)
}

func (t codeTheme) Font(s fyne.TextStyle) fyne.Resource { return t.current().Font(s) }

func (t codeTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return t.current().Icon(n) }

func (t codeTheme) Size(n fyne.ThemeSizeName) float32 {
	switch n {
	case theme.SizeNamePadding, theme.SizeNameSelectionRadius:
		return 0
	}
	return t.current().Size(n)
}
