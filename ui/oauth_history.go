package ui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/oauthflow"
)

// oauthHistoryLimit bounds how many transcripts the history loads.
const oauthHistoryLimit = 5000

// pastFlow is one flow of the history with its transcripts.
type pastFlow struct {
	ID, Profile string
	Started     time.Time
	Transcripts []oauthflow.Transcript
}

// summary is the list line.
func (p pastFlow) summary() string {
	var steps []string
	failed := 0
	for _, t := range p.Transcripts {
		steps = append(steps, string(t.Step))
		if !t.OK() {
			failed++
		}
	}
	s := fmt.Sprintf("%s  %s  ·  %s", p.Started.Local().Format("2006-01-02 15:04:05"), p.Profile, strings.Join(oauthCompactSteps(steps), " → "))
	if failed > 0 {
		s += fmt.Sprintf("  ·  %d failed", failed)
	}
	return s
}

// oauthCompactSteps folds repeats: call, call, call -> call ×3.
func oauthCompactSteps(steps []string) []string {
	var out []string
	for i := 0; i < len(steps); {
		j := i
		for j < len(steps) && steps[j] == steps[i] {
			j++
		}
		if n := j - i; n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", steps[i], n))
		} else {
			out = append(out, steps[i])
		}
		i = j
	}
	return out
}

// oauthHistoryView lists past flows and exports one.
type oauthHistoryView struct {
	t       *oauthTab
	content fyne.CanvasObject

	List     *widget.List
	flows    []pastFlow
	selected int
	Detail   *fyne.Container
	// DetailScroll scrolls Detail; another flow opens at its top.
	DetailScroll *container.Scroll
	// shown is the flow Detail shows, to tell another flow from a
	// re-render of the same one (Reveal), which keeps its place.
	shown      string
	ExportHAR  *widget.Button
	ExportMD   *widget.Button
	CopyMD     *widget.Button
	Reload     *widget.Button
	EmptyLabel *widget.Label
}

func newOAuthHistoryView(t *oauthTab) *oauthHistoryView {
	v := &oauthHistoryView{t: t, selected: -1}
	v.List = widget.NewList(func() int { return len(v.flows) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("flow")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(v.flows) {
				o.(*widget.Label).SetText(v.flows[i].summary())
			}
		})
	v.List.OnSelected = func(i widget.ListItemID) { v.selected = i; v.rerender() }
	v.Detail = container.NewVBox()
	v.ExportHAR = widget.NewButtonWithIcon("Export HAR…", theme.DocumentSaveIcon(), func() { v.export("har") })
	v.ExportMD = widget.NewButtonWithIcon("Export Markdown…", theme.DocumentSaveIcon(), func() { v.export("md") })
	v.CopyMD = widget.NewButtonWithIcon("Copy Markdown", theme.ContentCopyIcon(), v.copyMarkdown)
	v.Reload = widget.NewButtonWithIcon("", theme.ViewRefreshIcon(), v.reload)
	v.EmptyLabel = widget.NewLabel("No flows yet: each Authorize starts one; its steps are kept here with every request and response.")
	v.EmptyLabel.Wrapping = fyne.TextWrapWord
	note := oauthCaption("Exports are redacted (client secret, codes and tokens) unless Reveal secrets is ticked in Steps.")
	bar := container.NewBorder(nil, nil, nil, v.Reload, container.NewHBox(v.ExportHAR, v.ExportMD, v.CopyMD))
	top := container.NewVBox(bar, note, v.EmptyLabel)
	v.DetailScroll = container.NewVScroll(container.NewPadded(v.Detail))
	split := container.NewVSplit(v.List, v.DetailScroll)
	split.Offset = 0.3
	v.content = container.NewBorder(top, nil, nil, nil, split)
	v.enable()
	return v
}

