package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hookscope/hookscope/inspector/catalog"
)

// PrettyJSON is v as JSON for people, laid out by catalog.Pretty like
// every pretty JSON Hookscope shows; &, < and > are left as they are.
func PrettyJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return catalog.Pretty(b.Bytes()), nil
}

// PrintJSON writes v as pretty JSON to the command's output, in colour
// when that is a terminal (a pipe or a file gets plain JSON).
func PrintJSON(env *Env, v any) error {
	b, err := PrettyJSON(v)
	if err != nil {
		return err
	}
	if env.IsTerminal {
		b = catalog.PrettyColor(b)
	}
	if _, err := env.Stdout.Write(b); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// PrettyBody is a body received from a server as a person reads it: JSON
// pretty and coloured on a terminal (catalog.Pretty, as every pretty JSON
// Hookscope shows), and anything else, or any body when the output is a
// pipe or a file, exactly as received.
func PrettyBody(env *Env, body []byte) []byte {
	if !env.IsTerminal || !json.Valid(body) {
		return body
	}
	return catalog.PrettyColor(catalog.Pretty(body))
}
