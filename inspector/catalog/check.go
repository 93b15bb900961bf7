package catalog

import (
	"fmt"
	"strings"
	"time"
)

// checker collects the contract problems of one event.
type checker struct {
	t     *tree
	typ   string
	probs []Problem
}

func (c *checker) add(sev Severity, path, format string, a ...any) {
	c.probs = append(c.probs, Problem{Severity: sev, Path: path, Message: fmt.Sprintf(format, a...)})
}

// object checks the members of object obj against fs.
func (c *checker) object(obj int32, fs []field, path string, extra extraRule) {
	t := c.t
	for i := range fs {
		f := &fs[i]
		m := t.get(obj, f.name)
		if m < 0 {
			if !f.optional {
				c.missing(f, path)
			}
			continue
		}
		c.value(m, f)
	}
	for m := t.nodes[obj].first; m >= 0; m = t.nodes[m].next {
		if listed(t, m, fs) {
			continue
		}
		key := t.key(m)
		p := join(path, key)
		if extra != nil {
			if sev, msg, ok := extra(c.typ, key, p); ok {
				c.add(sev, p, "%s", msg)
				continue
			}
		}
		c.add(SeverityNotice, p, "%s is not a field the spec lists here; the service may add fields, so it is shown but not checked", p)
	}
}

func listed(t *tree, m int32, fs []field) bool {
	for i := range fs {
		if t.keyIs(m, fs[i].name) {
			return true
		}
	}
	return false
}

func (c *checker) missing(f *field, parent string) {
	where := "every event object"
	switch {
	case c.typ != "" && strings.HasPrefix(f.path, "payload."):
		where = c.typ + " payloads"
		if parent != "payload" {
			where = parent + " in " + c.typ + " payloads"
		}
	case parent != "":
		where = parent
	}
	c.add(SeverityError, f.path, "%s is missing: the spec lists %s in %s", f.path, f.name, where)
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

// value checks one present member against its field description.
func (c *checker) value(m int32, f *field) {
	t := c.t
	k := t.kindOf(m)
	if k == kindNull {
		switch {
		case f.kind == vNumber || f.kind == vInteger:
			c.add(SeverityWarning, f.path, "%s is null where the spec says %s (real deliveries do this); treat the value as unknown", f.path, f.kind)
		case f.optional:
			c.add(SeverityWarning, f.path, "%s is null; the spec says %s, or leaves the field out when there is none", f.path, f.kind)
		default:
			c.add(SeverityError, f.path, "%s is null; the spec says %s", f.path, f.kind)
		}
		return
	}
	if k != wantKind(f.kind) {
		c.add(SeverityError, f.path, "%s is %s; the spec says %s", f.path, k, f.kind)
		return
	}
	switch f.kind {
	case vInteger:
		v, _ := t.num(m)
		raw := t.raw(m)
		switch {
		case v != float64(int64(v)):
			c.add(SeverityError, f.path, "%s is %s; the spec says an integer", f.path, raw)
		case strings.ContainsAny(string(raw), ".eE"):
			c.add(SeverityNotice, f.path, "%s is written %s; the spec says an integer, and a strict integer parser would reject it", f.path, raw)
		}
	case vObject:
		c.object(m, f.sub, f.path, f.extra)
	case vStringMap:
		for e := t.nodes[m].first; e >= 0; e = t.nodes[e].next {
			if ek := t.kindOf(e); ek != kindString {
				p := join(f.path, t.key(e))
				c.add(SeverityWarning, p, "%s is %s; the spec says the values of %s are strings", p, ek, f.name)
			}
		}
	case vString:
		if f.ts != tsNone {
			c.timestamp(t.text(m), f)
		}
	}
}

// timestamp checks a string against the field's timestamp rule.
func (c *checker) timestamp(s string, f *field) {
	tm, zoned := parseISO(s)
	if tm.IsZero() && !zoned {
		if f.ts == tsUTC {
			c.add(SeverityError, f.path, "%s is %q, not an ISO 8601 timestamp; the spec says ISO 8601 in UTC, for example 2026-03-01T12:00:00Z", f.path, s)
		} else {
			c.add(SeverityError, f.path, "%s is %q, not an ISO 8601 timestamp", f.path, s)
		}
		return
	}
	switch f.ts {
	case tsUTC:
		if !zoned {
			c.add(SeverityError, f.path, "%s (%s) has no time zone; the spec says it is always UTC (end it with Z)", f.path, s)
		} else if _, off := tm.Zone(); off != 0 {
			c.add(SeverityError, f.path, "%s (%s) is not in UTC; the spec says it is always UTC", f.path, s)
		}
	case tsOffset:
		switch {
		case !zoned:
			c.add(SeverityError, f.path, "%s (%s) has no offset; the spec says ISO 8601 with a +00:00 offset", f.path, s)
		case !strings.HasSuffix(s, "+00:00"):
			c.add(SeverityNotice, f.path, "%s (%s) does not end in +00:00 as the spec shows; it is a valid time, but a parser written for the documented form would fail", f.path, s)
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

// check runs every contract check on the parsed event rooted at 0.
func check(t *tree, et *eventType) []Problem {
	c := &checker{t: t}
	if et != nil {
		c.typ = et.name
	}
	const root = 0
	if k := t.kindOf(root); k != kindObject {
		c.add(SeverityError, "", "the event is %s, not an object with uuid, type, payload, metadata and generated_at", k)
		return c.probs
	}
	c.object(root, envelope, "", nil)
	if u := t.get(root, "uuid"); u >= 0 && t.kindOf(u) == kindString && len(t.raw(u)) == 0 {
		c.add(SeverityError, "uuid", "uuid is empty; consumers rely on it to recognise duplicates of the same event")
	}
	if ty := t.get(root, "type"); ty >= 0 && t.kindOf(ty) == kindString && et == nil {
		c.add(SeverityNotice, "type", "%q is not one of the 17 event types the spec lists; the event is shown generically", t.text(ty))
	}
	p := t.get(root, "payload")
	if et == nil || p < 0 || t.kindOf(p) != kindObject {
		return c.probs
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
	c.object(p, et.payload, "payload", extra)
	if et.name == TypeViewingPercentWatched {
		if pw := t.get(p, "percent_watched"); pw >= 0 {
			if v, ok := t.num(pw); ok && v == float64(int64(v)) && v != 25 && v != 50 && v != 75 && v != 100 {
				c.add(SeverityError, "payload.percent_watched", "payload.percent_watched is %s; the spec says the threshold is one of 25, 50, 75 or 100", t.raw(pw))
			}
		}
	}
	return c.probs
}
