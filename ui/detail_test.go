package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// allRows joins what every row of v shows (small texts only).
func allRows(v *codeView) string {
	var b strings.Builder
	for i := 0; i < v.Rows(); i++ {
		b.WriteString(v.RowText(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestFoldRowsCutsLongLinesWithoutSplittingCharacters(t *testing.T) {
	tests := []struct {
		in   string
		cols int
		want []string
	}{
		{"short", 10, []string{"short"}},
		{"abcdefghij", 5, []string{"abcde", "fghij"}},
		{"abcdefghijk\nxy", 5, []string{"abcde", "fghij", "k", "xy"}},
		{"ééé", 1, []string{"é", "é", "é"}}, // 2-byte runes: a cut never lands inside one
		{"", 4, []string{""}},
		{"a\n", 4, []string{"a", ""}},
	}
	for _, tc := range tests {
		text := []byte(tc.in)
		lines, longest := indexLines(text)
		rows, _ := foldRows(text, lines, longest, tc.cols, false)
		v := &codeView{text: text, lines: lines, rows: rows, indexed: true, foldedAt: tc.cols, cols: tc.cols}
		var got []string
		for r := range rows {
			got = append(got, v.RowText(r))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("fold(%q, %d) = %q, want %q", tc.in, tc.cols, got, tc.want)
		}
	}
}

func TestJSONTokensColourKeysValuesAndFoldedStrings(t *testing.T) {
	text := []byte(`  "name": "a \"quoted\" title", "n": -1.5e3, "ok": true, "x": null`)
	kinds := map[string]tokenKind{}
	for _, tok := range jsonTokens(text, 0, len(text), jsonNormal) {
		kinds[string(text[tok.from:tok.to])] = tok.kind
	}
	for s, want := range map[string]tokenKind{`"name"`: tokKey, `"a \"quoted\" title"`: tokString, `-1.5e3`: tokNumber, `true`: tokLiteral, `null`: tokLiteral} {
		if kinds[s] != want {
			t.Errorf("kind of %s = %d, want %d (tokens %v)", s, kinds[s], want, kinds)
		}
	}
	// A row that starts inside a folded string value stays a string up to
	// its closing quote.
	long := []byte(`"key": "` + strings.Repeat("x", 50) + `",`)
	lines, longest := indexLines(long)
	rows, states := foldRows(long, lines, longest, 20, true)
	if len(rows) != 3 || states[1] != jsonString {
		t.Fatalf("rows %v states %v", rows, states)
	}
	toks := jsonTokens(long, int(rows[2]), len(long), states[2])
	if toks[0].kind != tokString || string(long[toks[0].from:toks[0].to]) != strings.Repeat("x", 18)+`"` {
		t.Fatalf("continuation tokens = %+v", toks)
	}
}

func TestRawTabShowsNotesAndHexForBinary(t *testing.T) {
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.ready", "x", inspector.SignatureValid, func(r *inspector.Record) {
			r.Delivery.Body = []byte{0xff, 0xfe, 'a', 'b'}
			r.Delivery.Truncated = true
			r.Delivery.BodyLength = 99 << 20
		})
	})
	d := h.win.deliveries.Detail
	h.win.deliveries.List.Select(0)
	d.Tabs.SelectIndex(2)
	if !strings.Contains(d.RawNote.Text, "Truncated") || !strings.Contains(d.RawNote.Text, "not valid UTF-8") {
		t.Fatalf("raw note = %q", d.RawNote.Text)
	}
	if got := d.RawView.RowText(0); !strings.Contains(got, "ff fe 61 62") || !strings.HasSuffix(got, "|..ab|") {
		t.Fatalf("raw row = %q, want a hex dump", got)
	}
}

