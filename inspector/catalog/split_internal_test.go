package catalog

import (
	"bytes"
	"testing"
)

// sequentialMessage is ParseMessage without the split: the reference.
func sequentialMessage(body []byte) (hook string, raws [][]byte, ok bool) {
	t, err := parse(string(body), nil)
	if err != nil || t.kindOf(0) != kindObject {
		return "", nil, false
	}
	evs := t.get(0, "events")
	if evs < 0 || t.kindOf(evs) != kindArray {
		return "", nil, false
	}
	for e := t.nodes[evs].first; e >= 0; e = t.nodes[e].next {
		raws = append(raws, rawSpan(body, &t.nodes[e]))
	}
	return t.text(t.get(t.get(0, "hook"), "uuid")), raws, true
}

var splitSeeds = []string{
	`{"hook":{"uuid":"h"},"events":[{"a":1},{"b":[1,2,{"c":"]},\"["}]},3,"x",[],{},null,true,-1.5e3]}`,
	`{"events":[ {"a" : 1} , {"b":2} ,{"c":3} ],"hook":{"uuid":"h"}}`,
	`{"hook":{"uuid":"h"},"events":[]}`, `{"hook":{"uuid":"h"},"events":[ ]}`,
	`{"events":[{"a":1}],"events":[{"b":2}]}`, `{"\u0065vents":[{"a":1}],"events":[{"b":2}]}`,
	`{"events":[{"a":1},]}`, `{"events":[,{"a":1}]}`, `{"events":[{"a":1} {"b":2}]}`, `{"events":[{"a":"\"}]}`,
	`{"events":[{"a":1}}`, `{"events":[{"a":1}]`, `{"events":[{"a":1}]} x`, `{"events":[{"a":tru}]}`,
	`{"events":[1,2,3],"x":[}`, `{"events":"[1,2]"}`, `{"events":[[[[[1]]]],{"a":[[]]}]}`,
	`{"events":[{"a":"\u00e9\\"},"\\\\",{"b":"x\\\"y"}]}`, "{\"events\":[{\"a\":\"\x01\"}]}",
}

func checkSplit(t *testing.T, body []byte, pieces int) {
	hook, raws, ok := sequentialMessage(body)
	pm, sok := parseSplit(body, string(body), pieces)
	if !ok {
		if sok {
			t.Fatalf("%q: split parse accepted what the sequential parse rejects", body)
		}
		return
	}
	if !sok {
		// Allowed only where the split defers to the sequential parse: the
		// events member read may not be the first plain "events" key.
		if bytes.Count(body, []byte(`"events"`)) == 1 && !bytes.Contains(body, []byte(`\u`)) {
			t.Fatalf("%q: split parse refused a valid message", body)
		}
		return
	}
	if pm.HookUUID != hook || len(pm.Raw) != len(raws) || len(pm.refs) != len(raws) {
		t.Fatalf("%q: hook %q/%q, %d/%d events", body, pm.HookUUID, hook, len(pm.Raw), len(raws))
	}
	for i := range raws {
		if !bytes.Equal(pm.Raw[i], raws[i]) {
			t.Fatalf("%q: event %d is %q, want %q", body, i, pm.Raw[i], raws[i])
		}
	}
}

func TestSplitParseMatchesSequential(t *testing.T) {
	for _, s := range splitSeeds {
		for pieces := 1; pieces <= 4; pieces++ {
			checkSplit(t, []byte(s), pieces)
		}
	}
}

// FuzzSplitParse: parsing a message in pieces accepts exactly what the
// sequential parse accepts and finds the same events.
func FuzzSplitParse(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, pieces uint8) {
		checkSplit(t, body, int(pieces%6)+1)
	})
}
