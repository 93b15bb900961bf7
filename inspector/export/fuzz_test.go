package export

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzRead feeds arbitrary files to import: it must never panic, and what
// it accepts must be deliveries it could store.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"log":{"version":"1.2","entries":[{"request":{"method":"POST","url":"http://h/p?q=1","headers":[{"name":"A","value":"b"}],"postData":{"text":"{}"}},"response":{"status":200}}]}}`,
		`{"log":{"entries":[{"request":{"method":"POST","url":"%zz","postData":{"encoding":"base64","text":"!!"}}}]}}`,
		`{"log":{}}`,
		"{\"method\":\"POST\",\"path\":\"/\",\"headers\":[],\"body\":\"e30=\"}\n",
		"{\"method\":\"POST\",\"body\":\"not base64\"}\n",
		"\xef\xbb\xbf{\"log\":{\"entries\":[]}}",
		"",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, ds, _, err := Read(p)
		if err != nil {
			return
		}
		for _, d := range ds {
			if d.Method == "" || d.Source != "import" || d.BodyLength < int64(len(d.Body)) || d.Headers == nil {
				t.Fatalf("accepted a delivery that is not whole: %+v", d)
			}
			if !utf8.ValidString(d.Method) {
				t.Fatalf("method %q", d.Method)
			}
		}
	})
}
