package inspector

import (
	"strings"
	"testing"
)

// Vectors computed independently with openssl:
//
//	printf '%s' '{"hook":{"uuid":"abc"},"events":[]}' | openssl dgst -sha256 -hmac 'whsec_test'
//	printf '%s' 'hello' | openssl dgst -sha256 -hmac 'key'
//	printf '' | openssl dgst -sha256 -hmac 'k2'
var signVectors = []struct{ secret, body, want string }{
	{"whsec_test", `{"hook":{"uuid":"abc"},"events":[]}`, "8df2a3a4c2b08ff51110c1d8ceed0cbd248d81b695fa6a7802fffc3fac4ad280"},
	{"key", "hello", "9307b3b915efb5171ff14d8cb55fbcc798c6c0ef1456d66ded1a6aa723a58b7b"},
	{"k2", "", "158d080636db28c36adb2abc69943ab091eb5a24e1426a6120daf9709d8ad17d"},
}

func TestSignVectors(t *testing.T) {
	for _, v := range signVectors {
		if got := Sign([]byte(v.secret), []byte(v.body)); got != v.want {
			t.Errorf("Sign(%q, %q) = %s, want %s", v.secret, v.body, got, v.want)
		}
	}
}

func TestVerify(t *testing.T) {
	body := []byte(signVectors[0].body)
	good := signVectors[0].want
	s1, s2 := []byte("old-secret"), []byte("whsec_test")
	tests := []struct {
		name      string
		header    string
		present   bool
		secrets   [][]byte
		status    SignatureStatus
		index     int
		upper     bool
		reasonHas string
	}{
		{"valid", good, true, [][]byte{s2}, SignatureValid, 0, false, "matches secret #1"},
		{"valid second secret (rotation)", good, true, [][]byte{s1, s2}, SignatureValid, 1, false, "secret #2"},
		{"upper-case hex accepted but noted", strings.ToUpper(good), true, [][]byte{s2}, SignatureValid, 0, true, "upper-case"},
		{"surrounding space trimmed", " " + good + " ", true, [][]byte{s2}, SignatureValid, 0, false, ""},
		{"sha256= prefix noted", "sha256=" + good, true, [][]byte{s2}, SignatureValid, 0, false, "prefix"},
		{"wrong secret", good, true, [][]byte{s1}, SignatureInvalid, -1, false, "does not match"},
		{"none of several", good, true, [][]byte{s1, []byte("x")}, SignatureInvalid, -1, false, "none of the 2"},
		{"not hex", "zz" + good[2:], true, [][]byte{s2}, SignatureInvalid, -1, false, "not hex"},
		{"short", good[:10], true, [][]byte{s2}, SignatureInvalid, -1, false, "5 bytes"},
		{"empty header", "", true, [][]byte{s2}, SignatureInvalid, -1, false, "empty"},
		{"missing", "", false, [][]byte{s2}, SignatureMissing, -1, false, "no X-Service-Signature"},
		{"missing without secrets", "", false, nil, SignatureMissing, -1, false, ""},
		{"unverified", good, true, nil, SignatureUnverified, -1, false, "no webhook secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Verify(tt.header, tt.present, body, tt.secrets)
			if r.Status != tt.status || r.SecretIndex != tt.index || r.UpperCase != tt.upper {
				t.Fatalf("got status=%s index=%d upper=%v (%s), want %s %d %v", r.Status, r.SecretIndex, r.UpperCase, r.Reason, tt.status, tt.index, tt.upper)
			}
			if !strings.Contains(r.Reason, tt.reasonHas) {
				t.Errorf("reason %q does not mention %q", r.Reason, tt.reasonHas)
			}
			if len(r.Expected) != len(tt.secrets) {
				t.Errorf("expected digests: %d, want one per secret (%d)", len(r.Expected), len(tt.secrets))
			}
			for _, s := range tt.secrets {
				if strings.Contains(r.Reason, string(s)) {
					t.Errorf("reason leaks a secret: %q", r.Reason)
				}
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("8df2a3a4c2b08ff51110c1d8ceed0cbd248d81b695fa6a7802fffc3fac4ad280", []byte(`{}`))
	f.Add("sha256=00", []byte("x"))
	f.Add("", []byte(nil))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		secret := []byte("fuzz-secret")
		r := Verify(header, true, body, [][]byte{secret})
		if r.Status == SignatureValid && r.SecretIndex != 0 {
			t.Fatalf("valid without a matching index")
		}
		if r.Status == SignatureValid {
			want := Sign(secret, body)
			got := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(strings.ToLower(header)), "sha256="))
			if got != want {
				t.Fatalf("accepted %q for body whose signature is %s", header, want)
			}
		}
	})
}

// TestSignatureNote: a valid signature in another form than the service's
// carries a note saying which; one in the service's form, or an invalid
// one, carries none.
func TestSignatureNote(t *testing.T) {
	body := []byte(signVectors[0].body)
	good := signVectors[0].want
	secrets := [][]byte{[]byte(signVectors[0].secret)}
	for _, tc := range []struct {
		header string
		want   []string // "" parts: no note
	}{
		{good, nil},
		{"sha256=" + good, []string{`"sha256=" prefix`}},
		{"SHA256=" + strings.ToUpper(good), []string{`"SHA256=" prefix`, "upper-case hex"}},
		{strings.ToUpper(good), []string{"upper-case hex"}},
		{"sha256=" + strings.Repeat("0", 64), nil}, // invalid: the reason says it, not a note
	} {
		r := Verify(tc.header, true, body, secrets)
		note := r.Note()
		if len(tc.want) == 0 && note != "" {
			t.Errorf("%q (%s): note %q, want none", tc.header, r.Status, note)
		}
		for _, w := range tc.want {
			if r.Status != SignatureValid || !strings.Contains(note, w) {
				t.Errorf("%q: %s, note %q, want it to say %q", tc.header, r.Status, note, w)
			}
		}
	}
}
