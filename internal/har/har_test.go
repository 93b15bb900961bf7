package har

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestQueryKeepsOrderAndUndecodable(t *testing.T) {
	tests := []struct {
		raw  string
		want []NameValue
	}{
		{"", []NameValue{}},
		{"b=2&a=1", []NameValue{{"b", "2"}, {"a", "1"}}},
		{"redirect_uri=http%3A%2F%2Flocalhost%2Fcb&x", []NameValue{{"redirect_uri", "http://localhost/cb"}, {"x", ""}}},
		{"a=%zz;b=c+d", []NameValue{{"a", "%zz"}, {"b", "c d"}}},
		{"&&=v&k=", []NameValue{{"k", ""}}},
	}
	for _, tt := range tests {
		if got := Query(tt.raw); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Query(%q) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

func TestHeadersSortedOneValueEach(t *testing.T) {
	h := http.Header{"X-B": {"2", "3"}, "Accept": {"*/*"}}
	want := []NameValue{{"Accept", "*/*"}, {"X-B", "2"}, {"X-B", "3"}}
	if got := Headers(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("Headers = %v, want %v", got, want)
	}
	if got := Headers(nil); got == nil || len(got) != 0 {
		t.Fatalf("Headers(nil) = %#v, want an empty list (written as [])", got)
	}
}

// The keys HAR 1.2 requires are present even when empty: strict importers
// (browser devtools, HTTP Toolkit) refuse a document without them.
func TestNewWritesRequiredKeys(t *testing.T) {
	f := New("Hookscope", "", "")
	f.Log.Entries = append(f.Log.Entries, Entry{Request: Request{Cookies: []NameValue{}, Headers: []NameValue{}, QueryString: []NameValue{}},
		Response: Response{Cookies: []NameValue{}, Headers: []NameValue{}}})
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"version":"1.2"`, `"version":"dev"`, `"pages":[]`, `"cache":{}`, `"timings":{`, `"cookies":[]`, `"queryString":[]`, `"redirectURL":""`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("%s missing from %s", k, b)
		}
	}
	if strings.Contains(string(b), "_hookscope") || strings.Contains(string(b), `"comment"`) {
		t.Errorf("empty optional fields written: %s", b)
	}
}
