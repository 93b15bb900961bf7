package catalog

// ReferenceEvent is referenceEvent for the external tests: the envelope,
// typed payload and summary read by name, as before the walker's slots.
func ReferenceEvent(raw []byte) (Event, bool) { return referenceEvent(raw) }
