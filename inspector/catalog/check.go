package catalog

import (
	"fmt"
	"strings"
	"time"
)

// walker checks one parsed event against the catalogue and renders its
// field list in the same pass: both follow the spec's field order, and
// walking once halves the lookups on big batches.
type walker struct {
	t     *tree
	et    *eventType
	typ   string
	probs []Problem
	out   []Field
	// slots receives the members the typed payload reads.
	slots *slots
	// only, when not nil, limits the field list to these paths
	// (DecodeOptions.OnlyFields).
	only []string
}

// keep reports whether the field at path goes into the field list.
func (w *walker) keep(path string) bool {
	if w.only == nil {
		return true
	}
	for _, p := range w.only {
		if p == path {
			return true
		}
	}
	return false
}

func (w *walker) add(sev Severity, path, format string, a ...any) {
	w.probs = append(w.probs, Problem{Severity: sev, Path: path, Message: fmt.Sprintf(format, a...)})
}

func (w *walker) emit(label string, m int32, unit, path string) {
	if !w.keep(path) {
		// Not rendering the value is the point: a number with a unit
		// would allocate.
		return
	}
	w.out = append(w.out, Field{Label: label, Value: w.text(m, unit), Path: path})
}

// text renders a value for the field list: strings decoded, numbers as
// written (with their unit), anything else as its JSON.
func (w *walker) text(m int32, unit string) string {
	t := w.t
	switch t.kindOf(m) {
	case kindString:
		return t.text(m)
	case kindNumber:
		if unit == "" {
			return t.raw(m)
		}
		return t.raw(m) + unit
	}
	return t.json(m)
}

// maxFields bounds the listed members of any object in the catalogue, so
// member matching can use arrays on the stack.
const maxFields = 16

// object checks and renders object obj against fs: listed members in spec
// order, then unlisted ones.
func (w *walker) object(obj int32, fs []field, path string, extra extraRule) {
	t := w.t
	var slots [maxFields]int32
	for i := range fs {
		slots[i] = -1
	}
	var unlistedBuf [8]int32
	unlisted := unlistedBuf[:0]
	for m := t.nodes[obj].first; m >= 0; m = t.nodes[m].next {
		j := match(t, m, fs)
		switch {
		case j < 0:
			unlisted = append(unlisted, m)
		case slots[j] < 0: // with a repeated key the first wins, as in get
			slots[j] = m
		}
	}
	for i := range fs {
		f := &fs[i]
		if slots[i] < 0 {
			if !f.optional {
				w.missing(f, path)
			}
			continue
		}
		if f.slot != noSlot {
			w.slots[f.slot] = slots[i]
		}
		w.value(slots[i], f)
	}
	for _, m := range unlisted {
		key := t.key(m)
		p := join(path, key)
		w.emit(p, m, "", p)
		if extra != nil {
			if sev, msg, ok := extra(w.typ, key, p); ok {
				w.add(sev, p, "%s", msg)
				continue
			}
		}
		w.add(SeverityNotice, p, "%s is not a field the spec lists here; the service may add fields, so it is shown but not checked", p)
	}
}

func match(t *tree, m int32, fs []field) int {
	n := &t.nodes[m]
	if n.keyEsc {
		k := t.key(m)
		for i := range fs {
			if fs[i].name == k {
				return i
			}
		}
		return -1
	}
	// The key as a substring of the source: no allocation, no per-field
	// re-read of the node.
	k := t.src[n.keyStart:n.keyEnd]
	for i := range fs {
		if fs[i].name == k {
			return i
		}
	}
	return -1
}

func (w *walker) missing(f *field, parent string) {
	where := "every event object"
	switch {
	case w.typ != "" && strings.HasPrefix(f.path, "payload."):
		where = w.typ + " payloads"
		if parent != "payload" {
			where = parent + " in " + w.typ + " payloads"
		}
	case parent != "":
		where = parent
	}
	w.add(SeverityError, f.path, "%s is missing: the spec lists %s in %s", f.path, f.name, where)
}

