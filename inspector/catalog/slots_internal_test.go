package catalog

import "testing"

// TestSlotsNameSchemaFields guards the slot table: a slot whose path no
// schema lists would never be filled, and its typed field would silently
// stay empty.
func TestSlotsNameSchemaFields(t *testing.T) {
	var seen [numSlots]bool
	var visit func(fs []field)
	visit = func(fs []field) {
		for _, f := range fs {
			if f.slot != noSlot {
				if slotPaths[f.slot] != f.path {
					t.Errorf("field %s has the slot of %s", f.path, slotPaths[f.slot])
				}
				seen[f.slot] = true
			}
			visit(f.sub)
			for _, k := range f.seen {
				if k.slot != noSlot {
					t.Errorf("seen key %s has a slot", k.path)
				}
			}
		}
	}
	visit(envelope)
	for _, et := range eventTypes {
		visit(et.payload)
	}
	for s, ok := range seen {
		if !ok {
			t.Errorf("slot %s is not a field of any schema", slotPaths[s])
		}
	}
}
