package replay

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzValidateJSON checks that the edit validator agrees with
// encoding/json and always points inside the body.
func FuzzValidateJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"hook":{"uuid":"a"},"events":[]}`, `{"a":`, `{} {}`, "  ", `[1,2,]`, "\xff", `"\u00"`, "{\n\"a\": tru}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ValidateJSON(b)
		if (err == nil) != json.Valid(b) {
			t.Fatalf("ValidateJSON(%q) = %v, json.Valid = %v", b, err, json.Valid(b))
		}
		var je *JSONError
		if err != nil && (!errors.As(err, &je) || je.Offset < 0 || je.Offset > int64(len(b)) || je.Line < 1 || je.Column < 1) {
			t.Fatalf("ValidateJSON(%q): bad position %v", b, err)
		}
	})
}
