package inspector

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
)

// CanonicalHash returns the SHA-256 (hex) of the canonical form of a JSON
// value: object keys sorted, insignificant white space removed, numbers kept
// as written. Two copies of one event with equal content hash equally
// however the sender formatted them.
//
// The canonical form is defined by encoding/json's decoding: numbers kept
// as written (json.Number), strings decoded (invalid UTF-8 and lone
// surrogates become U+FFFD) and written as strconv.Quote writes them, object
// keys sorted bytewise, and for a repeated key the last value. Stored
// hashes are compared with new ones to find divergent copies, so these
// bytes must never change (FuzzCanonicalHash holds it to the single-pass
// writer earlier versions stored hashes with). Input that is not JSON is
// hashed as it is, so equal garbage still compares equal.
func CanonicalHash(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := canonical(&buf, json.NewDecoder(bytes.NewReader(raw))); err != nil {
		// Not JSON: hash the bytes so equal garbage still compares equal.
		sum := sha256.Sum256(raw)
		return hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

func canonical(w *bytes.Buffer, dec *json.Decoder) error {
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	writeCanonical(w, v)
	return nil
}

func writeCanonical(w *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.Quote(k))
			w.WriteByte(':')
			writeCanonical(w, x[k])
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			writeCanonical(w, e)
		}
		w.WriteByte(']')
	case string:
		w.WriteString(strconv.Quote(x))
	case json.Number:
		w.WriteString(x.String())
	case bool:
		w.WriteString(strconv.FormatBool(x))
	case nil:
		w.WriteString("null")
	}
}
