package ui

import (
	"fmt"
	"image"
	"io"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
)

// uiTrace writes, when Config.Trace is set, the moments the window drew
// what a user waits for, for scripts/bench-window.sh: a delivery clicked
// in the list drawn in the detail pane, and the header's delivery count.
// Each is detected by a 1×1 transparent raster in that pane: Fyne paints a
// raster's texture again only after it was refreshed, and only while
// painting a frame, so the raster's generator runs in the frame that
// shows the change. Lines are "hookscope-trace KIND key=value… unix_ns=T"
// with the wall clock, so a script can set them against when it clicked.
type uiTrace struct {
	w io.Writer

	// mu guards what the generators read; they run on the draw thread.
	mu sync.Mutex
	// detailID is the selected delivery waiting to be drawn (0: none).
	detailID int64
	// count is the header's count waiting to be drawn (-1: none).
	count int64

	detail, counts *canvas.Raster
}

// newUITrace returns a trace writing to w, nil when w is nil: every
// method of a nil trace does nothing, so the views call it unconditionally.
func newUITrace(w io.Writer) *uiTrace {
	if w == nil {
		return nil
	}
	t := &uiTrace{w: w, count: -1}
	t.detail = probeRaster(t.detailDrawn)
	t.counts = probeRaster(t.countsDrawn)
	return t
}

func probeRaster(drawn func()) *canvas.Raster {
	r := canvas.NewRaster(func(int, int) image.Image {
		drawn()
		return image.NewNRGBA(image.Rect(0, 0, 1, 1)) // transparent
	})
	r.SetMinSize(fyne.NewSize(1, 1))
	return r
}

func (t *uiTrace) log(kind, args string) {
	fmt.Fprintf(t.w, "hookscope-trace %s %s unix_ns=%d\n", kind, args, time.Now().UnixNano())
}

// detailProbe is the raster to place in the detail pane (nil without a trace).
func (t *uiTrace) detailProbe() fyne.CanvasObject {
	if t == nil {
		return nil
	}
	return t.detail
}

// countsProbe is the raster to place beside the header's counts.
func (t *uiTrace) countsProbe() fyne.CanvasObject {
	if t == nil {
		return nil
	}
	return t.counts
}

// selected notes that the user selected delivery id (the list's callback ran).
func (t *uiTrace) selected(id int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.detailID = id
	t.mu.Unlock()
	t.log("select", fmt.Sprintf("id=%d", id))
}

// detailShown notes that the detail pane now shows id; the next frame draws it.
func (t *uiTrace) detailShown(id int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	want := t.detailID == id
	t.mu.Unlock()
	if want {
		t.log("shown", fmt.Sprintf("id=%d", id))
		t.detail.Refresh()
	}
}

func (t *uiTrace) detailDrawn() {
	t.mu.Lock()
	id := t.detailID
	t.detailID = 0
	t.mu.Unlock()
	if id != 0 {
		t.log("drawn", fmt.Sprintf("id=%d", id))
	}
}

// countsShown notes that the header now says n deliveries.
func (t *uiTrace) countsShown(n int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.count = n
	t.mu.Unlock()
	t.counts.Refresh()
}

func (t *uiTrace) countsDrawn() {
	t.mu.Lock()
	n := t.count
	t.count = -1
	t.mu.Unlock()
	if n >= 0 {
		t.log("counts", fmt.Sprintf("deliveries=%d", n))
	}
}