// bigBody is a webhook message of at least size bytes, many events.
func bigBody(size int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"hook":{"uuid":"h"},"events":[`)
	for i := 0; sb.Len() < size; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"uuid":"e%d","type":"media.updated","payload":{"media":{"id":"m%d","name":"A video with a fairly long title number %d"}},"metadata":{"account_id":"1"},"generated_at":"2026-03-02T09:10:19Z"}`, i, i, i)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// TestPrettyWaitsForTheJSONTab: opening a delivery while the Events tab
// is shown formats nothing; the JSON tab formats the body when shown.
func TestPrettyWaitsForTheJSONTab(t *testing.T) {
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.ready", "first", inspector.SignatureValid, nil)
		s.add("media.created", "second", inspector.SignatureValid, nil)
	})
	d := h.win.deliveries.Detail
	h.win.deliveries.List.Select(0)
	d.Tabs.SelectIndex(1)
	first := catalog.Pretty(d.rec.Delivery.Body)
	if !bytes.Equal(d.JSONView.text, first) {
		t.Fatalf("JSON tab shows %q, want %q", d.JSONView.text, first)
	}
	d.Tabs.SelectIndex(0)
	h.win.deliveries.List.Select(1)
	if !bytes.Equal(d.JSONView.text, first) {
		t.Fatalf("the second body was formatted before the JSON tab was shown")
	}
	d.Tabs.SelectIndex(1)
	if want := catalog.Pretty(d.rec.Delivery.Body); bytes.Equal(first, want) || !bytes.Equal(d.JSONView.text, want) {
		t.Fatalf("second delivery: JSON tab shows %q, want %q", d.JSONView.text, want)
	}
}

func TestLargeBodyEveryLineReachableOnlyVisibleRowsBuilt(t *testing.T) {
	body := bigBody(1 << 20)
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.updated", "big", inspector.SignatureValid, func(r *inspector.Record) {
			r.Delivery.Body, r.Delivery.BodyLength = body, int64(len(body))
		})
	})
	d := h.win.deliveries.Detail
	h.win.deliveries.List.Select(0)
	d.Tabs.SelectIndex(1)
	pretty := strings.Split(string(catalog.Pretty(body)), "\n")
	jv := d.JSONView
	if jv.Rows() != len(pretty) {
		t.Fatalf("JSON rows = %d, want every one of the %d lines", jv.Rows(), len(pretty))
	}
	if got := jv.RowText(jv.Rows() - 2); got != pretty[len(pretty)-2] {
		t.Fatalf("second-last row = %q, want %q", got, pretty[len(pretty)-2])
	}
	if jv.created == 0 || jv.created > 200 {
		t.Fatalf("%d row objects built for %d rows, want only the visible ones", jv.created, jv.Rows())
	}

	// Find jumps to the last event's name, far down; Copy line copies it.
	last := fmt.Sprintf("number %d\"", strings.Count(string(body), `"uuid":"e`)-1)
	jv.Find.SetText(strings.ToUpper(last)) // case-insensitive
	if jv.FindInfo.Text != "1 of 1" || jv.selected < jv.Rows()-30 {
		t.Fatalf("find: info %q, selected row %d of %d", jv.FindInfo.Text, jv.selected, jv.Rows())
	}
	jv.CopyLine.OnTapped()
	if got := h.app.Clipboard().Content(); !strings.Contains(got, `"name": "A video`) || !strings.HasSuffix(got, last) {
		t.Fatalf("copied line = %q", got)
	}

	// Raw: the compact body is one line, folded to the pane; all of it is there.
	d.Tabs.SelectIndex(2)
	rv := d.RawView
	var b strings.Builder
	for i := 0; i < rv.Rows(); i++ {
		b.WriteString(rv.RowText(i))
	}
	if b.String() != string(body) {
		t.Fatalf("raw rows hold %d bytes, want the %d of the body", b.Len(), len(body))
	}
	// A narrower pane folds at fewer columns and keeps every byte.
	before := rv.Rows()
	h.win.w.Resize(fyne.NewSize(900, 800))
	if rv.Rows() <= before {
		t.Fatalf("rows after narrowing = %d, before %d: not refolded", rv.Rows(), before)
	}
}

