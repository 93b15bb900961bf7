package catalog

import (
	"fmt"
	"strings"
	"time"
)

// Severity follows consequence (docs/catalog.md, "Severity"):
//   - error: a consumer written to the spec would fail or mis-process the
//     event: an identifying field missing, null, empty or of the wrong
//     type, any field of the wrong type (an unknown structure), a
//     timestamp that does not parse;
//   - warning: a documented field absent or null where a consumer can cope
//     (descriptive fields, optional objects), citing the spec's section;
//   - notice: extra fields and stylistic departures.

// walker checks one parsed event against the catalogue and renders its
// field list in the same pass: both follow the spec's field order.
type walker struct {
	et    *eventType
	typ   string
	probs []Problem
	out   []Field
}

func (w *walker) add(sev Severity, path, format string, a ...any) {
	w.probs = append(w.probs, Problem{Severity: sev, Path: path, Message: fmt.Sprintf(format, a...)})
}

func (w *walker) emit(label string, v *value, unit, path string) {
	w.out = append(w.out, Field{Label: label, Value: display(v, unit), Path: path})
}

// display renders a value for the field list: strings decoded, numbers as
// written (with their unit), anything else as its JSON.
func display(v *value, unit string) string {
	switch v.kind {
	case '"':
		return v.text
	case '0':
		return string(v.raw) + unit
	}
	return string(v.raw)
}

// section is the spec section that documents the field at path: the event
// object (2.3), a type's payload members (6), the objects inside payloads
// (2.4).
func section(path string) string {
	switch {
	case !strings.HasPrefix(path, "payload."):
		return "2.3"
	case strings.Count(path, ".") == 1:
		return "6"
	}
	return "2.4"
}

// object checks and renders object obj against fs: listed members in spec
// order, then unlisted ones in the order sent.
func (w *walker) object(obj *value, fs []field, path string, extra extraRule) {
	found := make([]*value, len(fs))
	seen := make(map[string]bool, len(obj.members))
	for _, m := range obj.members {
		if seen[m.key] {
			p := join(path, m.key)
			w.add(SeverityWarning, p, "%s appears more than once in the object; most JSON parsers keep the last value (checked and shown here), strict ones reject the event", p)
		}
		seen[m.key] = true
		if j := match(m.key, fs); j >= 0 {
			found[j] = m.val // the last of a repeated key wins, as in get
		}
	}
	for i := range fs {
		f := &fs[i]
		if found[i] == nil {
			if !f.optional {
				w.missing(f, path)
			}
			continue
		}
		w.value(found[i], f)
	}
	for _, m := range obj.members {
		if match(m.key, fs) >= 0 {
			continue
		}
		p := join(path, m.key)
		w.emit(p, m.val, "", p)
		if extra != nil {
			if sev, msg, ok := extra(w.typ, m.key, p); ok {
				w.add(sev, p, "%s", msg)
				continue
			}
		}
		w.add(SeverityNotice, p, "%s is not a field the spec lists here; the service may add fields, so it is shown but not checked", p)
	}
}