func wantKind(v valueKind) kind {
	switch v {
	case vString:
		return kindString
	case vNumber, vInteger:
		return kindNumber
	case vBool:
		return kindBool
	}
	return kindObject
}

// value checks and renders one present member.
func (w *walker) value(m int32, f *field) {
	t := w.t
	k := t.kindOf(m)
	if k == kindNull {
		w.emit(f.label, m, "", f.path)
		switch {
		case f.kind == vNumber || f.kind == vInteger:
			w.add(SeverityWarning, f.path, "%s is null where the spec says %s (real deliveries do this); treat the value as unknown", f.path, f.kind)
		case f.optional:
			w.add(SeverityWarning, f.path, "%s is null; the spec says %s, or leaves the field out when there is none", f.path, f.kind)
		default:
			w.add(SeverityError, f.path, "%s is null; the spec says %s", f.path, f.kind)
		}
		return
	}
	if k != wantKind(f.kind) {
		w.emit(f.label, m, "", f.path)
		w.add(SeverityError, f.path, "%s is %s; the spec says %s", f.path, k, f.kind)
		return
	}
	switch f.kind {
	case vInteger:
		w.emit(f.label, m, f.unit, f.path)
		v, _ := t.num(m)
		raw := t.raw(m)
		switch {
		case v != float64(int64(v)):
			w.add(SeverityError, f.path, "%s is %s; the spec says an integer", f.path, raw)
		case strings.ContainsAny(raw, ".eE"):
			w.add(SeverityNotice, f.path, "%s is written %s; the spec says an integer, and a strict integer parser would reject it", f.path, raw)
		}
	case vObject:
		w.object(m, f.sub, f.path, f.extra)
	case vAnyObject:
		if f.path == "payload" {
			w.payload(m)
			return
		}
		w.flatten(m, f.path, f.label, "")
	case vStringMap:
		if t.nodes[m].first < 0 && w.keep(f.path) {
			w.out = append(w.out, Field{Label: f.label, Value: "{}", Path: f.path})
		}
		for e := t.nodes[m].first; e >= 0; e = t.nodes[e].next {
			var label, p string
			if j := match(t, e, f.seen); j >= 0 {
				label, p = f.seen[j].label, f.seen[j].path
			} else {
				k := t.key(e)
				label, p = f.label+" "+k, join(f.path, k)
			}
			w.emit(label, e, "", p)
			if ek := t.kindOf(e); ek != kindString {
				w.add(SeverityWarning, p, "%s is %s; the spec says the values of %s are strings", p, ek, f.name)
			}
		}
	default:
		w.emit(f.label, m, f.unit, f.path)
		if f.ts != tsNone {
			w.timestamp(t.text(m), f)
		}
	}
}

// flatten renders an open object leaf by leaf: "Form first_name",
// "Previous thumbnail.url".
func (w *walker) flatten(obj int32, path, label, rel string) {
	t := w.t
	if t.nodes[obj].first < 0 {
		if w.keep(path) {
			w.out = append(w.out, Field{Label: strings.TrimSpace(label + " " + rel), Value: "{}", Path: path})
		}
		return
	}
	for m := t.nodes[obj].first; m >= 0; m = t.nodes[m].next {
		k := t.key(m)
		p, rk := join(path, k), join(rel, k)
		if t.kindOf(m) == kindObject {
			w.flatten(m, p, label, rk)
			continue
		}
		if w.keep(p) {
			w.emit(label+" "+rk, m, "", p)
		}
	}
}