func TestHiddenTabsAreBuiltWhenShown(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	v, d := h.win.deliveries, h.win.deliveries.Detail
	v.List.Select(0)
	d.Tabs.SelectIndex(1) // JSON
	v.List.Select(1)      // opened while Events and Signature are hidden
	if d.sigTab.pending == nil || d.eventsTab.pending == nil {
		t.Fatal("hidden tabs were built at once")
	}
	d.Tabs.SelectIndex(4)
	if d.sigTab.pending != nil || len(d.SigBox.Objects) == 0 {
		t.Fatal("Signature tab not built when shown")
	}
	d.Tabs.SelectIndex(0)
	if len(d.EventsBox.Objects) == 0 || !strings.Contains(allRows(d.JSONView), "media.ready") {
		t.Fatal("Events tab not built for the delivery opened while hidden")
	}
}

// longShortLong stores a delivery whose panes all scroll (many events,
// many headers, a long body), a short one and another long one.
func longShortLong(s *fakeStore) {
	addLong(s)
	s.add("media.ready", "short", inspector.SignatureValid, nil)
	addLong(s)
}

func addLong(s *fakeStore) {
	s.add("media.created", "long", inspector.SignatureValid, func(r *inspector.Record) {
		var evs []inspector.EventAnalysis
		for i := range maxCards {
			ev := r.Analysis.Events[0]
			ev.UUID = fmt.Sprintf("long%d", i)
			ev.Problems = []catalog.Problem{{Severity: catalog.SeverityWarning, Path: "payload.media.name", Message: strings.Repeat("a long explanation ", 20)}}
			evs = append(evs, ev)
		}
		r.Analysis.Events = evs
		for i := range 60 {
			r.Delivery.Headers = append(r.Delivery.Headers, inspector.Header{Name: fmt.Sprintf("X-Extra-%d", i), Value: "v"})
		}
		r.Analysis.Signature.Expected = strings.Split("abcdefghijklmnop", "")
		r.Delivery.Body = bytes.Repeat([]byte("line\n"), 500)
	})
}

// TestEachDeliveryOpensAtItsTop: scrolled down in every pane of one
// delivery, opening another shows each pane from its top; the same
// delivery shown again (a new verdict) keeps its place.
func TestEachDeliveryOpensAtItsTop(t *testing.T) {
	h := newHarness(t, longShortLong)
	v, d := h.win.deliveries, h.win.deliveries.Detail
	v.open(1)
	scrolled := map[string]func() float32{
		"Events":    func() float32 { return d.EventsScroll.Offset.Y },
		"JSON":      func() float32 { return d.JSONView.List.GetScrollOffset() },
		"Raw":       func() float32 { return d.RawView.List.GetScrollOffset() },
		"Headers":   func() float32 { return d.HeadersScroll.Offset.Y },
		"Signature": func() float32 { return d.SigScroll.Offset.Y },
	}
	scrollDown := func() {
		for i, name := range []string{"Events", "JSON", "Raw", "Headers", "Signature"} {
			d.Tabs.SelectIndex(i)
			switch name {
			case "Events":
				d.EventsScroll.ScrollToBottom()
			case "JSON":
				d.JSONView.List.ScrollToBottom()
			case "Raw":
				d.RawView.List.ScrollToBottom()
			case "Headers":
				d.HeadersScroll.ScrollToBottom()
			case "Signature":
				d.SigScroll.ScrollToBottom()
			}
			if scrolled[name]() == 0 {
				t.Fatalf("%s pane of the long delivery does not scroll; the test proves nothing", name)
			}
		}
	}
	for _, next := range []int64{3, 2} { // another long one, then a short one
		scrollDown()
		d.Tabs.SelectIndex(0)
		v.open(next)
		for i, name := range []string{"Events", "JSON", "Raw", "Headers", "Signature"} {
			d.Tabs.SelectIndex(i)
			if y := scrolled[name](); y != 0 {
				t.Errorf("%s pane opened delivery %d scrolled to %.0f, want its top", name, next, y)
			}
		}
	}
	v.open(1)
	d.Tabs.SelectIndex(0)
	d.EventsScroll.ScrollToBottom()
	at := d.EventsScroll.Offset.Y
	d.load(1)
	if d.EventsScroll.Offset.Y != at {
		t.Errorf("reloading the same delivery moved Events from %.0f to %.0f", at, d.EventsScroll.Offset.Y)
	}
}