func (v *oauthHistoryView) enable() {
	for _, b := range []*widget.Button{v.ExportHAR, v.ExportMD, v.CopyMD} {
		if v.current() != nil {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	if len(v.flows) == 0 {
		v.EmptyLabel.Show()
	} else {
		v.EmptyLabel.Hide()
	}
}

func (v *oauthHistoryView) current() *pastFlow {
	if v.selected < 0 || v.selected >= len(v.flows) {
		return nil
	}
	return &v.flows[v.selected]
}

// reload reads the transcripts from the store, newest flow first.
func (v *oauthHistoryView) reload() {
	store := v.t.store
	v.t.run(func() func() {
		ts, err := store.ListTranscripts(context.Background(), "", "", oauthHistoryLimit)
		return func() {
			if err != nil {
				v.t.m.showError(fmt.Errorf("OAuth history: %w", err))
				return
			}
			v.setFlows(oauthGroupFlows(ts))
		}
	})
}

func oauthGroupFlows(ts []oauthflow.Transcript) []pastFlow {
	idx := map[string]int{}
	var out []pastFlow
	for _, t := range ts {
		i, ok := idx[t.FlowID]
		if !ok {
			i = len(out)
			idx[t.FlowID] = i
			out = append(out, pastFlow{ID: t.FlowID, Profile: t.Profile, Started: t.Time})
		}
		out[i].Transcripts = append(out[i].Transcripts, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out
}

func (v *oauthHistoryView) setFlows(fs []pastFlow) {
	keep := ""
	if c := v.current(); c != nil {
		keep = c.ID
	}
	v.flows = fs
	v.selected = -1
	v.List.UnselectAll()
	v.List.Refresh()
	for i, f := range fs {
		if f.ID == keep || (keep == "" && i == 0) {
			v.List.Select(i)
			break
		}
	}
	v.enable()
	v.rerender()
}

// options redact with what the tab knows: the current flow's secrets and
// the client secret of the flow's profile.
func (v *oauthHistoryView) options(f *pastFlow) oauthflow.RenderOptions {
	o := v.t.renderOptions()
	for _, p := range v.t.profiles.profiles {
		if p.Name == f.Profile {
			o.Secrets = append(o.Secrets, p.ClientSecret)
		}
	}
	return o
}

func (v *oauthHistoryView) markdown(f *pastFlow) string {
	title := fmt.Sprintf("OAuth flow %s (profile %s, %s)", f.ID, f.Profile, f.Started.UTC().Format(time.RFC3339))
	return oauthflow.Markdown(title, f.Transcripts, v.options(f))
}

// rerender shows the selected flow's transcripts (Reveal may have changed).
func (v *oauthHistoryView) rerender() {
	v.Detail.RemoveAll()
	f := v.current()
	v.enable()
	if f == nil {
		v.shown = ""
		return
	}
	if f.ID != v.shown {
		v.shown = f.ID
		v.DetailScroll.ScrollToTop()
	}
	o := v.options(f)
	ts := f.Transcripts
	if !o.Reveal {
		ts = oauthflow.RedactAll(ts, o.Secrets...)
	}
	for _, tr := range ts {
		head := tr.Title() + "  ·  " + tr.Time.Local().Format("15:04:05")
		if r := tr.Response; r != nil {
			head += fmt.Sprintf("  ·  %d %s", r.Status, r.StatusText)
			if !tr.Inbound {
				head += fmt.Sprintf("  ·  %s", r.Duration.Round(time.Microsecond))
			}
		}
		if tr.Error != "" {
			head += "  ·  failed"
		}
		v.Detail.Add(widget.NewAccordion(widget.NewAccordionItem(head, oauthTranscriptView(tr))))
		if tr.Error != "" {
			l := widget.NewLabel(tr.Error)
			l.Wrapping = fyne.TextWrapWord
			l.Importance = widget.DangerImportance
			v.Detail.Add(l)
		}
	}
	v.Detail.Refresh()
}

func (v *oauthHistoryView) copyMarkdown() {
	f := v.current()
	if f == nil {
		return
	}
	v.t.m.copy(v.markdown(f), "Markdown report")
}

// exportBytes renders the selected flow as HAR or Markdown.
func (v *oauthHistoryView) exportBytes(kind string) ([]byte, string, error) {
	f := v.current()
	if f == nil {
		return nil, "", fmt.Errorf("export: no flow selected")
	}
	name := fmt.Sprintf("hookscope-oauth-%s-%s", f.Profile, f.Started.UTC().Format("20060102-150405"))
	if kind == "har" {
		b, err := oauthflow.HAR(f.Transcripts, v.t.m.svc.Version, v.options(f))
		return b, name + ".har", err
	}
	return []byte(v.markdown(f)), name + ".md", nil
}

func (v *oauthHistoryView) export(kind string) {
	data, name, err := v.exportBytes(kind)
	if err != nil {
		v.t.m.showError(err)
		return
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil {
			v.t.m.showError(fmt.Errorf("export: %w", err))
			return
		}
		if w == nil {
			return // cancelled
		}
		path := w.URI().Path()
		v.t.run(func() func() {
			_, werr := w.Write(data)
			cerr := w.Close()
			return func() {
				if werr == nil {
					werr = cerr
				}
				if werr != nil {
					v.t.m.showError(fmt.Errorf("export to %s: %w", path, werr))
					return
				}
				v.t.m.showStatus(fmt.Sprintf("Exported %s (%s).", path, human.Bytes(int64(len(data)))))
			}
		})
	}, v.t.m.w)
	d.SetFileName(name)
	d.Show()
}