// payload checks and renders the payload object of the event's type.
func (w *walker) payload(p int32) {
	t := w.t
	et := w.et
	if et == nil {
		w.flatten(p, "payload", "Payload", "")
		return
	}
	var extra extraRule
	if et.noProject {
		extra = func(typ, key, path string) (Severity, string, bool) {
			if key != "project" {
				return "", "", false
			}
			return SeverityWarning, "payload.project is present, but the spec says " + typ + " payloads carry no project", true
		}
	}
	w.object(p, et.payload, "payload", extra)
	if et.name == TypeViewingPercentWatched {
		if pw := w.slots[sPercentWatched]; pw >= 0 {
			if v, ok := t.num(pw); ok && v == float64(int64(v)) && v != 25 && v != 50 && v != 75 && v != 100 {
				w.add(SeverityError, "payload.percent_watched", "payload.percent_watched is %s; the spec says the threshold is one of 25, 50, 75 or 100", t.raw(pw))
			}
		}
	}
}

// timestamp checks a string against the field's timestamp rule.
func (w *walker) timestamp(s string, f *field) {
	tm, zoned := parseISO(s)
	if tm.IsZero() && !zoned {
		if f.ts == tsUTC {
			w.add(SeverityError, f.path, "%s is %q, not an ISO 8601 timestamp; the spec says ISO 8601 in UTC, for example 2026-03-01T12:00:00Z", f.path, s)
		} else {
			w.add(SeverityError, f.path, "%s is %q, not an ISO 8601 timestamp", f.path, s)
		}
		return
	}
	switch f.ts {
	case tsUTC:
		if !zoned {
			w.add(SeverityError, f.path, "%s (%s) has no time zone; the spec says it is always UTC (end it with Z)", f.path, s)
		} else if _, off := tm.Zone(); off != 0 {
			w.add(SeverityError, f.path, "%s (%s) is not in UTC; the spec says it is always UTC", f.path, s)
		}
	case tsOffset:
		switch {
		case !zoned:
			w.add(SeverityError, f.path, "%s (%s) has no offset; the spec says ISO 8601 with a +00:00 offset", f.path, s)
		case !strings.HasSuffix(s, "+00:00"):
			w.add(SeverityNotice, f.path, "%s (%s) does not end in +00:00 as the spec shows; it is a valid time, but a parser written for the documented form would fail", f.path, s)
		}
	}
}

// parseISO parses the ISO 8601 forms a timestamp may take: with a zone
// (zoned=true) or without. A zero time with zoned=false means unparseable.
func parseISO(s string) (t time.Time, zoned bool) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05", s); err == nil {
		return t, false
	}
	return time.Time{}, false
}

// walk runs every contract check on the parsed event rooted at node root
// and renders its field list. It fills sl (reset first) with the members
// the typed payload reads.
func walk(t *tree, root int32, et *eventType, fields []Field, sl *slots, only []string) ([]Problem, []Field) {
	sl.reset()
	if cap(fields) == 0 && only == nil {
		leaves := 1
		for i := root; i < t.nodes[root].after; i++ {
			if k := t.nodes[i].kind; k != kindObject && k != kindArray {
				leaves++
			}
		}
		// Every field is one scalar leaf (or one empty object), so this is
		// the exact size in the common case.
		fields = make([]Field, 0, leaves)
	}
	w := &walker{t: t, et: et, out: fields[:0], slots: sl, only: only}
	if et != nil {
		w.typ = et.name
	}
	if k := t.kindOf(root); k != kindObject {
		w.add(SeverityError, "", "the event is %s, not an object with uuid, type, payload, metadata and generated_at", k)
		if !w.keep("") {
			return w.probs, w.out
		}
		return w.probs, []Field{{Label: "Event", Value: w.text(root, ""), Path: ""}}
	}
	w.object(root, envelope, "", nil)
	if u := sl[sUUID]; u >= 0 && t.kindOf(u) == kindString && len(t.raw(u)) == 0 {
		w.add(SeverityError, "uuid", "uuid is empty; consumers rely on it to recognise duplicates of the same event")
	}
	if ty := sl[sType]; ty >= 0 && t.kindOf(ty) == kindString && et == nil {
		w.add(SeverityNotice, "type", "%q is not one of the 17 event types the spec lists; the event is shown generically", t.text(ty))
	}
	return w.probs, w.out
}