// divergentPair stores an event and a divergent copy of it whose name
// changed and which gained a field.
func divergentPair(s *fakeStore) {
	first := s.add("media.updated", "first", inspector.SignatureValid, nil)
	s.add("media.updated", "second", inspector.SignatureValid, func(r *inspector.Record) {
		ev := &r.Analysis.Events[0]
		ev.UUID = first.Analysis.Events[0].UUID
		ev.Raw = json.RawMessage(strings.Replace(string(first.Analysis.Events[0].Raw), `"name":"Clip 1"`, `"name":"Clip X","duration":12`, 1))
		ev.Duplicate, ev.Divergent, ev.Copies, ev.FirstDeliveryID = true, true, 2, first.Delivery.ID
		first.Analysis.Events[0].Copies = 2
	})
}

func TestDivergentCopyShowsWhatChangedAsPaths(t *testing.T) {
	h := newHarness(t, divergentPair)
	d := h.win.deliveries.Detail
	h.win.deliveries.open(2)
	texts := strings.Join(labelTexts(d.EventsBox), "\n")
	for _, want := range []string{`payload.media.name: "Clip 1" → "Clip X"`, `payload.media.duration: added 12`, "What changed from the first copy (#1)"} {
		if !strings.Contains(texts, want) {
			t.Fatalf("event card lacks %q:\n%s", want, texts)
		}
	}
	// Only what changed is listed, not the lines of the first copy.
	if strings.Contains(texts, `"uuid"`) || strings.Contains(texts, "account_id") {
		t.Fatalf("unchanged fields listed as differences:\n%s", texts)
	}
	full := findButton(d.EventsBox, "Full diff…")
	if full == nil {
		t.Fatal("no Full diff button")
	}
	test.Tap(full)
	diff := allRows(d.DiffView)
	for _, want := range []string{`-      "name": "Clip 1"`, `+      "name": "Clip X"`, `+      "duration": 12,`} {
		if !strings.Contains(diff, want) {
			t.Fatalf("full diff lacks %q:\n%s", want, diff)
		}
	}
}

// TestHeadersShowWholeValues: the Headers tab shows X-Service-Signature's
// 64 hex digits whole (it cut them with "…"), wrapped to the pane.
func TestHeadersShowWholeValues(t *testing.T) {
	sig := strings.Repeat("0123456789abcdef", 4)
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.created", "created", inspector.SignatureValid, func(r *inspector.Record) {
			r.Delivery.Headers[1].Value = sig
		})
	})
	h.win.w.Resize(fyne.NewSize(960, 640))
	d := h.win.deliveries.Detail
	h.win.deliveries.List.Select(0)
	d.Tabs.SelectIndex(3)
	var found *widget.Label
	walk(d.HeadersBox, func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok && l.Text == sig {
			found = l
		}
	})
	if found == nil {
		t.Fatalf("no label holds the whole signature: %q", labelTexts(d.HeadersBox))
	}
	if found.Truncation != fyne.TextTruncateOff || found.Wrapping == fyne.TextWrapOff {
		t.Fatalf("the signature is cut (truncation %v, wrapping %v)", found.Truncation, found.Wrapping)
	}
}

// TestFormattedTextSaysItsReceivedSize: the app's 11-byte answer,
// pretty-printed, is said to be 11 B (it said 17 B, the formatted size).
func TestFormattedTextSaysItsReceivedSize(t *testing.T) {
	test.NewTempApp(t)
	v := newCodeView(func(string, string) {})
	raw := []byte(`{"ok":true}`)
	v.setFormatted(catalog.Pretty(raw), codeJSON, len(raw))
	if !strings.HasPrefix(v.Info.Text, "11 B as received") {
		t.Fatalf("footer %q, want the received size first", v.Info.Text)
	}
	v.setText(raw, codePlain)
	if !strings.HasPrefix(v.Info.Text, "11 B · 1 line") {
		t.Fatalf("footer of unformatted text %q", v.Info.Text)
	}
}