func match(key string, fs []field) int {
	for i := range fs {
		if fs[i].name == key {
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
	if f.identifies != "" {
		w.add(SeverityError, f.path, "%s is missing: the spec lists %s in %s (spec %s); a consumer needs it to %s", f.path, f.name, where, section(f.path), f.identifies)
		return
	}
	w.add(SeverityWarning, f.path, "%s is missing: the spec lists %s in %s (spec %s)", f.path, f.name, where, section(f.path))
}

func wantKind(v valueKind) kind {
	switch v {
	case vString:
		return '"'
	case vNumber, vInteger:
		return '0'
	case vBool:
		return 't'
	}
	return '{'
}

// value checks and renders one present member.
func (w *walker) value(v *value, f *field) {
	k := v.kind
	if k == 'n' {
		w.emit(f.label, v, "", f.path)
		switch {
		case f.identifies != "":
			w.add(SeverityError, f.path, "%s is null; the spec says %s, and a consumer needs it to %s", f.path, f.kind, f.identifies)
		case f.kind == vNumber || f.kind == vInteger:
			w.add(SeverityWarning, f.path, "%s is null where the spec says %s (spec %s; real deliveries do this); treat the value as unknown", f.path, f.kind, section(f.path))
		case f.optional:
			w.add(SeverityWarning, f.path, "%s is null; the spec says %s, or leaves the field out when there is none (spec %s)", f.path, f.kind, section(f.path))
		default:
			w.add(SeverityWarning, f.path, "%s is null where the spec says %s (spec %s)", f.path, f.kind, section(f.path))
		}
		return
	}
	if k.isBool() {
		k = 't'
	}
	if k != wantKind(f.kind) {
		w.emit(f.label, v, "", f.path)
		w.add(SeverityError, f.path, "%s is %s; the spec says %s", f.path, v.kind, f.kind)
		return
	}
	switch f.kind {
	case vInteger:
		w.emit(f.label, v, f.unit, f.path)
		n, ok := v.num()
		raw := string(v.raw)
		switch {
		case !ok || n != float64(int64(n)):
			w.add(SeverityError, f.path, "%s is %s; the spec says an integer", f.path, raw)
		case strings.ContainsAny(raw, ".eE"):
			w.add(SeverityNotice, f.path, "%s is written %s; the spec says an integer, and a strict integer parser would reject it", f.path, raw)
		}
	case vObject:
		w.object(v, f.sub, f.path, f.extra)
	case vAnyObject:
		if f.path == "payload" {
			w.payload(v)
			return
		}
		w.flatten(v, f.path, f.label, "")
	case vStringMap:
		if len(v.members) == 0 {
			w.out = append(w.out, Field{Label: f.label, Value: "{}", Path: f.path})
		}
		for _, m := range v.members {
			label, p := f.label+" "+m.key, join(f.path, m.key)
			w.emit(label, m.val, "", p)
			if m.val.kind != '"' {
				w.add(SeverityWarning, p, "%s is %s; the spec says the values of %s are strings (spec 2.4)", p, m.val.kind, f.name)
			}
		}
	default:
		w.emit(f.label, v, f.unit, f.path)
		if f.identifies != "" && v.kind == '"' && v.text == "" {
			w.add(SeverityError, f.path, "%s is empty; a consumer needs it to %s", f.path, f.identifies)
		}
		if f.ts != tsNone {
			w.timestamp(v.text, f)
		}
	}
}

// flatten renders an open object leaf by leaf: "Previous thumbnail.url".
func (w *walker) flatten(obj *value, path, label, rel string) {
	if len(obj.members) == 0 {
		w.out = append(w.out, Field{Label: strings.TrimSpace(label + " " + rel), Value: "{}", Path: path})
		return
	}
	for _, m := range obj.members {
		p, rk := join(path, m.key), join(rel, m.key)
		if m.val.kind == '{' {
			w.flatten(m.val, p, label, rk)
			continue
		}
		w.emit(label+" "+rk, m.val, "", p)
	}
}

// payload checks and renders the payload object of the event's type.
func (w *walker) payload(p *value) {
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
			return SeverityNotice, "payload.project is present, but the spec says " + typ + " payloads carry no project (spec 2.4); it is shown but not checked", true
		}
	}
	w.object(p, et.payload, "payload", extra)
	if et.name == TypeViewingPercentWatched {
		pw := p.get("percent_watched")
		if n, ok := pw.num(); ok && n == float64(int64(n)) && n != 25 && n != 50 && n != 75 && n != 100 {
			w.add(SeverityError, "payload.percent_watched", "payload.percent_watched is %s; the spec says the threshold is one of 25, 50, 75 or 100", pw.raw)
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
			w.add(SeverityError, f.path, "%s (%s) has no time zone; the spec says it is always UTC (end it with Z), and an RFC 3339 parser rejects it", f.path, s)
		} else if _, off := tm.Zone(); off != 0 {
			w.add(SeverityWarning, f.path, "%s (%s) is not in UTC; the spec says it is always UTC (spec 2.3). The instant is exact, but a consumer comparing the text to order events gets it wrong", f.path, s)
		}
	case tsOffset:
		switch {
		case !zoned:
			w.add(SeverityError, f.path, "%s (%s) has no offset; the spec says ISO 8601 with a +00:00 offset, and an RFC 3339 parser rejects it", f.path, s)
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

// walk runs every contract check on the parsed event root and renders its
// field list.
func walk(root *value, et *eventType) ([]Problem, []Field) {
	w := &walker{et: et}
	if et != nil {
		w.typ = et.name
	}
	if root.kind != '{' {
		w.add(SeverityError, "", "the event is %s, not an object with uuid, type, payload, metadata and generated_at", root.kind)
		return w.probs, []Field{{Label: "Event", Value: display(root, ""), Path: ""}}
	}
	w.object(root, envelope, "", nil)
	if ty := root.get("type"); ty != nil && ty.kind == '"' && et == nil && ty.text != "" {
		w.add(SeverityNotice, "type", "%q is not one of the 17 event types the spec lists; the event is shown generically", ty.text)
	}
	return w.probs, w.out
}
